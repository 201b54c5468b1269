"""The prefilter's second test (see prefilter.wanted): does a file that says `Sequential` import,
from its own project, names that may be skippable classes?

The project's modules are walked by their import statements, each read by Python's tokenizer (so
parenthesized, multi-line, backslash-continued and aliased imports of any relative depth are read
as Python reads them), each module read once per session (skiplint.session) while its size and
mtime hold. Nothing here imports libcst, so the flake8 plugin's session costs next to nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Optional, Union

from skiplint import sources
from skiplint.apiimports import NO_ALIASES, AliasKey, Aliases, Imported, framework_name, mentions_api, read_imports
from skiplint.limits import MAX_REEXPORT, MODULE_HOPS


# -- locating a project's modules ----------------------------------------------------------------

def _file_in(base: str, parts: list[str]) -> Optional[str]:
    target = os.path.join(base, *parts)
    candidate = target + ".py"
    if parts and os.path.isfile(candidate):
        return candidate
    init = os.path.join(target, "__init__.py")
    if os.path.isfile(init):
        return init
    return None


def _roots(directory: str) -> list[str]:
    """Where absolute imports of a file's project start: its own directory and its package root."""
    top = directory
    while os.path.isfile(os.path.join(top, "__init__.py")):
        parent = os.path.dirname(top)
        if parent == top:
            break
        top = parent
    return [directory] if top == directory else [directory, top]


def locate(directory: str, module: str) -> Optional[str]:
    """The file of `module` (absolute dotted, or relative with leading dots) seen from `directory`."""
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


# -- the project walk ----------------------------------------------------------------------------

StatKey = tuple[int, int]


@dataclass(frozen=True)
class _Scan:
    """What the walk needs of one module: whether it may define a skippable class itself, and the
    names its imports bind."""

    stat: StatKey
    may_define: bool
    #: Imported's fields as plain tuples. The walk keeps every module's imports for the whole run
    #: (15,624 after a flake8 worker's run over the torch package), and the cycle collector stops
    #: tracking a plain tuple of strings but not an instance of a class (a named tuple included):
    #: kept as Imported, every full collection of the process went through all of them again,
    #: which cost flake8 itself 0.4 s to 0.8 s of collection time over the torch package.
    imports: tuple[tuple[str, str, Optional[str], bool], ...]

    def imported(self) -> Iterator[Imported]:
        return map(Imported._make, self.imports)

    def binding(self, local: str) -> list[Imported]:
        """The imports that bind the name `local`."""
        return [Imported._make(fields) for fields in self.imports if fields[0] == local]

    def starred(self) -> list[str]:
        """The modules of the module's `from M import *`."""
        return [fields[1] for fields in self.imports if fields[2] == "*"]


class ProjectScan:
    """Which imports of a file may bring it skippable classes from its own project.

    Answers are cached per module and per set of api-aliases given (an alias decides whether a
    module can define the API), and are valid while the module's size and mtime hold. The walk
    over-approximates: a module that names the API and says "skippable" is taken to define every
    name it does not import; the analysis that follows is exact.
    """

    def __init__(self) -> None:
        #: Sources that stand for files on disk, by absolute path: (a key that no real file's
        #: (size, mtime) can equal, the source's bytes). An editor's open buffers (skiplint server
        #: sets it); empty for every other run. Module locations still come from the disk.
        self.overlay: dict[str, tuple[StatKey, bytes]] = {}
        self._files: dict[tuple[str, str], Optional[str]] = {}
        self._scans: dict[tuple[str, AliasKey], _Scan] = {}
        self._names: dict[tuple[str, str, int, AliasKey], tuple[StatKey, bool]] = {}
        self._exports: dict[tuple[str, int, AliasKey], tuple[StatKey, bool]] = {}
        self.reads = 0

    def forget_locations(self) -> None:
        """Look modules up again (a long-lived process whose files were created or deleted)."""
        self._files.clear()
        self._names.clear()
        self._exports.clear()

    def module_file(self, importer: str, module: str) -> Optional[str]:
        """The file of `module` as `importer` sees it (cached per directory and module)."""
        directory = os.path.dirname(os.path.abspath(importer))
        key = (directory, module)
        if key not in self._files:
            self._files[key] = locate(directory, module)
        return self._files[key]

    def stat(self, path: str) -> Optional[StatKey]:
        """What a cached answer about the module at `path` is valid for: its overlay's key, else
        its size and mtime; None when it cannot be read."""
        shown = self.overlay.get(path)
        if shown is not None:
            return shown[0]
        try:
            info = os.stat(path)
        except OSError:
            return None
        return (info.st_size, info.st_mtime_ns)

    def read(self, path: str) -> bytes:
        """The module's source: its overlay, else the file (SourceError when it cannot be read)."""
        shown = self.overlay.get(path)
        return shown[1] if shown is not None else sources.read_bytes(path)

    def scan(self, path: str, aliases: Aliases = NO_ALIASES) -> Optional[_Scan]:
        stat = self.stat(path)
        if stat is None:
            return None
        key = (path, aliases.key)
        cached = self._scans.get(key)
        if cached is not None and cached.stat == stat:
            return cached
        try:
            data = self.read(path)
        except sources.SourceError:
            return None
        self.reads += 1
        may_define = (b"skippable" in data or bool(aliases)) and mentions_api(data, aliases)
        scanned = _Scan(stat, may_define, tuple(
            (i.local, i.module, i.name, i.renamed) for i in read_imports(data)))
        self._scans[key] = scanned
        return scanned

    def brings_skippables(self, importer: str, imported: Imported, aliases: Aliases = NO_ALIASES) -> bool:
        """Whether this import of `importer` may bind a skippable class, or a module holding one."""
        if imported.name is None:
            parts = imported.module.split(".")
            modules = [imported.module] if imported.renamed else \
                [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            return any(self._defines(path, 0, aliases) for path in
                       (self.module_file(importer, m) for m in modules) if path is not None)
        if imported.name == "*":
            path = self.module_file(importer, imported.module)
            return path is not None and self._defines(path, 0, aliases)
        return self._binding_is_skippable(importer, imported, 0, MODULE_HOPS, aliases)

    def _is_skippable(self, path: str, name: str, depth: int, hops: int, aliases: Aliases) -> bool:
        """Whether `name` in the module at `path` may be a skippable class, following its
        re-exports by name (aliases included) through modules that cannot define one themselves,
        and at most `hops` re-exported modules."""
        scanned = self.scan(path, aliases)
        if scanned is None or depth > MAX_REEXPORT:
            return False
        key = (path, name, hops, aliases.key)
        memo = self._names.get(key)
        if memo is not None and memo[0] == scanned.stat:
            return memo[1]
        self._names[key] = (scanned.stat, False)  # a re-export cycle reads as "no"
        bindings = scanned.binding(name)
        if scanned.may_define and not bindings:
            result = True
        else:
            result = any(self._binding_is_skippable(path, i, depth, hops, aliases) for i in bindings) or any(
                target is not None and self._is_skippable(target, name, depth + 1, hops, aliases)
                for target in (self.module_file(path, module) for module in scanned.starred()))
        self._names[key] = (scanned.stat, result)
        return result

    def _binding_is_skippable(self, path: str, imported: Imported, depth: int, hops: int, aliases: Aliases) -> bool:
        """Whether one import of the module at `path` binds what may be a skippable class (or,
        within `hops`, a module that may define one)."""
        if imported.name is None:
            target = self.module_file(path, imported.module) if hops > 0 else None
            return target is not None and self._defines(target, hops - 1, aliases)
        target = self.module_file(path, imported.module)
        if target is not None and imported.name != "*" and \
                self._is_skippable(target, imported.name, depth + 1, hops, aliases):
            return True
        if hops <= 0 or imported.name == "*":
            return False
        sep = "" if imported.module.endswith(".") else "."
        sub = self.module_file(path, imported.module + sep + imported.name)
        return sub is not None and self._defines(sub, hops - 1, aliases)

    def _defines(self, path: str, hops: int, aliases: Aliases) -> bool:
        """Whether a module may define a skippable class or re-export one (by name, or within
        `hops` re-exported modules)."""
        scanned = self.scan(path, aliases)
        if scanned is None:
            return False
        key = (path, hops, aliases.key)
        memo = self._exports.get(key)
        if memo is not None and memo[0] == scanned.stat:
            return memo[1]
        self._exports[key] = (scanned.stat, False)
        result = scanned.may_define
        for imported in scanned.imported() if not result else ():
            if imported.name == "*":
                target = self.module_file(path, imported.module)
                result = target is not None and self._defines(target, hops, aliases)
            elif imported.name is not None:
                result = self._binding_is_skippable(path, imported, 1, hops, aliases)
            if result:
                break
        self._exports[key] = (scanned.stat, result)
        return result

    def imports_project_skippables(self, path: str, data: Union[bytes, str], aliases: Aliases = NO_ALIASES) -> bool:
        """Does this file import, from its own project, something that may be a skippable class?

        Only the modules its import statements name are read (once, then cached). What a name of
        torch's own can reach is never resolved as a project class (apiimports.framework_name), so
        `import torch`, `import torch.nn as nn` and `from torch.nn import X` lead nowhere.
        """
        return any(self.brings_skippables(path, imported, aliases) for imported in read_imports(data)
                   if not framework_name(imported.qualified))
