"""Functions imported from other modules of the project are followed inside forward (SKP303's
dataflow), as the module's own functions are; `yield from` a module-level generator is followed
for the commands it runs. Each imported case runs for real in
tests/runtime/test_oracle_conditions.py with both libraries."""

from __future__ import annotations

from pathlib import Path

import pytest

from skiplint import engine
from skiplint.project import ProjectIndex
from skiplint.session import Session
from tests import profiling_shapes


@pytest.mark.parametrize("stash, pop", sorted(profiling_shapes.IMPORTED))
def test_skp303_follows_functions_imported_from_the_project(tmp_path: Path, stash: str, pop: str) -> None:
    model = profiling_shapes.imported_package(str(tmp_path), stash, pop)
    found = [d.code for d in engine.check_file(model, session=Session()).diagnostics]
    assert found == (["SKP303"] if profiling_shapes.IMPORTED[stash, pop] else [])


def test_an_imported_function_is_found_through_reexports_and_not_for_a_class(tmp_path: Path) -> None:
    model = profiling_shapes.imported_package(str(tmp_path), "return x", "return x")
    (tmp_path / "proj" / "again.py").write_text("from .ops import merge as joined\nclass Merge:\n    pass\n")
    index = ProjectIndex()
    found = index.resolve_function(model, ".again.joined")
    assert found is not None and found[0] == str(tmp_path / "proj" / "ops.py") and found[1].name.value == "merge"
    assert index.resolve_function(model, ".again.Merge") is None
    assert index.resolve_function(model, ".ops.missing") is None


def test_commands_of_a_generator_imported_from_the_project_are_reported_at_the_yield_from(tmp_path: Path) -> None:
    model = profiling_shapes.imported_package(
        str(tmp_path), "h = x @ self.w\nyield from ops.keep(h)\nreturn h", "return (yield from ops.take(x))")
    text = Path(model).read_text().replace('@skippable(stash=["s"])', '@skippable(stash=["t"])')
    Path(model).write_text(text)
    line = text.splitlines().index("        yield from ops.keep(h)") + 1
    found = [(d.line, d.code) for d in engine.check_file(model, session=Session()).diagnostics]
    assert (line, "SKP101") in found and ("SKP103" in {code for _, code in found})
