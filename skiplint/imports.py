"""Which local names are the skip API: a cheap per-scope binding table, in the manner of pyflakes.

A name counts as `stash`, `pop`, `skippable`, ... only when every binding of it in the scope that
resolves it is an import from one of the API's module roots. Local definitions, parameters and
assignments shadow; `dict.pop` and friends never resolve to anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping, Union

import libcst as cst

from skiplint.apiimports import API as API, REMOVED_MODULES as REMOVED_MODULES, SKIP_ROOTS as SKIP_ROOTS


class _Other:
    """A binding that is not an import: a def, class, assignment, parameter, loop target."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OTHER"


OTHER = _Other()
Binding = Union[str, _Other]


#: For each node type met: 1 for an Attribute, 2 for a Name, 0 for anything else (isinstance
#: against libcst's classes goes through ABCMeta's hook; a lookup by type does not).
_CHAIN_KINDS: dict[type, int] = {}


def _chain_kind(node_type: type) -> int:
    kind = 1 if issubclass(node_type, cst.Attribute) else 2 if issubclass(node_type, cst.Name) else 0
    _CHAIN_KINDS[node_type] = kind
    return kind


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, None for anything else."""
    kinds = _CHAIN_KINDS
    kind = kinds.get(type(node))
    if kind is None:
        kind = _chain_kind(type(node))
    if kind == 2:
        return node.value  # type: ignore[attr-defined,no-any-return]
    parts: list[str] = []
    while kind == 1:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
        kind = kinds.get(type(node))
        if kind is None:
            kind = _chain_kind(type(node))
    if kind != 2:
        return None
    parts.append(node.value)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


@dataclass(eq=False)
class Scope:
    """One Python scope: the module, a function, a class body, or a lambda/comprehension.
    `table`: the import table it resolves the API with (the API's, and the configuration's
    api-aliases: `Aliases.table`); a scope inside another takes its parent's."""

    kind: str  # "module" | "function" | "class"
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    table: Mapping[str, str] = field(default_factory=lambda: API)

    def __post_init__(self) -> None:
        if self.parent is not None:
            self.table = self.parent.table

    def bind(self, name: str, value: Binding) -> None:
        self.bindings.setdefault(name, []).append(value)

    def owner(self, name: str) -> Scope | None:
        """The scope whose binding `name` refers to from this scope (Python's LEGB, class scopes
        skipped)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if (first or scope.kind != "class") and name in scope.bindings:
                return scope
            first = False
            scope = scope.parent
        return None

    def lookup(self, name: str) -> list[Binding] | None:
        """The bindings that `name` refers to from this scope."""
        owner = self.owner(name)
        return owner.bindings[name] if owner is not None else None

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
        table = self.table
        if len({table.get(q, q) for q in resolved}) != 1:
            return None
        return min(resolved)

    def api(self, node: cst.BaseExpression) -> str | None:
        """The API symbol (`stash`, `pop`, `skippable`, `GPipe`, ...) an expression refers to."""
        resolved = self._resolutions(node)
        if resolved is None:
            return None
        table = self.table
        symbols = {table.get(q) for q in resolved}
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
