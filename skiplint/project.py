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

from skiplint import imports, parsing, skippables, sources
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
        module = parsing.parse_module(text)
    except (sources.SourceError, parsing.ParseFailure):
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
        #: Per file: whether it defines or re-exports skippable classes; per (file, name): whether
        #: that name is one. Per-process memos, valid while the file's size and mtime hold.
        self._exports: dict[str, tuple[tuple[int, int], bool]] = {}
        self._names: dict[tuple[str, str], tuple[tuple[int, int], bool]] = {}
        self._scans: dict[str, tuple[tuple[int, int], bool, list[tuple[str, tuple[str, ...]]]]] = {}
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
        """Whether `from module import names` (or `import module`) can bring a skippable class
        into the importer: a name that is, or is re-exported as, a skippable class, a submodule
        named in `names` that defines one, or, for `import module`, the module itself."""
        path = self.module_file(importer, module)
        if not names:
            return path is not None and self._defines_skippables(path)
        sep = "" if module.endswith(".") else "."
        for name in names:
            if path is not None and (self._defines_skippables(path) if name == "*"
                                     else self._name_is_skippable(path, name, 0)):
                return True
            sub = self.module_file(importer, module + sep + name) if name != "*" else None
            if sub is not None and self._defines_skippables(sub):
                return True
        return False

    def _scan(self, path: str) -> Optional[tuple[tuple[int, int], bool, list[tuple[str, tuple[str, ...]]]]]:
        """(stat key, may it define a skippable class, its import lines) for one module, read
        once per process while unchanged. Only a module that names the API and says "skippable"
        (or, with api-aliases, names an alias) can define a skippable class."""
        try:
            stat = os.stat(path)
        except OSError:
            return None
        key = (stat.st_size, stat.st_mtime_ns)
        cached = self._scans.get(path)
        if cached is not None and cached[0] == key:
            return cached
        try:
            data = sources.read_bytes(path)
        except sources.SourceError:
            return None
        self.reads += 1
        may_define = mentions_api(data) and (b"skippable" in data or imports.active_aliases())
        scanned = (key, may_define, textual_imports(data))
        self._scans[path] = scanned
        return scanned

    def _name_is_skippable(self, path: str, name: str, depth: int) -> bool:
        """Whether `name` in the module at `path` is a skippable class, following the chain of
        `from X import name` re-exports (textually, without parsing, through modules that cannot
        define one themselves). Memoized per (path, name) while the file is unchanged."""
        scanned = self._scan(path)
        if scanned is None or depth > MAX_REEXPORT:
            return False
        key, may_define, lines = scanned
        memo = self._names.get((path, name))
        if memo is not None and memo[0] == key:
            return memo[1]
        self._names[(path, name)] = (key, False)  # a re-export cycle reads as "no"
        result = False
        if may_define:
            summary = self.summary(path)
            found = summary.classes.get(name) if summary is not None else None
            if found is None and summary is not None and name in summary.imports:
                found = self.resolve_class(path, summary.imports[name], depth + 1)
            result = found is not None and found.kind == "skippable"
        else:
            for module, names in lines:
                if name in names or "*" in names:
                    target = self.module_file(path, module)
                    if target is not None and self._name_is_skippable(target, name, depth + 1):
                        result = True
                        break
        self._names[(path, name)] = (key, result)
        return result

    def _defines_skippables(self, path: str) -> bool:
        """Whether a module defines a skippable class or re-exports one by name (one level of
        `from X import a, b`: a package's `__init__`)."""
        scanned = self._scan(path)
        if scanned is None:
            return False
        key, may_define, lines = scanned
        memo = self._exports.get(path)
        if memo is not None and memo[0] == key:
            return memo[1]
        self._exports[path] = (key, False)
        summary = self.summary(path) if may_define else None
        result = summary is not None and summary.has_skippables
        if not result:
            for module, names in lines:
                target = self.module_file(path, module) if names else None
                if target is not None and any(self._name_is_skippable(target, name, 1)
                                              for name in names if name != "*"):
                    result = True
                    break
        self._exports[path] = (key, result)
        return result

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
