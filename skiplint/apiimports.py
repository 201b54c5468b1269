"""What the skip API is, and whether a text imports it: the import table of the API (`API`), the
api-aliases of a configuration (`Aliases`), and the prefilter's first test (`mentions_api`: its needles, its pattern,
and the tokenizer's import reader for every other import form).

The prefilter (skiplint.prefilter), its project walk (skiplint.projectscan) and the analysis
(skiplint.imports) all read the API from here, so the prefilter's needles and the analysis' names
agree. Nothing here imports libcst, and loading this module builds no more than the import table.
"""

from __future__ import annotations

import re
import tokenize
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NamedTuple, Optional, Union

from skiplint import sources
from skiplint.limits import MAX_STATEMENT_LINES

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
        table[f"fairscale.nn.pipe.balance.{sym}"] = sym
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


class LazyPattern:
    """A regular expression compiled on first use, so that importing the prefilter (which every
    run and every flake8 process does) costs next to nothing."""

    __slots__ = ("_source", "_compiled")

    def __init__(self, source: Union[str, bytes]) -> None:
        self._source = source
        self._compiled: Optional[re.Pattern[Any]] = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self._source)
        return getattr(self._compiled, name)


#: Qualified name -> API symbol (a configuration's api-aliases add rows of their own: `Aliases.table`).
API: Mapping[str, str] = MappingProxyType(_api_table())

#: The common spelling of what a file must name for it to be parsed at all: an API module
#: (torchgpipe, fairscale, or torch.distributed.pipeline / _pipeline in any spelling, never torch's
#: newer `pipelining`) on a line that begins with the import. Nothing resolves to the API without
#: an import (a project's own re-exports are api-aliases, with needles of their own), so a
#: mention in a comment or docstring is no hit. Lines end where Python's tokenizer ends them: at
#: \n, \r\n or a lone \r. Other import forms are read by the import reader (`mentions_api`).
_PREFILTER_PATTERN = (r"(?m)(?:^|(?<=\r))[ \t]*(?:from|import)[ \t][^\r\n]*?"
                      r"(?:torchgpipe|fairscale|distributed\._?pipeline(?!ing)|distributed import \(?\s*_?pipeline\b)")
_PREFILTER = LazyPattern(_PREFILTER_PATTERN.encode())
_PREFILTER_TEXT = LazyPattern(_PREFILTER_PATTERN)
#: The prefilter's own, narrower test: a text that can import the API names one of the packages,
#: or says both words of the removed torch modules (`pipeline` alone is a common word: 67 files of
#: torch's own sources say it).
_PACKAGE_NEEDLES = (b"torchgpipe", b"fairscale")
_TORCH_NEEDLES = (b"pipeline", b"distributed")
_PACKAGE_NEEDLES_TEXT = tuple(needle.decode() for needle in _PACKAGE_NEEDLES)
_TORCH_NEEDLES_TEXT = tuple(needle.decode() for needle in _TORCH_NEEDLES)

AliasKey = tuple[tuple[str, str], ...]


class Aliases:
    """A configuration's api-aliases, as a value: a project's re-exports of the API (each a project
    qualified name -> an API qualified name, e.g. `mypkg.layers.skippable` ->
    `torchgpipe.skip.skippable`), the import-table rows they add, and the prefilter's needles for
    them. Names the API's table already knows win, so an alias never changes what a real API
    import means. Made from the configuration by the door (skiplint.session.Session) and handed
    down; never changed."""

    __slots__ = ("pairs", "key", "rows", "needles", "table")

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()) -> None:
        self.pairs: AliasKey = tuple(pairs)
        #: What every cached answer about the API depends on.
        self.key: AliasKey = tuple(sorted(set(self.pairs)))
        rows: dict[str, str] = {}
        needles: list[bytes] = []
        for alias, target in self.pairs:
            for qual, symbol in (alias_entries(alias, target) or {}).items():
                if qual not in API:
                    rows[qual] = symbol
            needle = alias.split(".", 1)[0].encode()
            if needle not in needles:
                needles.append(needle)
        self.rows: Mapping[str, str] = MappingProxyType(rows)
        self.needles: tuple[bytes, ...] = tuple(needles)
        #: The import table with these aliases: qualified name -> API symbol.
        self.table: Mapping[str, str] = MappingProxyType({**API, **rows}) if rows else API

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, "table"):  # made whole: never changed after
            raise AttributeError(f"Aliases are a value: {name} cannot be set")
        object.__setattr__(self, name, value)

    def __bool__(self) -> bool:
        return bool(self.needles)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Aliases) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Aliases({list(self.pairs)!r})"


#: No api-aliases.
NO_ALIASES = Aliases()


def mentions_api(data: Union[bytes, str], aliases: Aliases = NO_ALIASES) -> bool:
    """Does the file import an API module (or a module of one of the api-aliases) in a way the
    analysis can resolve? A file without a needle cannot; an import line that begins with the
    import (nearly every file that can) is found by the pattern; any other text with a needle is
    read by the import reader (`imports_api`), so no import form is missed."""
    text = readable(data)
    if text is None:
        return True  # the caller's decode says why it cannot be checked
    if isinstance(text, str):
        needles: Iterable[Any] = (needle.decode() for needle in aliases.needles)
        packages: Iterable[Any] = _PACKAGE_NEEDLES_TEXT
        words: Iterable[Any] = _TORCH_NEEDLES_TEXT
        pattern = _PREFILTER_TEXT
    else:
        needles, packages, words, pattern = aliases.needles, _PACKAGE_NEEDLES, _TORCH_NEEDLES, _PREFILTER
    if any(needle in text for needle in needles):
        return True
    # Every hit of the pattern, and every import the reader can resolve to the API (torch's
    # removed modules included, however spelled), names a package or says both torch words;
    # `in` is many times faster than the pattern.
    if not any(needle in text for needle in packages) and not all(word in text for word in words):
        return False
    return pattern.search(text) is not None or imports_api(text)


def readable(data: Union[bytes, str]) -> Optional[Union[bytes, str]]:
    """What the prefilter looks in: the bytes of UTF-8 source (the API's needles are ASCII, which
    UTF-8 keeps as is), else the text (`# coding: utf-7` spells `t` as `+AHQ-`, UTF-16 puts NULs
    between letters): the text that the path, standard input and flake8 all analyse. None for
    source that cannot be decoded (wanted: its reader reports why)."""
    if isinstance(data, str) or sources.utf8(data):
        return data
    try:
        return sources.decode(data)
    except sources.SourceError:
        return None


def framework_name(qualified: str) -> bool:
    """Whether an imported qualified name is torch's own (`torch.nn.Linear`): the composition
    analysis takes such names as the framework's, never as a class of the checked project (torch's
    own sources included), so neither it nor the prefilter's project walk follows them."""
    return qualified == "torch" or qualified.startswith("torch.")


def alias_entries(alias: str, target: str) -> Optional[dict[str, str]]:
    """Import-table rows that make `alias` mean `target` (a symbol or a whole module of the API).

    None when `target` is not part of the API.
    """
    if target in API:
        return {alias: API[target]}
    prefix = target + "."
    rows = {alias + qual[len(target):]: symbol for qual, symbol in API.items() if qual.startswith(prefix)}
    return rows or None


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
    module = ""  # its leading dots first
    while reader.peek() in (".", "..."):
        module += reader.peek()
        reader.i += 1
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
