"""The runtime truth of tests/test_imported_dataflow.py: a model whose forwards call functions of
another module of its package, profiled by balance_by_time on torchgpipe and fairscale (CPU)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchgpipe")
pytest.importorskip("fairscale")

from tests import profiling_shapes  # noqa: E402

ROOTS = {"torchgpipe": "torchgpipe", "fairscale": "fairscale.nn.pipe"}


@pytest.mark.parametrize("lib", sorted(ROOTS))
@pytest.mark.parametrize("stash, pop", sorted(profiling_shapes.IMPORTED))
def test_profiling_follows_functions_imported_from_the_project(tmp_path: Path, lib: str, stash: str,
                                                                pop: str) -> None:
    torch.manual_seed(0)
    profiling_shapes.imported_package(str(tmp_path), stash, pop, ROOTS[lib])
    sys.path.insert(0, str(tmp_path))
    try:
        if profiling_shapes.IMPORTED[stash, pop]:
            with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
                importlib.import_module("proj.model")
        else:
            model = importlib.import_module("proj.model")
            assert sum(model.balance) == len(model.model)
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("proj", "proj.ops", "proj.model"):
            sys.modules.pop(name, None)
