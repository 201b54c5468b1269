"""The prefilter's second test (see prefilter.wanted): does a file that says `Sequential` import,
from its own project, names that may be skippable classes?

The project's modules are walked by their import statements, each read by Python's tokenizer (so
parenthesized, multi-line, backslash-continued and aliased imports of any relative depth are read
as Python reads them), each module read once per process while its size and mtime hold. Nothing
here imports libcst; the prefilter imports this module only for files that need the walk, so
loading the flake8 plugin does not pay for it.
"""

from __future__ import annotations

import os
import re
import tokenize
from dataclasses import dataclass
from typing import Iterator, NamedTuple, Optional, Union

from skiplint import sources
from skiplint.limits import MAX_REEXPORT, MAX_STATEMENT_LINES, MODULE_HOPS
from skiplint.prefilter import (REMOVED_MODULES, AliasKey, LazyPattern, active_aliases, alias_key,
                                framework_name, mentions_api)


# -- reading import statements with the tokenizer ------------------------------------------------

class Imported(NamedTuple):
    """One name an import statement binds.

    `from M import n as x`: local x, module M (leading dots kept), name n; `import a.b as m`:
    local m, module a.b, name None; `import a.b`: local a, module a.b, name None;
    `from M import *`: local "*", name "*".
    """

    local: str
    module: str
    name: Optional[str]
    #: `import a.b as m` (binds the module a.b) rather than `import a.b` (binds a).
    renamed: bool = False

    @property
    def qualified(self) -> str:
        """What the local name stands for, spelled as the analysis' import table spells it."""
        if self.name is None:
            return self.module if self.renamed else self.local
        sep = "" if self.module.endswith(".") else "."
        return f"{self.module}{sep}{self.name}"


#: Where an import statement may start: a line's first word, or after `;` or a compound
#: statement's `:` on the same line. Each candidate is then read by the tokenizer.
#: (Separate patterns, each with a literal first character, are several times faster than one.)
_STATEMENTS = tuple(LazyPattern(prefix + rb"[ \t\f]*((?:from|import)\b)") for prefix in (rb"\n", rb";", rb":"))
#: The text's first line may follow a UTF-8 byte-order mark (Python skips it).
_FIRST_STATEMENT = LazyPattern(rb"(?:\xef\xbb\xbf)?[ \t\f]*((?:from|import)\b)")
_CR_STATEMENT = LazyPattern(rb"\r[ \t\f]*((?:from|import)\b)")
_LINE_END = LazyPattern(rb"\r\n|\r|\n")
_SKIPPED = frozenset({tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT})
#: The only operators an import statement holds (`...` is one token for three dots).
_IMPORT_OPS = frozenset({".", "...", ",", "(", ")", "*"})


class _Lines:
    """A readline over `data` from `start`, remembering where each line it gave began."""

    def __init__(self, data: bytes, start: int) -> None:
        self.data = data
        self.position = start
        self.starts: list[int] = []
        self.texts: list[str] = []

    def readline(self) -> str:
        if self.position >= len(self.data) or len(self.starts) >= MAX_STATEMENT_LINES:
            return ""
        match = _LINE_END.search(self.data, self.position)
        end = match.end() if match is not None else len(self.data)
        text = self.data[self.position:end].decode("utf-8", "replace")
        self.starts.append(self.position)
        self.texts.append(text)
        self.position = end
        return text

    def offset(self, row: int, col: int) -> int:
        return self.starts[row - 1] + len(self.texts[row - 1][:col].encode("utf-8"))


def _statement_tokens(data: bytes, start: int) -> tuple[list[tuple[int, str]], int]:
    """The significant tokens of the statement starting at `start`, and the offset of its end."""
    out: list[tuple[int, str]] = []
    depth = 0
    lines = _Lines(data, start)
    try:
        for token in tokenize.generate_tokens(lines.readline):
            kind, text = token.type, token.string
            if kind in _SKIPPED:
                continue
            if kind in (tokenize.NEWLINE, tokenize.ENDMARKER) or (kind == tokenize.OP and text == ";" and depth == 0):
                return out, lines.offset(*token.start) if kind != tokenize.ENDMARKER else len(data)
            if kind not in (tokenize.NAME, tokenize.OP) or (kind == tokenize.OP and text not in _IMPORT_OPS):
                return [], lines.offset(*token.end)  # not an import statement: stop reading here
            if text == "(":
                depth += 1
            elif text == ")":
                depth -= 1
            out.append((kind, text))
    except (tokenize.TokenError, SyntaxError):
        pass  # unterminated: what was read so far is the statement
    return out, lines.position


class _Tokens:
    def __init__(self, tokens: list[tuple[int, str]]) -> None:
        self.tokens = tokens
        self.i = 0

    def peek(self) -> str:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else ""

    def name(self) -> Optional[str]:
        if self.i < len(self.tokens) and self.tokens[self.i][0] == tokenize.NAME:
            self.i += 1
            return self.tokens[self.i - 1][1]
        return None

    def take(self, text: str) -> bool:
        if self.peek() == text:
            self.i += 1
            return True
        return False

    def dotted(self) -> Optional[str]:
        first = self.name()
        if first is None:
            return None
        parts = [first]
        while self.take("."):
            part = self.name()
            if part is None:
                return None
            parts.append(part)
        return ".".join(parts)

    def alias(self) -> Optional[str]:
        """`as NAME` if present (None), or "" when `as` is followed by no name."""
        if self.take("as"):
            return self.name() or ""
        return None


def _statement(tokens: list[tuple[int, str]]) -> list[Imported]:
    """The names one import statement binds; [] for what is not an import statement."""
    reader = _Tokens(tokens)
    out: list[Imported] = []
    if reader.take("import"):
        while True:
            module = reader.dotted()
            if module is None:
                return out
            asname = reader.alias()
            if asname == "":
                return out
            out.append(Imported(asname, module, None, True) if asname else
                       Imported(module.split(".", 1)[0], module, None))
            if not reader.take(","):
                return out
    if not reader.take("from"):
        return out
    dots = ""
    while reader.peek() in (".", "..."):
        dots += reader.peek()
        reader.i += 1
    module = dots
    if reader.peek() != "import":
        named = reader.dotted()
        if named is None:
            return out
        module += named
    if not module or not reader.take("import"):
        return out
    if reader.take("*"):
        return [Imported("*", module, "*")]
    parenthesized = reader.take("(")
    while True:
        name = reader.name()
        if name is None:
            return out
        asname = reader.alias()
        if asname == "":
            return out
        out.append(Imported(asname or name, module, name))
        if not reader.take(","):
            return out
        if parenthesized and reader.peek() == ")":
            return out


#: A whole one-line import statement of plain ASCII names (no parentheses, continuation, string or
#: second statement can hide in it): read directly, everything else by the tokenizer.
_SIMPLE = LazyPattern(rb"(?:from[ \t]+(\.*[A-Za-z_][\w.]*|\.+)[ \t]+)?import[ \t]+([\w. \t,]+?)[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n|$)")
_SIMPLE_NAME = LazyPattern(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:[ \t]+as[ \t]+([A-Za-z_]\w*))?$")
_KEYWORDS = frozenset({"import", "from", "as"})
#: The first line of an import statement holds nothing but names, dots, commas, parentheses,
#: `*` and spaces up to its end, a comment, a `;` or a continuation backslash; a `from` needs
#: its `import` there unless the line is continued.
_PLAUSIBLE = LazyPattern(rb"(?:import\b|from\b(?=[^\r\n#]*(?:\bimport\b|\\[ \t\f]*(?:\r|\n|$))))"
                        rb"[\w\x80-\xff \t\f.,()*]*(?:;|#|\\[ \t\f]*(?:\r|\n|$)|\r|\n|$)")


def _simple(data: bytes, start: int) -> Optional[tuple[list[Imported], int]]:
    """The bindings and end of a plain one-line import statement at `start`, or None."""
    match = _SIMPLE.match(data, start)
    if match is None:
        return None
    module = match.group(1).decode("ascii") if match.group(1) is not None else None
    out: list[Imported] = []
    for piece in match.group(2).decode("ascii").split(","):
        name = _SIMPLE_NAME.match(piece.strip())
        if name is None or _KEYWORDS.intersection(name.group(1).split(".")):
            return None
        dotted, asname = name.group(1), name.group(2)
        if module is None:
            out.append(Imported(asname, dotted, None, True) if asname else
                       Imported(dotted.split(".", 1)[0], dotted, None))
        elif "." in dotted:
            return None
        else:
            out.append(Imported(asname or dotted, module, dotted))
    return out, match.end()


def read_imports(data: Union[bytes, str]) -> list[Imported]:
    """Every name bound by an import statement anywhere in a module, in source order.

    Statements are found by their first word and read by Python's tokenizer from there, so every
    form Python accepts is read as Python reads it. A line inside a string that looks like an
    import may be read as one: the prefilter may say yes too often, never too rarely.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    found: list[Imported] = []
    end = 0
    first = _FIRST_STATEMENT.match(data)
    patterns = _STATEMENTS + ((_CR_STATEMENT,) if b"\r" in data else ())
    starts = sorted({m.start(1) for pattern in patterns for m in pattern.finditer(data)}
                    | ({first.start(1)} if first is not None else set()))
    for start in starts:
        if start < end:
            continue  # a continuation line of the statement just read
        if not _PLAUSIBLE.match(data, start):
            continue  # a line in a string or comment that starts with the word: no statement
        simple = _simple(data, start)
        if simple is not None:
            names, end = simple
            found.extend(names)
            continue
        tokens, end = _statement_tokens(data, start)
        found.extend(_statement(tokens))
    return found


#: What Python lets stand between the parts of an attribute chain: blanks, line breaks, backslash
#: continuations, comments (in brackets), and the closing parentheses of `(torch).distributed`
#: or `(torch.distributed).pipeline` (each opened before the name, which nothing here needs).
_BETWEEN = rb"(?:[\s\\)]|\#[^\r\n]*)*"
#: An attribute chain from a local name bound to `torch` or `torch.distributed` down to the removed
#: pipeline package, in any of those spellings.
_THROUGH_TORCH = {
    "torch": _BETWEEN + rb"\." + _BETWEEN + rb"distributed" + _BETWEEN + rb"\." + _BETWEEN + rb"_?pipeline(?!\w)",
    "torch.distributed": _BETWEEN + rb"\." + _BETWEEN + rb"_?pipeline(?!\w)",
}
#: Module roots whose every import may reach the API (the torch spellings are REMOVED_MODULES).
_API_PACKAGES = frozenset({"torchgpipe", "fairscale"})


def imports_api(data: Union[bytes, str]) -> bool:
    """Whether an import statement anywhere in the module binds a name through which the analysis
    can reach the API: a module or name of torchgpipe or fairscale, a removed torch pipeline module
    (SKP401), or `torch` / `torch.distributed` as a local name L that the text follows to
    `L.distributed.pipeline` / `L.pipeline` (skiplint.imports resolves names through imports only).

    The prefilter's second chance for a text that holds an API needle where its pattern sees no
    import line: statements after `try:`, `;` or a byte-order mark, continued by a backslash, a
    removed module among other names, the API as an attribute of torch."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    for imported in read_imports(data):
        if imported.module.startswith("."):
            continue
        full = imported.module if imported.name in (None, "*") else f"{imported.module}.{imported.name}"
        if full.partition(".")[0] in _API_PACKAGES or any(
                full == removed or full.startswith(removed + ".") for removed in REMOVED_MODULES):
            return True
        chain = _THROUGH_TORCH.get(imported.qualified)
        if chain is not None and _follows(data, imported.local.encode(), chain):
            return True
    return False


#: A character that, before a name, makes it part of a longer name or an attribute.
_NAME_OR_DOT = LazyPattern(rb"[\w.]")


def _follows(data: bytes, local: bytes, chain: bytes) -> bool:
    """Whether `local`, as a whole name (no word character or dot before it), is followed by
    `chain` somewhere in `data`. The pattern starts with the name's literal, which the regular
    expression engine finds by a fast scan (a lookbehind in front of it would be tried at every
    position); the character before each hit is then tested."""
    for match in re.finditer(re.escape(local) + chain, data):
        start = match.start()
        if start == 0 or not _NAME_OR_DOT.match(data, start - 1):
            return True
    return False


# -- locating a project's modules ----------------------------------------------------------------

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

    Answers are cached per module and per set of api-aliases in force (an alias decides whether a
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

    def scan(self, path: str) -> Optional[_Scan]:
        stat = self.stat(path)
        if stat is None:
            return None
        key = (path, alias_key())
        cached = self._scans.get(key)
        if cached is not None and cached.stat == stat:
            return cached
        try:
            data = self.read(path)
        except sources.SourceError:
            return None
        self.reads += 1
        may_define = (b"skippable" in data or active_aliases()) and mentions_api(data)
        scanned = _Scan(stat, may_define, tuple(
            (i.local, i.module, i.name, i.renamed) for i in read_imports(data)))
        self._scans[key] = scanned
        return scanned

    def brings_skippables(self, importer: str, imported: Imported) -> bool:
        """Whether this import of `importer` may bind a skippable class, or a module holding one."""
        if imported.name is None:
            parts = imported.module.split(".")
            modules = [imported.module] if imported.renamed else \
                [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            return any(self._defines(path, 0) for path in
                       (self.module_file(importer, m) for m in modules) if path is not None)
        if imported.name == "*":
            path = self.module_file(importer, imported.module)
            return path is not None and self._defines(path, 0)
        return self._binding_is_skippable(importer, imported, 0, MODULE_HOPS)

    def _is_skippable(self, path: str, name: str, depth: int, hops: int) -> bool:
        """Whether `name` in the module at `path` may be a skippable class, following its
        re-exports by name (aliases included) through modules that cannot define one themselves,
        and at most `hops` re-exported modules."""
        scanned = self.scan(path)
        if scanned is None or depth > MAX_REEXPORT:
            return False
        key = (path, name, hops, alias_key())
        memo = self._names.get(key)
        if memo is not None and memo[0] == scanned.stat:
            return memo[1]
        self._names[key] = (scanned.stat, False)  # a re-export cycle reads as "no"
        bindings = scanned.binding(name)
        if scanned.may_define and not bindings:
            result = True
        else:
            result = any(self._binding_is_skippable(path, i, depth, hops) for i in bindings) or any(
                target is not None and self._is_skippable(target, name, depth + 1, hops)
                for target in (self.module_file(path, module) for module in scanned.starred()))
        self._names[key] = (scanned.stat, result)
        return result

    def _binding_is_skippable(self, path: str, imported: Imported, depth: int, hops: int) -> bool:
        """Whether one import of the module at `path` binds what may be a skippable class (or,
        within `hops`, a module that may define one)."""
        if imported.name is None:
            target = self.module_file(path, imported.module) if hops > 0 else None
            return target is not None and self._defines(target, hops - 1)
        target = self.module_file(path, imported.module)
        if target is not None and imported.name != "*" and \
                self._is_skippable(target, imported.name, depth + 1, hops):
            return True
        if hops <= 0 or imported.name == "*":
            return False
        sep = "" if imported.module.endswith(".") else "."
        sub = self.module_file(path, imported.module + sep + imported.name)
        return sub is not None and self._defines(sub, hops - 1)

    def _defines(self, path: str, hops: int) -> bool:
        """Whether a module may define a skippable class or re-export one (by name, or within
        `hops` re-exported modules)."""
        scanned = self.scan(path)
        if scanned is None:
            return False
        key = (path, hops, alias_key())
        memo = self._exports.get(key)
        if memo is not None and memo[0] == scanned.stat:
            return memo[1]
        self._exports[key] = (scanned.stat, False)
        result = scanned.may_define
        for imported in scanned.imported() if not result else ():
            if imported.name == "*":
                target = self.module_file(path, imported.module)
                result = target is not None and self._defines(target, hops)
            elif imported.name is not None:
                result = self._binding_is_skippable(path, imported, 1, hops)
            if result:
                break
        self._exports[key] = (scanned.stat, result)
        return result

    def imports_project_skippables(self, path: str, data: Union[bytes, str]) -> bool:
        """Does this file import, from its own project, something that may be a skippable class?

        Only the modules its import statements name are read (once, then cached). What a name of
        torch's own can reach is never resolved as a project class (prefilter.framework_name), so
        `import torch`, `import torch.nn as nn` and `from torch.nn import X` lead nowhere.
        """
        return any(self.brings_skippables(path, imported) for imported in read_imports(data)
                   if not framework_name(imported.qualified))


#: The process-wide walk: the CLI's run and each flake8 worker process share one.
SCAN = ProjectScan()
