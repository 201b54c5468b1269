"""The project index: what the other modules of a project say about their classes.

A layer class imported from another module of the same project (`from .blocks import Down`,
`from pkg.blocks import Down`, re-exported through a package's `__init__`) is resolved by reading
that module once: its summary (which classes are @skippable with which names, which are Sequential
subclasses) is cached by path, size and mtime, so a process reads each module at most once while
it is unchanged. The CLI and the flake8 plugin share the process-wide index.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from skiplint import imports, skippables, sources
from skiplint.facts import SkippableClass
from skiplint.imports import OTHER, Scope, import_bindings, mentions_api

#: Depth of re-exports followed (`__init__` importing from a submodule importing from another).
MAX_REEXPORT = 6

_FROM_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.+[\w.]*|[\w.]+)[ \t]+import[ \t]+\(?([^\n#]*)", re.M)
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.M)


@dataclass(frozen=True)
class ClassSummary:
    """One class of a project module, as a layer: its kind and, if skippable, its declarations."""

    name: str
    kind: str  # "skippable" | "sequential" | "plain" | "unknown"
    stash: Optional[frozenset[str]] = None
    pop: Optional[frozenset[str]] = None


@dataclass(frozen=True)
class ModuleSummary:
    path: str
    classes: dict[str, ClassSummary] = field(default_factory=dict)
    #: Local name -> qualified name, for the names a module imports (re-exports).
    imports: dict[str, str] = field(default_factory=dict)

    @property
    def has_skippables(self) -> bool:
        return any(c.kind == "skippable" for c in self.classes.values())


def summarize(path: str, data: bytes) -> ModuleSummary:
    """The class summary of one module's bytes; an unreadable or unparsable module says nothing."""
    try:
        text = sources.decode(data)
        module = cst.parse_module(text)
    except (sources.SourceError, cst.ParserSyntaxError, RecursionError, ValueError, TypeError):
        return ModuleSummary(path)
    index = skippables.ModuleIndex(module)
    declared: dict[int, SkippableClass] = {}
    if mentions_api(data):
        try:
            facts = skippables.extract(module, path, text, index)
        except RecursionError:
            return ModuleSummary(path)
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
                                         cls.pop.name_set if cls.pop.known else None)
        else:
            classes[name] = ClassSummary(name, _base_kind(info.node, index.scope, classes))
    imports = {}
    for local, bindings in index.scope.bindings.items():
        quals = [b for b in bindings if b is not OTHER]
        if len(bindings) == 1 and len(quals) == 1 and isinstance(quals[0], str) and local not in classes:
            imports[local] = quals[0]
    return ModuleSummary(path, classes, imports)


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
    """Module summaries by path, cached by (size, mtime); modules located from an importer's path."""

    def __init__(self) -> None:
        self._summaries: dict[str, tuple[tuple[int, int], ModuleSummary]] = {}
        self._files: dict[tuple[str, str], Optional[str]] = {}
        #: Per file: whether it (or what it imports) defines skippable classes; per-process memo.
        self._exports: dict[str, tuple[tuple[int, int], bool]] = {}
        self.reads = 0

    # -- summaries ---------------------------------------------------------------------------
    def summary(self, path: str) -> Optional[ModuleSummary]:
        try:
            stat = os.stat(path)
        except OSError:
            return None
        key = (stat.st_size, stat.st_mtime_ns)
        cached = self._summaries.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            data = sources.read_bytes(path)
        except sources.SourceError:
            return None
        self.reads += 1
        summary = summarize(path, data)
        self._summaries[path] = (key, summary)
        return summary

    # -- locating modules --------------------------------------------------------------------
    def module_file(self, importer: str, module: str) -> Optional[str]:
        """The file of `module` (absolute dotted, or relative with leading dots) as `importer` sees it."""
        directory = os.path.dirname(os.path.abspath(importer))
        cache_key = (directory, module)
        if cache_key in self._files:
            return self._files[cache_key]
        found = self._locate(directory, module)
        self._files[cache_key] = found
        return found

    def _locate(self, directory: str, module: str) -> Optional[str]:
        if module.startswith("."):
            dots = len(module) - len(module.lstrip("."))
            base = directory
            for _ in range(dots - 1):
                base = os.path.dirname(base)
            rest = module[dots:]
            return _file_in(base, rest.split(".") if rest else [])
        parts = module.split(".")
        for root in _roots(directory):
            found = _file_in(root, parts)
            if found is not None:
                return found
        return None

    # -- classes -----------------------------------------------------------------------------
    def resolve_class(self, importer: str, qualified: str, depth: int = 0) -> Optional[ClassSummary]:
        """The project class that a qualified name seen from `importer` refers to, if any."""
        if depth > MAX_REEXPORT:
            return None
        stripped = qualified.lstrip(".")
        dots = len(qualified) - len(stripped)
        head, _, name = stripped.rpartition(".")
        module = "." * dots + head
        if not module or not name:
            return None
        path = self.module_file(importer, module)
        if path is None:
            return None
        summary = self.summary(path)
        if summary is None:
            return None
        cls = summary.classes.get(name)
        if cls is not None:
            return cls
        target = summary.imports.get(name)
        if target is not None:
            return self.resolve_class(path, target, depth + 1)
        return None

    def module_has_skippables(self, importer: str, module: str, names: tuple[str, ...] = ()) -> bool:
        """Whether a project module, or a submodule named in `names`, defines skippable classes
        or imports, directly or not, a module that does."""
        return self._reaches_skippables(self._module_files(importer, module, names))

    def _module_files(self, importer: str, module: str, names: tuple[str, ...]) -> list[str]:
        sep = "" if module.endswith(".") else "."
        found = [self.module_file(importer, module)]
        found += [self.module_file(importer, module + sep + name) for name in names]
        return [path for path in found if path is not None]

    def _reaches_skippables(self, start: list[str]) -> bool:
        """An iterative search over import lines, each file once: only a file whose bytes name
        an API module is parsed; any other is read for its import lines alone. It follows every
        import (an over-approximation that costs a parse at most: the composition analysis
        resolves names exactly). A search that finds nothing proves it for every file it saw."""
        stack = list(start)
        seen: dict[str, tuple[int, int]] = {}
        while stack:
            path = stack.pop()
            if path in seen:
                continue
            try:
                stat = os.stat(path)
            except OSError:
                continue
            key = (stat.st_size, stat.st_mtime_ns)
            seen[path] = key
            memo = self._exports.get(path)
            if memo is not None and memo[0] == key:
                if memo[1]:
                    return True
                continue  # proven to reach none
            try:
                data = sources.read_bytes(path)
            except sources.SourceError:
                continue
            self.reads += 1
            # Only a module that says "skippable" (or names an alias) can define a skippable class.
            if mentions_api(data) and (b"skippable" in data or imports.active_aliases()):
                summary = self.summary(path)
                if summary is not None and summary.has_skippables:
                    self._exports[path] = (key, True)
                    return True
            for module, names in textual_imports(data):
                stack.extend(self._module_files(path, module, names))
        for path, key in seen.items():
            self._exports[path] = (key, False)
        return False

    def imports_project_skippables(self, path: str, data: bytes) -> bool:
        """The prefilter's second half: does this file import skippable classes from its project?

        Textual (no parse): the `from X import ...` and `import X` lines name the modules, which
        are located next to the file; only those modules are read (once, then cached).
        """
        return any(self.module_has_skippables(path, module, names)
                   for module, names in textual_imports(data))


def textual_imports(data: bytes) -> list[tuple[str, tuple[str, ...]]]:
    """(module, imported names) for each import line of a module's bytes, without parsing it."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for match in _FROM_IMPORT.finditer(data):
        module = match.group(1).decode("ascii", "replace")
        names = tuple(n.strip().split(" ")[0] for n in match.group(2).decode("ascii", "replace")
                      .replace(")", "").split(",") if n.strip())
        found.append((module, names))
    for match in _IMPORT.finditer(data):
        found.extend((module.strip(), ()) for module in match.group(1).decode("ascii", "replace").split(","))
    return found


def _file_in(base: str, parts: list[str]) -> Optional[str]:
    target = os.path.join(base, *parts) if parts else base
    candidate = target + ".py"
    if parts and os.path.isfile(candidate):
        return candidate
    init = os.path.join(target, "__init__.py")
    if os.path.isfile(init):
        return init
    return None


def _roots(directory: str) -> list[str]:
    """Where absolute imports of a file's project start: its own directory and its package root."""
    roots = [directory]
    top = directory
    while os.path.isfile(os.path.join(top, "__init__.py")):
        parent = os.path.dirname(top)
        if parent == top:
            break
        top = parent
    if top != directory:
        roots.append(top)
    return roots


#: The process-wide index: the CLI's run and each flake8 worker process share one.
INDEX = ProjectIndex()


def class_resolver(index: ProjectIndex, path: str) -> "Resolver":
    return Resolver(index, path)


class Resolver:
    """Qualified names seen from one file -> ClassSummary, for the composition builder."""

    def __init__(self, index: ProjectIndex, path: str) -> None:
        self.index = index
        self.path = path

    def __call__(self, qualified: str) -> Optional[ClassSummary]:
        return self.index.resolve_class(self.path, qualified)
