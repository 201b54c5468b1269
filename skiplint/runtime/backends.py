"""The pipe libraries a run can use, imported only when chosen, with the pip command when missing."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Iterable, Optional

from skiplint.runtime.errors import CannotRun
from skiplint.runtime.report import Route

BACKENDS = ("torchgpipe", "fairscale", "pipelining")
#: The skip API's module root per library that defines @skippable.
SKIP_ROOTS = {"torchgpipe": "torchgpipe.skip", "fairscale": "fairscale.nn.pipe.skip"}
_PIP = {
    "torchgpipe": "pip install torchgpipe==0.0.7",
    "fairscale": "pip install fairscale==0.4.13",
    "pipelining": "pip install 'torch>=2.4'",
}


def require(module: str, backend: str) -> ModuleType:
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
        require("torchgpipe", name)
        skippable = require("torchgpipe.skip.skippable", name)
        layout = require("torchgpipe.skip.layout", name)
        tracker = require("torchgpipe.skip.tracker", name)
        gpipe = require("torchgpipe.gpipe", name)
        pipe = gpipe.GPipe
    elif name == "fairscale":
        skippable = require("fairscale.nn.pipe.skip.skippable", name)
        layout = require("fairscale.nn.pipe.skip.layout", name)
        tracker = require("fairscale.nn.pipe.skip.tracker", name)
        gpipe = require("fairscale.nn.pipe.pipe", name)
        pipe = gpipe.Pipe
    else:
        raise ValueError(name)
    return SkipLibrary(name, skippable.Skippable, skippable.verify_skippables, layout.inspect_skip_layout,
                       tracker.SkipTracker, tracker.use_skip_tracker, gpipe.split_module,
                       gpipe.BalanceError, pipe)


def layout_routes(model: Any, lib: SkipLibrary, partitions: list[Any]) -> list[Route]:
    """The skip routes of `model` cut into `partitions` as the library's inspect_skip_layout pairs
    them, stash layer to pop layer, in the order of the layers and, within a layer, of the names
    (the library keeps a layer's names in a set, whose order changes from run to run)."""
    layout = lib.inspect_skip_layout(partitions)
    stashed_at: dict[Any, str] = {}
    routes = []
    for name, layer in model.named_children():
        if not isinstance(layer, lib.Skippable):
            continue
        for key in layer.stashable():
            stashed_at[key] = name
        for key in sorted(layer.poppable(), key=lambda key: key[1]):
            src, dst = layout.by_ns_name[key]
            routes.append(Route(key[1], stashed_at[key], name, src, dst))
    return routes


def library_of_module(module: str) -> Optional[str]:
    """The skip library a module belongs to (its skip API's package), or None."""
    return next((lib for lib, root in SKIP_ROOTS.items() if module == root or module.startswith(root + ".")), None)


def libraries_of(classes: Iterable[type]) -> set[str]:
    """Which skip libraries the given layer classes come from (by their bases' modules)."""
    found = {library_of_module(base.__module__) for cls in classes for base in cls.__mro__}
    return {lib for lib in found if lib is not None}
