"""The project index: what the other modules of a project say about their classes.

A layer class imported from another module of the same project (`from .blocks import Down`,
`from pkg.blocks import Down`, re-exported through a package's `__init__` under any alias) is
resolved by parsing that module once: its summary (which classes are @skippable with which names,
which are Sequential subclasses, what its imports bind) is read with the same import table as the
analysis, and cached by path, size, mtime and the api-aliases (an alias decides what is
skippable). Locating modules and the cheap walk that decides whether a file needs the analysis at
all are the prefilter's (skiplint.projectscan); the CLI and the flake8 plugin share one index.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Callable, Optional, TypeVar

import libcst as cst

from skiplint import parsing, projectscan, skippables, sources
from skiplint.facts import ModuleFacts, SkippableClass
from skiplint.gradflow import ImportedFunction
from skiplint.positions import with_room
from skiplint.imports import OTHER, Scope, dotted_name
from skiplint.limits import MAX_REEXPORT
from skiplint.apiimports import NO_ALIASES, AliasKey, Aliases, mentions_api

T = TypeVar("T")


@dataclass(frozen=True)
class ClassSummary:
    """One class of a project module, as a layer: its kind and, if skippable, its declarations."""

    name: str
    kind: str  # "skippable" | "sequential" | "plain" | "unknown"
    stash: Optional[frozenset[str]] = None
    pop: Optional[frozenset[str]] = None
    #: Stashed names of which some stash shares autograd history with the layer's output.
    output_stashes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ModuleSummary:
    path: str
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    #: Local name -> qualified name, for the names a module imports (re-exports).
    imports: dict[str, str] = field(default_factory=dict)
    #: Modules it imports every public name of (`from .parts import *`), as written.
    stars: tuple[str, ...] = ()
    #: Its module-level functions (each name bound once).
    functions: frozenset[str] = frozenset()


def summarize(path: str, data: bytes, aliases: Aliases = NO_ALIASES,
              parts: Optional[parsing.StatementParts] = None) -> ModuleSummary:
    """The class summary of one module's bytes, with these api-aliases (`parts`: the statements
    parsed before); an unreadable or unparsable module says nothing."""
    parts = parts if parts is not None else parsing.StatementParts()
    try:
        text = sources.decode(data)
        module = parsing.parse_module(text, parts)
    except (sources.SourceError, parsing.ParseFailure):
        return ModuleSummary(path)
    try:
        return with_room(parts.needs_room(text), lambda: _summarize(path, data, text, module, aliases))
    except RecursionError:  # with all the room it is given
        return ModuleSummary(path)


def _summarize(path: str, data: bytes, text: str, module: cst.Module, aliases: Aliases) -> ModuleSummary:
    index = skippables.ModuleIndex(module, aliases)
    facts = skippables.extract(module, path, text, index) if mentions_api(data, aliases) else None
    return _summary(path, index, facts)


def _summary(path: str, index: skippables.ModuleIndex, facts: Optional[ModuleFacts]) -> ModuleSummary:
    """The summary of a parsed module, from its skippable facts (None: it names no API module)."""
    declared: dict[int, SkippableClass] = {}
    if facts is not None:
        declared = {id(c.site.node): c for c in facts.skippables if c.site is not None}
    classes: dict[str, ClassSummary] = {}
    for info in index.classes:
        if info.outer is not index.scope:
            continue
        name = info.node.name.value
        cls = declared.get(id(info.node))
        if cls is not None:
            classes[name] = ClassSummary(name, "skippable",
                                         cls.stash.name_set if cls.stash.known else None,
                                         cls.pop.name_set if cls.pop.known else None,
                                         cls.output_stashes)
        else:
            classes[name] = ClassSummary(name, _base_kind(info.node, index.scope, classes))
    imports = {}
    for local, bindings in index.scope.bindings.items():
        quals = [b for b in bindings if b is not OTHER]
        if len(bindings) == 1 and len(quals) == 1 and isinstance(quals[0], str) and local not in classes:
            imports[local] = quals[0]
    stars = tuple(_star_module(stmt) for stmt, _ in index.imports
                  if isinstance(stmt, cst.ImportFrom) and isinstance(stmt.names, cst.ImportStar))
    return ModuleSummary(path, classes, imports, tuple(star for star in stars if star),
                         frozenset(index.top_level()[0]))


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def _star_module(stmt: cst.ImportFrom) -> str:
    module = dotted_name(stmt.module) if stmt.module is not None else None
    return "." * len(stmt.relative) + (module or "")


def _base_kind(node: cst.ClassDef, scope: Scope, known: dict[str, ClassSummary]) -> str:
    """A class of a project module as a layer: Sequential subclass, plain module, or unknown.

    Plain classes of other modules are taken as plain layers only when their body builds nothing
    that could hold a skippable (their own children are invisible to verify_skippables anyway).
    """
    kind = "plain"
    for base in node.bases:
        symbol = scope.api(base.value)
        if symbol == "Sequential":
            return "sequential"
        if isinstance(base.value, cst.Name) and base.value.value in known:
            base_kind = known[base.value.value].kind
            if base_kind == "sequential":
                return "sequential"
            if base_kind != "plain":
                kind = "unknown"
            continue
        qualified = scope.qualified(base.value)
        if qualified is None or not qualified.startswith("torch."):
            kind = "unknown"
    return kind


class ProjectIndex:
    """Module summaries by path and api-aliases, valid while the module's size and mtime hold.
    `scan`: the prefilter's walk and module locations; `parts`: the statements parsed before (a
    session's, see skiplint.session)."""

    def __init__(self, scan: Optional[projectscan.ProjectScan] = None,
                 parts: Optional[parsing.StatementParts] = None) -> None:
        self.scan = scan if scan is not None else projectscan.ProjectScan()
        self.parts = parts if parts is not None else parsing.StatementParts()
        self._summaries: dict[tuple[str, AliasKey], tuple[tuple[int, int], ModuleSummary]] = {}
        #: Summaries of modules the run has analysed, by path and api-aliases: the digest of the
        #: analysed text, whether it names an API module, and the summary (see learn).
        self._learned: dict[tuple[str, AliasKey], tuple[bytes, bool, ModuleSummary]] = {}
        self._reads = 0
        #: Module indexes of the project modules whose functions a forward calls, by path and
        #: api-aliases, with the stat they were read at.
        self._indexes: dict[tuple[str, AliasKey],
                            tuple[Optional[projectscan.StatKey], Optional[skippables.ModuleIndex]]] = {}

    @property
    def reads(self) -> int:
        """How many module files this index (summaries and walk) has read."""
        return self._reads + self.scan.reads

    # -- summaries ---------------------------------------------------------------------------
    def summary(self, path: str, aliases: Aliases = NO_ALIASES) -> Optional[ModuleSummary]:
        key = self.scan.stat(path)  # an editor's open buffer (the scan's overlay) before the file
        if key is None:
            return None
        cache_key = (path, aliases.key)
        cached = self._summaries.get(cache_key)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            data = self.scan.read(path)
        except sources.SourceError:
            return None
        self._reads += 1
        summary = self._known(cache_key, data, aliases)
        if summary is None:
            summary = summarize(path, data, aliases, self.parts)
        self._summaries[cache_key] = (key, summary)
        return summary

    def learn(self, path: str, text: str, index: skippables.ModuleIndex, facts: ModuleFacts,
              aliases: Aliases = NO_ALIASES) -> None:
        """A module this run has parsed and extracted with these api-aliases (its ModuleIndex and
        skippable facts, as summarize makes them): if a summary of the file at `path` is asked for
        later and the file still holds this text, it is made from these rather than by parsing it
        again."""
        named = mentions_api(text, aliases)
        path = os.path.abspath(path)  # as scan.module_file names the modules whose summaries are asked for
        self._learned[(path, aliases.key)] = (
            _digest(text), named, _summary(path, index, facts if named else None))

    def _known(self, cache_key: tuple[str, AliasKey], data: bytes, aliases: Aliases) -> Optional[ModuleSummary]:
        learned = self._learned.get(cache_key)
        if learned is None:
            return None
        digest, named, summary = learned
        try:
            text = sources.decode(data)
        except sources.SourceError:
            return None
        if _digest(text) != digest or mentions_api(data, aliases) != named:
            return None
        return summary

    # -- classes and functions ----------------------------------------------------------------
    def resolve_class(self, importer: str, qualified: str, aliases: Aliases = NO_ALIASES) -> Optional[ClassSummary]:
        """The project class that a qualified name seen from `importer` refers to, if any, with
        these api-aliases: the longest prefix that is a module of the project, then the rest of
        the name through that module's classes, imports (any alias, any depth of re-export) and
        star imports."""
        return self._resolve(importer, qualified, aliases, 0, lambda path, summary, name: summary.classes.get(name))

    def resolve_function(self, importer: str, qualified: str,
                         aliases: Aliases = NO_ALIASES) -> Optional[ImportedFunction]:
        """The module-level function of a project module that a qualified name seen from `importer`
        refers to (found as resolve_class finds a class), with that module's path, scopes and functions."""
        return self._resolve(importer, qualified, aliases, 0,
                             lambda path, summary, name: self._function(path, summary, name, aliases))

    def _function(self, path: str, summary: ModuleSummary, name: str, aliases: Aliases) -> Optional[ImportedFunction]:
        if name not in summary.functions:
            return None
        key = self.scan.stat(path)
        cached = self._indexes.get((path, aliases.key))
        if cached is None or cached[0] != key:
            try:
                index: Optional[skippables.ModuleIndex] = skippables.ModuleIndex(
                    parsing.parse_module(sources.decode(self.scan.read(path)), self.parts), aliases)
            except (sources.SourceError, parsing.ParseFailure, RecursionError):
                index = None
            cached = key, index
            self._indexes[(path, aliases.key)] = cached
        index = cached[1]
        function = index.top_level()[0].get(name) if index is not None else None
        return (path, function, index.scopes, index.top_level()[0]) if function is not None and index else None

    def _resolve(self, importer: str, qualified: str, aliases: Aliases, depth: int,
                 pick: Callable[[str, ModuleSummary, str], Optional[T]]) -> Optional[T]:
        if depth > MAX_REEXPORT:
            return None
        stripped = qualified.lstrip(".")
        dots = qualified[:len(qualified) - len(stripped)]
        parts = stripped.split(".") if stripped else []
        for cut in range(len(parts) - 1, -1, -1):
            module = dots + ".".join(parts[:cut])
            if not module:
                continue
            path = self.scan.module_file(importer, module)
            if path is not None:
                return self._attribute(path, parts[cut:], aliases, depth, pick)
        return None

    def _attribute(self, path: str, rest: list[str], aliases: Aliases, depth: int,
                   pick: Callable[[str, ModuleSummary, str], Optional[T]]) -> Optional[T]:
        """What `rest` (a dotted attribute path) names in the module at `path`."""
        summary = self.summary(path, aliases)
        if summary is None or not rest:
            return None
        name, tail = rest[0], rest[1:]
        if not tail:
            found = pick(path, summary, name)
            if found is not None:
                return found
        target = summary.imports.get(name)
        if target is not None:
            return self._resolve(path, ".".join([target, *tail]) if not target.endswith(".")
                                 else target + ".".join(tail), aliases, depth + 1, pick)
        for star in summary.stars:
            sep = "" if star.endswith(".") else "."
            found = self._resolve(path, star + sep + ".".join(rest), aliases, depth + 1, pick)
            if found is not None:
                return found
        return None
