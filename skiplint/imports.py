"""Which local names are the skip API: a cheap per-scope binding table, in the manner of pyflakes.

A name counts as `stash`, `pop`, `skippable`, ... only when every binding of it in the scope that
resolves it is an import from one of the API's module roots. Local definitions, parameters and
assignments shadow; `dict.pop` and friends never resolve to anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Union

import libcst as cst

#: The five module roots that carry the skip API (spec/skip-api.md).
SKIP_ROOTS = (
    "torchgpipe.skip",
    "fairscale.nn.pipe.skip",
    "torch.distributed.pipeline.sync.skip",
    "torch.distributed.pipeline.sync._skip",
    "torch.distributed._pipeline.sync.skip",
)

#: Modules removed from PyTorch in 2.4 (SKP401): an import of any of these or below them.
REMOVED_MODULES = ("torch.distributed.pipeline", "torch.distributed._pipeline")


def _api_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for root in SKIP_ROOTS:
        for sym in ("skippable", "stash", "pop", "Namespace", "verify_skippables",
                    "inspect_skip_layout", "Skippable"):
            table[f"{root}.{sym}"] = sym
        for sym in ("skippable", "stash", "pop", "verify_skippables", "Skippable"):
            table[f"{root}.skippable.{sym}"] = sym
        table[f"{root}.namespace.Namespace"] = "Namespace"
        table[f"{root}.layout.inspect_skip_layout"] = "inspect_skip_layout"
    # Early torchgpipe releases (and its own tests) spell these `torchgpipe.skip.analysis.*`.
    for sym in ("verify_skippables", "inspect_skip_layout"):
        table[f"torchgpipe.skip.analysis.{sym}"] = sym
    for qual in ("torchgpipe.GPipe", "torchgpipe.gpipe.GPipe"):
        table[qual] = "GPipe"
    for qual in ("fairscale.nn.Pipe", "fairscale.nn.pipe.Pipe", "fairscale.nn.pipe.pipe.Pipe"):
        table[qual] = "FairscalePipe"
    for root in ("torch.distributed.pipeline.sync", "torch.distributed._pipeline.sync"):
        table[f"{root}.Pipe"] = "TorchPipe"
        table[f"{root}.pipe.Pipe"] = "TorchPipe"
    for sym in ("balance_by_time", "balance_by_size"):
        table[f"torchgpipe.balance.{sym}"] = sym
    for qual in ("fairscale.nn.pipe.MultiProcessPipe", "fairscale.nn.MultiProcessPipe",
                 "fairscale.nn.pipe.multiprocess_pipe.MultiProcessPipe"):
        table[qual] = "MultiProcessPipe"
    for qual in ("fairscale.nn.pipe.AsyncPipe", "fairscale.nn.pipe.async_pipe.AsyncPipe"):
        table[qual] = "AsyncPipe"
    for qual in ("fairscale.nn.pipe.LazyModule", "fairscale.nn.pipe.types.LazyModule"):
        table[qual] = "LazyModule"
    for qual in ("torch.nn.Sequential", "torch.nn.modules.Sequential",
                 "torch.nn.modules.container.Sequential"):
        table[qual] = "Sequential"
    for qual in ("collections.OrderedDict", "typing.OrderedDict"):
        table[qual] = "OrderedDict"
    return table


API: dict[str, str] = _api_table()

#: What a file must name for it to be parsed at all: an API module (torchgpipe, fairscale, or
#: torch.distributed.pipeline / _pipeline in any spelling, never torch's newer `pipelining`) on an
#: import line. Nothing resolves to the API without such an import (a project's own re-exports
#: are api-aliases, with needles of their own), so a mention in a comment or docstring is no hit.
_PREFILTER_PATTERN = (r"(?m)^[ \t]*(?:from|import)[ \t][^\n]*?"
                      r"(?:torchgpipe|fairscale|distributed\._?pipeline(?!ing)|distributed import \(?\s*_?pipeline\b)")
_PREFILTER = re.compile(_PREFILTER_PATTERN.encode())
_PREFILTER_TEXT = re.compile(_PREFILTER_PATTERN)
#: Plain substrings for the same purpose, for tools that want needles (any hit of the pattern
#: contains one of these).
PREFILTER_NEEDLES = (b"torchgpipe", b"fairscale", b"pipeline")


class _Other:
    """A binding that is not an import: a def, class, assignment, parameter, loop target."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OTHER"


OTHER = _Other()
Binding = Union[str, _Other]


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, None for anything else."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


@dataclass(eq=False)
class Scope:
    """One Python scope: the module, a function, a class body, or a lambda/comprehension."""

    kind: str  # "module" | "function" | "class"
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)

    def bind(self, name: str, value: Binding) -> None:
        self.bindings.setdefault(name, []).append(value)

    def lookup(self, name: str) -> list[Binding] | None:
        """The bindings that `name` refers to from this scope (Python's LEGB, class scopes skipped)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if (first or scope.kind != "class") and name in scope.bindings:
                return scope.bindings[name]
            first = False
            scope = scope.parent
        return None

    def _resolutions(self, node: cst.BaseExpression) -> set[str] | None:
        """Every imported qualified name the expression may refer to; None if any binding is local."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        bindings = self.lookup(head)
        if not bindings or any(b is OTHER for b in bindings):
            return None
        return {f"{b}.{rest}" if rest else str(b) for b in bindings}

    def qualified(self, node: cst.BaseExpression) -> str | None:
        """The imported qualified name an expression refers to, when it refers to one unambiguously."""
        resolved = self._resolutions(node)
        if resolved is None:
            return None
        # try/except fallbacks import the same symbol from two roots: still one meaning.
        if len({API.get(q, q) for q in resolved}) != 1:
            return None
        return min(resolved)

    def api(self, node: cst.BaseExpression) -> str | None:
        """The API symbol (`stash`, `pop`, `skippable`, `GPipe`, ...) an expression refers to."""
        resolved = self._resolutions(node)
        if resolved is None:
            return None
        symbols = {API.get(q) for q in resolved}
        return symbols.pop() if len(symbols) == 1 else None


def import_bindings(stmt: cst.Import | cst.ImportFrom) -> Iterator[tuple[str, str]]:
    """(local name, qualified name) for each name an import statement binds."""
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias.asname.name.value, full
            else:
                head = full.split(".", 1)[0]
                yield head, head
        return
    module = dotted_name(stmt.module) if stmt.module is not None else None
    if stmt.relative:
        base = "." * len(stmt.relative) + (module or "")
    elif module is None:
        return
    else:
        base = module
    if isinstance(stmt.names, cst.ImportStar):
        return
    for alias in stmt.names:
        if not isinstance(alias.name, cst.Name):
            continue
        name = alias.name.value
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        sep = "" if base.endswith(".") else "."
        yield local, f"{base}{sep}{name}"


def imported_modules(stmt: cst.Import | cst.ImportFrom) -> Iterable[str]:
    """The absolute module paths an import statement loads (for SKP401)."""
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = dotted_name(alias.name)
            if full:
                yield full
        return
    if stmt.relative or stmt.module is None:
        return
    base = dotted_name(stmt.module)
    if base is None:
        return
    yield base
    if not isinstance(stmt.names, cst.ImportStar):
        for alias in stmt.names:
            if isinstance(alias.name, cst.Name):
                yield f"{base}.{alias.name.value}"


def removed_module(stmt: cst.Import | cst.ImportFrom) -> str | None:
    """The removed torch.distributed.pipeline module an import loads, if any."""
    for module in imported_modules(stmt):
        for removed in REMOVED_MODULES:
            if module == removed or module.startswith(removed + "."):
                # `from torch.distributed import pipeline` loads the package itself.
                return module
    return None


#: Needles added by a project's api-aliases for the current run (see `using_aliases`).
_ALIAS_NEEDLES: list[bytes] = []


def prefilter_needles() -> tuple[bytes, ...]:
    """Substrings one of which any file that mentions the API contains (aliases included)."""
    return PREFILTER_NEEDLES + tuple(_ALIAS_NEEDLES)


def mentions_api(data: bytes | str) -> bool:
    """The prefilter: does the file name an API module, or a module of an active api-alias?"""
    if isinstance(data, str):
        return _PREFILTER_TEXT.search(data) is not None or any(
            needle.decode() in data for needle in _ALIAS_NEEDLES)
    return _PREFILTER.search(data) is not None or any(needle in data for needle in _ALIAS_NEEDLES)


def active_aliases() -> bool:
    """Whether api-aliases are in force for this run (they widen what may define the API)."""
    return bool(_ALIAS_NEEDLES)


def alias_entries(alias: str, target: str) -> dict[str, str] | None:
    """Import-table rows that make `alias` mean `target` (a symbol or a whole module of the API).

    None when `target` is not part of the API.
    """
    if target in API:
        return {alias: API[target]}
    prefix = target + "."
    rows = {alias + qual[len(target):]: symbol for qual, symbol in API.items() if qual.startswith(prefix)}
    return rows or None


class using_aliases:
    """Extend the import table with a project's re-exports of the API for the duration of a block.

    `aliases` maps a project's qualified name to an API qualified name, e.g.
    `mypkg.layers.skippable` -> `torchgpipe.skip.skippable`. Names the table already knows win,
    so an alias never changes what a real API import means.
    """

    def __init__(self, aliases: Iterable[tuple[str, str]]) -> None:
        self._rows: dict[str, str] = {}
        self._needles: list[bytes] = []
        for alias, target in aliases:
            for qual, symbol in (alias_entries(alias, target) or {}).items():
                if qual not in API:
                    self._rows[qual] = symbol
            needle = alias.split(".", 1)[0].encode()
            if needle not in self._needles:
                self._needles.append(needle)

    def __enter__(self) -> "using_aliases":
        API.update(self._rows)
        _ALIAS_NEEDLES.extend(self._needles)
        return self

    def __exit__(self, *exc: object) -> None:
        for qual in self._rows:
            API.pop(qual, None)
        for needle in self._needles:
            _ALIAS_NEEDLES.remove(needle)
