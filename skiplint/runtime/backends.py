"""The pipe libraries a run can use, imported only when chosen, with the pip command when missing."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Iterable

from skiplint.runtime.errors import CannotRun

BACKENDS = ("torchgpipe", "fairscale", "pipelining")
#: The skip API's module root per library that defines @skippable.
SKIP_ROOTS = {"torchgpipe": "torchgpipe.skip", "fairscale": "fairscale.nn.pipe.skip"}
_PIP = {
    "torchgpipe": "pip install torchgpipe==0.0.7",
    "fairscale": "pip install fairscale==0.4.13",
    "pipelining": "pip install 'torch>=2.4'",
}


def _import(module: str, backend: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise CannotRun(f"backend '{backend}' is not installed ({error}); install it with: "
                        f"{_PIP[backend]}") from None


@dataclass(frozen=True)
class SkipLibrary:
    """One library's skip API and its pipe: what the steps call."""

    name: str
    Skippable: Any
    verify_skippables: Any
    inspect_skip_layout: Any
    SkipTracker: Any
    use_skip_tracker: Any
    split_module: Any
    BalanceError: type[Exception]
    Pipe: Any


def load(name: str) -> SkipLibrary:
    """torchgpipe or fairscale, imported now; CannotRun with the pip command when absent."""
    if name == "torchgpipe":
        _import("torchgpipe", name)
        skippable = _import("torchgpipe.skip.skippable", name)
        layout = _import("torchgpipe.skip.layout", name)
        tracker = _import("torchgpipe.skip.tracker", name)
        gpipe = _import("torchgpipe.gpipe", name)
        pipe = gpipe.GPipe
    elif name == "fairscale":
        skippable = _import("fairscale.nn.pipe.skip.skippable", name)
        layout = _import("fairscale.nn.pipe.skip.layout", name)
        tracker = _import("fairscale.nn.pipe.skip.tracker", name)
        gpipe = _import("fairscale.nn.pipe.pipe", name)
        pipe = gpipe.Pipe
    else:
        raise ValueError(name)
    return SkipLibrary(name, skippable.Skippable, skippable.verify_skippables, layout.inspect_skip_layout,
                       tracker.SkipTracker, tracker.use_skip_tracker, gpipe.split_module,
                       gpipe.BalanceError, pipe)


def libraries_of(classes: Iterable[type]) -> set[str]:
    """Which skip libraries the given layer classes come from (by their bases' modules)."""
    found = set()
    for cls in classes:
        for base in cls.__mro__:
            for lib, root in SKIP_ROOTS.items():
                if base.__module__ == root or base.__module__.startswith(root + "."):
                    found.add(lib)
    return found


def require_pipelining() -> None:
    _import("torch.distributed.pipelining", "pipelining")
