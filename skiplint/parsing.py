"""The one way skiplint parses source: every libcst parse (engine, project index, fix, layout,
verify's static step) goes through `parse_module`, and libcst is used as it ships.

Before libcst sees a text, `hazard` scans its tokens (a hand scan that never fails, so it works
the same on every Python and whatever syntax error the text has) and refuses what libcst's
recursive native parser would crash on or take minutes over: deep bracket nesting, long operator
and trailer chains, long elif chains and texts of too many tokens (the limits are in limits.py).
When libcst then fails, the running Python's own compile says where and why, as flake8's E999
does; a text that Python accepts but libcst cannot read is parsed again with the known gaps of
libcst bridged (a parenthesized annotated-assignment target; `else(` that its validation refuses),
else reported as such. A top-level statement met before in the same run is not parsed again
(`StatementParts`)."""

from __future__ import annotations

import ast
import bisect
import contextlib
import contextvars
import re
import warnings
from typing import TYPE_CHECKING, Iterator, Optional, Protocol, Sequence, Union

from skiplint import limits, textlines

if TYPE_CHECKING:
    import libcst as cst


class ParseFailure(Exception):
    """The source could not be parsed: `str()` is the one-line reason; `line` (1-based) and `col`
    (0-based) say where, as the running Python reports it, when that is known."""

    def __init__(self, reason: str, line: int = 1, col: int = 0) -> None:
        super().__init__(reason)
        self.line = line
        self.col = col


# -- the token scan ---------------------------------------------------------------------------------

#: The common tokens come first (a match tries the alternatives in order): a name not followed
#: by a quote (so never a string's prefix) and not starting with a digit (so never a number) is a
#: name whatever follows it; `word` is a name that only the alternatives before it could claim.
#: `lambda` has its own group: its colon does not end the expression.
_TOKEN = re.compile(r"""[ \t\f]*(?:
    (?P<lambda>lambda(?!\w))
  | (?P<name>(?!\d)\w+(?![\w'"]))
  | (?P<newline>\r\n|\r|\n)
  | (?P<blank>\\(?:\r\n|\r|\n)|\\?\Z)
  | (?P<comment>\#[^\r\n]*)
  | (?P<string>[rRbBuU]{0,2}(?:'''|\"\"\"|'|\"))
  | (?P<fstring>[rR]?[fFtT][rR]?(?:'''|\"\"\"|'|\"))
  | (?P<number>0[xXoObB][\w]*|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)
  | (?P<word>\w+)
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<separator>[,;]|=(?!=)|(?:\*\*|//|>>|<<|[-+*/%@&|^])=)
  | (?P<colon>:(?!=))
  | (?P<op>\*\*|//|>>|<<|->|:=|[=<>!]=|\.\.\.|[-+*/%@&|^~<>.])
  | (?P<other>.)
)""", re.VERBOSE | re.DOTALL)

_INDENT = re.compile(r"[ \t\f]*")
#: The rest of a string after its opening quote, up to and including the closing quote (or the
#: end of the line, or of the text, when it is not closed).
_STRING_REST = {
    "'": re.compile(r"[^'\\\r\n]*(?:\\(?:\r\n|[\s\S])[^'\\\r\n]*)*'?"),
    '"': re.compile(r'[^"\\\r\n]*(?:\\(?:\r\n|[\s\S])[^"\\\r\n]*)*"?'),
    "'''": re.compile(r"[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*(?:''')?"),
    '"""': re.compile(r'[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*(?:""")?'),
}
#: Literal text of an f-string up to its next brace, backslash, quote or line end.
_FSTRING_TEXT = {
    "'": re.compile(r"[^'{}\\\r\n]*"),
    '"': re.compile(r'[^"{}\\\r\n]*'),
    "'''": re.compile(r"[^'{}\\]*"),
    '"""': re.compile(r'[^"{}\\]*'),
}


def _end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a match of `pattern` (which may match nothing) from `pos` ends."""
    match = pattern.match(text, pos)
    return pos if match is None else match.end()


#: Python's tokenizer measures indentation twice: with tabs to the next multiple of 8 (`col`) and
#: of 1 (`altcol`); a form feed sets both back to 0. Two lines are at the same indentation when
#: both numbers agree (tokenizer.c, every supported version).
_TAB_SIZE = 8


def _columns(indentation: str) -> tuple[int, int]:
    """(col, altcol) of a line's indentation, as Python's tokenizer counts them."""
    col = altcol = 0
    for char in indentation:
        if char == " ":
            col, altcol = col + 1, altcol + 1
        elif char == "\t":
            col, altcol = (col // _TAB_SIZE + 1) * _TAB_SIZE, altcol + 1
        elif char == "\f":
            col = altcol = 0
    return col, altcol


#: A line break after a backslash: the continuation that makes a lone backslash's line one
#: logical line with the next.
_BREAK = re.compile(r"\r\n|\r|\n")


def _continued_columns(text: str, pos: int) -> Optional[tuple[int, int]]:
    """The indentation Python 3.10 and later give a logical line that begins at `pos` with lone
    backslashes: the col of the first backslash not in column 0 (for both numbers: the
    tokenizer's `cont_line_col`), else the col and altcol of the statement after them; None
    when no statement follows (a comment, a blank line or the end of the text)."""
    col = altcol = first = 0
    end = len(text)
    while True:
        indent = _INDENT.match(text, pos)
        assert indent is not None  # it matches the empty string
        for char in indent.group():
            if char == " ":
                col, altcol = col + 1, altcol + 1
            elif char == "\t":
                col, altcol = (col // _TAB_SIZE + 1) * _TAB_SIZE, altcol + 1
            else:
                col = altcol = 0
        pos = indent.end()
        if pos >= end or text[pos] != "\\":
            break
        newline = _BREAK.match(text, pos + 1)
        if newline is None:
            break  # a backslash before code: a syntax error that Python reports
        first = first or col
        pos = newline.end()
    if pos >= end or text[pos] in "#\r\n":
        return None
    return (first, first) if first else (col, altcol)


class _Refused(Exception):
    def __init__(self, reason: str, pos: int) -> None:
        super().__init__(reason)
        self.pos = pos


class _Scan:
    """One pass over the tokens of a text, raising _Refused at the first limit exceeded.

    `depth` counts open brackets and f-string replacement fields; a bracket level's `run` counts
    the operators and operands since its last comma-like separator (each nested bracket group
    counting as three), which is how deep libcst's tree of that expression becomes. A level's
    `base` is how deep the tree already is where the level opens: the runs of the levels around
    it and the elif branches of the chains open at once (each nests the rest of its chain); the
    base and the run together are held to MAX_DEPTH.
    """

    def __init__(self, text: str, elifs: int = 0) -> None:
        self.text = text
        #: elif branches open around the text (a line scanned on its own).
        self.elifs_around = elifs
        self.tokens = 0
        self.depth = 0
        self.runs: list[int] = [0]
        self.bases: list[int] = [0]
        #: For each level, how far its run may grow before `count` has something to say.
        self.rooms: list[int] = [0]
        self.lambdas: list[int] = [0]
        self.elifs: dict[int, int] = {}
        #: Whether the tree is anywhere deeper than limits.SHALLOW_DEPTH.
        self.deep = False
        self.line_start = True
        self.line_pos = 0
        #: The indentation of the last logical line that began at bracket depth 0.
        self.indentation = ""
        #: The current logical line began with a lone backslash that keeps `indentation`.
        self.continued = False
        #: Where the logical line whose lone backslashes were last judged begins (its later
        #: backslashes are part of the same judgement).
        self.judged = -1
        #: Offsets of the logical lines that begin in column 0, with their first word ("" when
        #: the line begins with anything but a name, "@" for a decorator).
        self.tops: list[tuple[int, str]] = []
        #: Where each comment begins and ends, when asked for (see comment_spans).
        self.comments: Optional[list[tuple[int, int]]] = None

    def count(self, pos: int, weight: int = 1) -> None:
        self.tokens += 1
        if self.tokens > limits.MAX_TOKENS:
            raise _Refused(f"too large to check (more than {limits.MAX_TOKENS:,} tokens)", pos)
        self.runs[-1] += weight
        if self.runs[-1] > limits.MAX_EXPRESSION_RUN:
            raise _Refused(f"nested too deeply to parse (an expression of more than "
                           f"{limits.MAX_EXPRESSION_RUN:,} operators and operands)", pos)
        self.reach(self.bases[-1] + self.runs[-1], pos)

    def reach(self, levels: int, pos: int) -> None:
        """The tree is `levels` deep here, and up to two levels more for each open bracket."""
        if levels + 2 * self.depth > limits.SHALLOW_DEPTH:
            if not self.deep:
                self.deep = True
                self.make_room()
            if levels > limits.MAX_DEPTH:
                raise _Refused(f"nested too deeply to parse (more than {limits.MAX_DEPTH:,} levels of "
                               f"operators, operands and elif branches at once)", pos)

    def room(self, level: int) -> int:
        """How far the run of bracket level `level` may grow before `count` has something to say."""
        if self.deep:
            return min(limits.MAX_EXPRESSION_RUN, limits.MAX_DEPTH - self.bases[level])
        return min(limits.MAX_EXPRESSION_RUN, limits.SHALLOW_DEPTH - self.bases[level] - 2 * level)

    def make_room(self) -> int:
        """Every level's room, again (the tree was found deep, or the elifs changed); the
        innermost one's."""
        self.rooms[:] = [self.room(level) for level in range(len(self.bases))]
        return self.rooms[-1]

    def separate(self, pos: int) -> None:
        self.tokens += 1
        if self.tokens > limits.MAX_TOKENS:
            raise _Refused(f"too large to check (more than {limits.MAX_TOKENS:,} tokens)", pos)
        self.runs[-1] = 0

    def open(self, pos: int) -> None:
        self.opening(pos)
        self.depth += 1
        self.bases.append(self.bases[-1] + self.runs[-1] - 2)  # the group itself: MAX_NESTING
        self.runs.append(0)
        self.lambdas.append(0)
        self.rooms.append(self.room(self.depth))

    def opening(self, pos: int) -> None:
        """Count an open bracket in its level (the level itself is not opened yet)."""
        self.count(pos, 2)
        if self.depth + 1 > limits.MAX_NESTING:
            raise _Refused(f"nested too deeply to parse (more than {limits.MAX_NESTING} levels of "
                           f"brackets)", pos)

    def close(self, pos: int) -> None:
        if self.depth:
            self.depth -= 1
            self.runs.pop()
            self.bases.pop()
            self.rooms.pop()
            self.lambdas.pop()
        self.count(pos)

    def statement(self, pos: int, word: str) -> None:
        """The first word of a logical line (at bracket depth 0): elif chains nest in libcst's tree."""
        self.depth = 0
        indent = pos - self.line_pos
        if self.continued:  # its first line is the backslash's: the indentation is unchanged
            self.continued = False
        else:
            self.indentation = self.text[self.line_pos:pos]
        if indent == 0:
            self.tops.append((pos, word or self.text[pos]))
        for deeper in [key for key in self.elifs if key > indent]:
            del self.elifs[deeper]
        if word == "elif":
            self.elifs[indent] = self.elifs.get(indent, 0) + 1
            if self.elifs[indent] > limits.MAX_ELIF_CHAIN:
                raise _Refused(f"nested too deeply to parse (more than {limits.MAX_ELIF_CHAIN:,} "
                               f"elif branches in a row)", pos)
        elif word != "else":
            self.elifs.pop(indent, None)
        below = self.elifs_around + sum(self.elifs.values()) if self.elifs else self.elifs_around
        if below != self.bases[0]:  # a statement begins at bracket depth 0
            self.bases[0] = below
            self.reach(below, pos)
            self.rooms[0] = self.room(0)

    def lone_backslash(self, start: int, after: int) -> None:
        """A logical line that begins with backslash continuations (lines holding only `\\`).
        libcst, like Python 3.9, keeps the statement that follows in the block of the line before.
        Python 3.10 and later indent it as the first of those backslashes that is not in column
        0, else as its own line (see `_continued_columns`). Where the two differ, the file's
        blocks depend on the Python that runs it: refused on every Python, so that every Python
        gives the same verdict. Where they agree (the same columns, however spelled with form
        feeds, or several backslash lines in a row), the text is accepted."""
        if self.judged == self.line_pos:
            return  # a later backslash of a logical line already judged at its first
        self.judged = self.line_pos
        columns = _continued_columns(self.text, self.line_pos)
        if columns is None:
            return  # no statement follows on the continued lines
        if columns != _columns(self.indentation):
            raise _Refused("a line holding only a backslash before a change of indentation (Python 3.10+ "
                           "puts the next statement in another block than libcst and Python 3.9 do)", start)
        self.continued = True

    def code(self, pos: int, field: bool = False) -> int:
        """Scan code from `pos`; in an f-string field, stop after its closing brace.

        The common tokens are counted inline (the same arithmetic as count, separate, open and
        close), with the token count and depth in locals written back before any other method
        runs: this loop meets every token of every checked file."""
        text, end = self.text, len(self.text)
        base = self.depth
        runs, bases, rooms, lambdas = self.runs, self.bases, self.rooms, self.lambdas
        tokens, depth, line_start = self.tokens, self.depth, self.line_start
        most_tokens, deepest = limits.MAX_TOKENS, limits.MAX_NESTING
        longest_run, deepest_tree, shallow = limits.MAX_EXPRESSION_RUN, limits.MAX_DEPTH, limits.SHALLOW_DEPTH
        room = rooms[-1] = self.room(depth)  # past it, count, opening or reach decide
        match_token = _TOKEN.match
        while pos < end:
            match = match_token(text, pos)
            if match is None:  # pragma: no cover - `other` matches any character
                break
            kind, pos = match.lastgroup or "other", match.end()
            if kind == "newline":
                if depth == 0:
                    runs[-1] = 0
                    line_start, self.line_pos = True, pos
                continue
            if kind == "blank" or kind == "comment":
                if kind == "blank" and line_start and depth == 0 and pos < end:
                    self.lone_backslash(match.start(kind), pos)
                elif kind == "comment" and self.comments is not None:
                    self.comments.append((match.start(kind), pos))
                continue
            if line_start and depth == 0:
                line_start = False
                word = match.group(kind) if kind == "name" or kind == "word" or kind == "lambda" else ""
                self.statement(match.start(kind), word)
                room = rooms[-1]
            if kind == "name" or kind == "op" or kind == "number" or kind == "word" or kind == "lambda" \
                    or kind == "other":
                if kind == "lambda":
                    lambdas[-1] += 1
                tokens += 1
                runs[-1] += 1
                if tokens > most_tokens or runs[-1] > room:
                    self.tokens, self.depth, self.line_start = tokens - 1, depth, line_start
                    runs[-1] -= 1
                    self.count(match.start(kind))
                    room = rooms[-1]
            elif kind == "open":
                tokens += 1
                runs[-1] += 2
                if tokens > most_tokens or runs[-1] > room or depth + 1 > deepest:
                    self.tokens, self.depth, self.line_start = tokens - 1, depth, line_start
                    runs[-1] -= 2
                    self.opening(match.start(kind))
                depth += 1
                below = bases[-1] + runs[-1] - 2  # the group itself: MAX_NESTING
                bases.append(below)
                runs.append(0)
                lambdas.append(0)
                room = (deepest_tree - below) if self.deep else (shallow - below - 2 * depth)  # self.room
                if room > longest_run:
                    room = longest_run
                rooms.append(room)
            elif kind == "close":
                if field and depth == base and match.group(kind) == "}":
                    self.tokens, self.depth, self.line_start = tokens, depth, line_start
                    return pos
                if depth:
                    depth -= 1
                    runs.pop()
                    bases.pop()
                    rooms.pop()
                    lambdas.pop()
                    room = rooms[-1]
                tokens += 1
                runs[-1] += 1
                if tokens > most_tokens or runs[-1] > room:
                    self.tokens, self.depth, self.line_start = tokens - 1, depth, line_start
                    runs[-1] -= 1
                    self.count(match.start(kind))
                    room = rooms[-1]
            elif kind == "separator" or (kind == "colon" and not lambdas[-1] and not (field and depth == base)):
                tokens += 1
                if tokens > most_tokens:
                    self.tokens, self.line_start = tokens - 1, line_start
                    self.separate(match.start(kind))
                runs[-1] = 0
            elif kind == "colon":
                if field and depth == base:
                    self.tokens, self.depth, self.line_start = tokens, depth, line_start
                    return self.fstring_spec(pos)
                lambdas[-1] -= 1  # a lambda's body continues its expression
                tokens += 1
                runs[-1] += 1
                if tokens > most_tokens or runs[-1] > room:
                    self.tokens, self.depth, self.line_start = tokens - 1, depth, line_start
                    runs[-1] -= 1
                    self.count(match.start(kind))
                    room = rooms[-1]
            else:
                self.tokens, self.depth, self.line_start = tokens, depth, line_start
                start = match.start(kind)
                if kind == "string":
                    pos = _end(_STRING_REST[match.group(kind).lstrip("rRbBuU")], text, pos)
                    self.count(start)
                else:  # fstring
                    self.count(start)
                    pos = self.fstring(pos, match.group(kind).lstrip("rRfFtT"))
                tokens, depth, line_start = self.tokens, self.depth, self.line_start
        self.tokens, self.depth, self.line_start = tokens, depth, line_start
        return pos

    def fstring(self, pos: int, quote: str) -> int:
        """Scan an f-string's body after its opening quote; return the position after it."""
        text, end = self.text, len(self.text)
        literal = _FSTRING_TEXT[quote]
        while pos < end:
            pos = _end(literal, text, pos)
            if pos >= end:
                break
            char = text[pos]
            if text.startswith(quote, pos):
                return pos + len(quote)
            if char in "\r\n" and len(quote) == 1:
                return pos  # not closed on its line
            if char == "\\":
                pos += 2
            elif text.startswith("{{", pos) or text.startswith("}}", pos):
                pos += 2
            elif char == "{":
                pos = self.field(pos)
            else:
                pos += 1
        return pos

    def field(self, pos: int) -> int:
        """A replacement field of an f-string, from its `{`: code, scanned one level deeper."""
        outer = self.depth
        self.open(pos)
        after = self.code(pos + 1, field=True)
        while self.depth > outer:  # the field's own level, and any bracket left open in it
            self.depth -= 1
            self.runs.pop()
            self.bases.pop()
            self.rooms.pop()
            self.lambdas.pop()
        return after

    def fstring_spec(self, pos: int) -> int:
        """A format spec (after `:` in a field): literal text with nested fields, up to `}`."""
        text, end = self.text, len(self.text)
        while pos < end:
            char = text[pos]
            if char == "}":
                return pos + 1
            if char == "{":
                pos = self.field(pos)
            elif char in "\r\n'\"":
                return pos  # malformed: let the enclosing string decide
            else:
                pos += 1
        return pos


# -- the quick bounds: most texts are far inside every limit ---------------------------------------
# The scan above meets every token in a Python loop. A text without f-strings, backslash
# continuations and long logical lines is judged with a few passes of the regex engine instead:
# its strings and comments blanked (the scan's own patterns), its brackets and line breaks are
# all that is left to follow, and each limit has a bound never below the scan's count. When a bound
# cannot tell, the scan decides; what the bounds accept, the scan accepts too, with the same
# column-0 lines (tests/test_parsing.py holds the two to that).

#: The word before a quote that makes it an f-string (or t-string): the scan's `fstring` prefix, or
#: anything after a number (the only token that a word-character token may follow directly).
_FSTRING_WORD = re.compile(r"[rR]?[fFtT][rR]?|\d\w*")
#: A backslash continuation: the scan's `blank` token (a lone one changes its blocks).
_CONTINUATION = re.compile(r"\\[\r\n]")
#: A comment or a string, from its quote: the scan's `comment` and `string` tokens.
_QUIET = re.compile("|".join([r"#[^\r\n]*"] + [re.escape(quote) + _STRING_REST[quote].pattern
                                                  for quote in ("'''", '"""', "'", '"')]))
#: What is left to follow once strings and comments are blanked.
_STRUCTURE = re.compile(r"[(\[{]|[)\]}]|\r\n|\r|\n")
_OPENS = frozenset("([{")
_CLOSES = frozenset(")]}")
#: A name or a word at the head of a line (what `statement` is given; a number gives its first character).
_HEAD_WORD = re.compile(r"(?!\d)\w+")
_STRING_PREFIX = re.compile(r"[rRbBuU]{1,2}")


class _FStringMet(Exception):
    """The quick bounds meet what may be an f-string: its fields are code, so the scan decides."""


def _blank(match: re.Match[str]) -> str:
    """A string becomes one placeholder character (one token) and blanks, a comment blanks.
    Every string before the first f-string is found at its quote, so is that f-string."""
    found = match.group()
    if found[0] == "#":
        return " " * len(found)
    text, start = match.string, match.start()
    word = start
    while word and (text[word - 1].isalnum() or text[word - 1] == "_"):  # what \w matches
        word -= 1
    if word < start and _FSTRING_WORD.fullmatch(text, word, start):
        raise _FStringMet
    return "S" + " " * (len(found) - 1)


#: A word or one other character that is no blank: every token holds at least one.
_TOKENISH = re.compile(r"\w+|[^\w \t\f\r\n]")


def _tokens_at_most(quiet: str, start: int, end: int) -> int:
    """A bound on the tokens of quiet[start:end]: each holds a word or another character that is
    no blank (what `_TOKENISH` counts)."""
    return len(_TOKENISH.findall(quiet, start, end))


def _head(text: str, pos: int) -> str:
    """The word the scan records for a logical line beginning at `pos` (see _Scan.statement)."""
    word = _HEAD_WORD.match(text, pos)
    if word is None:
        return text[pos]
    after = word.end()
    if after < len(text) and text[after] in "'\"" and _STRING_PREFIX.fullmatch(word.group()):
        return text[pos]  # a string's prefix
    return word.group()


def _quick_bounds(text: str) -> Optional[tuple[list[tuple[int, str]], bool]]:
    """The scan's column-0 lines of a text that the bounds show to be inside every limit, and
    whether its tree may be deeper than limits.SHALLOW_DEPTH (never False where the scan's `deep`
    is True), or None when they cannot (the exact scan then decides)."""
    elifs = text.count("elif")  # at least the elif branches open at once
    if (len(text) > limits.MAX_TOKENS or elifs > limits.MAX_ELIF_CHAIN
            or _CONTINUATION.search(text)):
        return None
    try:
        quiet = _QUIET.sub(_blank, text)
    except _FStringMet:
        return None
    # A logical line's expression runs, and their sum over the open brackets, weigh at most two
    # per token (an open bracket weighs two); below them are the elif branches open at once.
    longest = min(limits.MAX_EXPRESSION_RUN, limits.MAX_DEPTH - elifs) // 2
    deepest = limits.MAX_NESTING
    # The scan's `deep` cannot be reached by a line of fewer tokens than this (over the elifs,
    # a token weighs one in the runs' sum, an open bracket two as a level): a longer line is
    # scanned for it.
    shallow = (limits.SHALLOW_DEPTH - elifs) // 2
    deep = shallow < 0
    opens, closes = _OPENS, _CLOSES
    tops: list[tuple[int, str]] = []
    depth = line = 0  # line: where the current logical line began
    ends = len(quiet)
    if quiet.endswith("\\"):
        quiet = quiet[:-1] + " "  # the scan's `blank` at the end of the text: no token
    for match in _STRUCTURE.finditer(quiet):
        found = match.group()
        if found in opens:
            depth += 1
            if depth > deepest:
                return None
        elif found in closes:
            depth -= 1
            if depth < 0:
                return None  # a stray close: the scan does not count below zero
        elif depth == 0:
            if line < ends and quiet[line] not in " \t\f\r\n":
                tops.append((line, _head(text, line)))
            start, line = line, match.end()
            if match.start() - start > shallow:
                tokens = _tokens_at_most(quiet, start, match.start())
                if tokens > longest:
                    return None
                deep = deep or (tokens > shallow and _deep_line(text[start:match.start()], elifs))
    if line < ends and quiet[line] not in " \t\f\r\n":
        tops.append((line, _head(text, line)))
    if ends - line > shallow:
        tokens = _tokens_at_most(quiet, line, ends)
        if tokens > longest:
            return None
        deep = deep or (tokens > shallow and _deep_line(text[line:], elifs))
    return tops, deep


def _deep_line(line: str, elifs: int) -> bool:
    """Whether the scan finds the tree deeper than limits.SHALLOW_DEPTH in one logical line (with
    no f-string or backslash continuation) below at most `elifs` elif branches."""
    scan = _Scan(line, elifs)
    try:
        scan.code(0)
    except _Refused:
        return True
    return scan.deep


def hazard(text: str) -> Optional[tuple[str, int]]:
    """Why libcst must not be given this text (one line) and the offset where that shows, or None."""
    if _LAST_SCAN[0][0] is text:
        return None  # this very text was accepted last
    quick = _quick_bounds(text)
    if quick is not None:
        _LAST_SCAN[0] = (text, *quick)
        return None
    scan = _Scan(text)
    try:
        scan.code(0)
    except _Refused as refused:
        return str(refused), refused.pos
    _LAST_SCAN[0] = (text, scan.tops, scan.deep)  # one store: a reader sees it whole
    return None


def parser_hazard(text: str) -> Optional[str]:
    """Why this text must not be given to libcst (one line), or None."""
    refused = hazard(text)
    return None if refused is None else refused[0]


#: The last text the scan accepted, its column-0 logical lines (see top_level_starts) and
#: whether its tree may be deeper than limits.SHALLOW_DEPTH (see needs_room).
_LAST_SCAN: list[tuple[str, list[tuple[int, str]], bool]] = [("", [], False)]
#: Words that continue a compound statement begun on an earlier line.
_CONTINUING = frozenset({"else", "elif", "except", "finally"})


def top_level_starts(text: str) -> Optional[list[int]]:
    """Offsets where the top-level statements of `text` begin (a decorated definition at its
    first decorator), as the token scan saw them when `text` (this very object) was the last text
    it accepted; None otherwise. One offset per statement of libcst's Module.body when the text
    has no form feed before a statement (the scan reads such a line as indented)."""
    scanned, tops, _ = _LAST_SCAN[0]
    if scanned is not text:
        return None
    starts: list[int] = []
    decorated = False
    for pos, word in tops:
        if word in _CONTINUING:
            decorated = False
            continue
        if not decorated:
            starts.append(pos)
        decorated = word == "@"
    return starts


def comment_spans(text: str) -> Optional[list[tuple[int, int]]]:
    """(start, end) of every comment of `text`, as the token scan finds them, or None when the
    scan stops at a limit before the end."""
    scan = _Scan(text)
    scan.comments = []
    try:
        scan.code(0)
    except _Refused:
        return None
    return scan.comments


def needs_room(text: str) -> bool:
    """Whether the tree of `text` may be deeper than limits.SHALLOW_DEPTH levels, as the scan
    counts them (see limits.py): its analysis then runs with room to recurse (`with_room`)."""
    scanned, _, deep = _LAST_SCAN[0]
    if scanned is not text:
        if hazard(text) is not None:
            return False  # refused before the parser: nothing is analysed
        scanned, _, deep = _LAST_SCAN[0]
    return deep


# -- lines and positions ----------------------------------------------------------------------------

def position(text: str, offset: int) -> tuple[int, int]:
    """(1-based line, 0-based column) of a character offset, lines as Python's tokenizer counts them."""
    starts = textlines.line_starts(text)
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index]


# -- parsing ----------------------------------------------------------------------------------------

_PARSER_PREFIX = re.compile(r"^(?:parser error: |tokenizer error: )?(?:error at \d+:\d+: )?")


def python_syntax_error(text: str) -> Optional[SyntaxError]:
    """The running Python's own verdict on `text`: its SyntaxError, or None when it compiles."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are not our business
            compile(text, "<skiplint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return error
    except (RecursionError, MemoryError) as error:
        return SyntaxError(f"too complex for Python's parser ({type(error).__name__})")
    except (ValueError, OverflowError) as error:
        return SyntaxError(str(error))
    return None


def _python_failure(error: SyntaxError, text: str) -> ParseFailure:
    message = str(getattr(error, "msg", "") or error).splitlines()[0] if str(error) else "invalid syntax"
    line = error.lineno if isinstance(error.lineno, int) and error.lineno > 0 else 1
    col = error.offset - 1 if isinstance(error.offset, int) and error.offset > 0 else 0
    lines = textlines.lines(text)
    if line > len(lines):
        line, col = max(len(lines), 1), 0
    return ParseFailure(f"syntax error: {message}", line, col)




# -- parsing less: top-level statements already parsed, by their text -------------------------------
# skiplint parses with libcst as it ships (its validation of every node included). What it saves
# instead is parsing the same statement twice: a run over a project meets the same imports, the
# same helper classes and the same blocks in many files. A text is cut at its top-level statements
# (where the guard's scan saw each one begin, the line before it included); a statement whose text
# was met before in this run is parsed once and its libcst nodes reused (they are immutable). A
# text less than half of which was met before is parsed whole, as libcst parses it, so a run over
# files that share little pays one hash per statement. tests/test_parsing.py holds the module made
# of statements to libcst's own parse of the whole text, node for node.

#: Texts whose statement starts are not told by line counts (see positions._DROPPED_BY_LIBCST).
_UNCOUNTED = re.compile(r"\f|\\(?:\r\n|\r|\n)")


class StatementParts:
    """libcst modules of single top-level statements met more than once, by their text, within
    limits.PARSE_CACHE_CHARS characters (the oldest go first); and the hashes of the statements
    met once, so that only a statement met again is kept (a project that shares nothing keeps no
    tree)."""

    __slots__ = ("parts", "chars", "seen", "whole", "reused")

    def __init__(self) -> None:
        self.parts: dict[str, cst.Module] = {}
        self.chars = 0
        self.seen: set[int] = set()
        #: Texts parsed whole and statements reused (for tests and docs/performance.md).
        self.whole = 0
        self.reused = 0

    def parse(self, text: str) -> cst.Module:
        """The module of a text that the guard accepted (this very object was its last), from the
        statements met before where it has any, else from libcst's parse of the whole text;
        libcst's exceptions as its parse of the whole text raises them."""
        chunks = _statement_texts(text)
        if chunks is None or 2 * sum(len(chunk) for chunk in chunks
                                     if chunk in self.parts or hash(chunk) in self.seen) < len(text):
            if chunks is not None:  # less than half the text met before: one parse is cheaper
                self._remember(chunks)
            self.whole += 1
            return _libcst_parse(text)
        module = self._assemble(chunks)
        if module is None:
            self.whole += 1
            return _libcst_parse(text)
        return module

    def _remember(self, chunks: list[str]) -> None:
        if len(self.seen) > limits.PARSE_CACHE_SEEN:
            self.seen.clear()
        self.seen.update(hash(chunk) for chunk in chunks)

    def _part(self, chunk: str, used: set[int]) -> Optional[cst.Module]:
        """The module of one statement's text: the one kept, unless this text already used it."""
        import libcst as cst

        part = self.parts.get(chunk)
        if part is not None and id(part) not in used:
            self.reused += 1
            return part
        try:
            part = _libcst_parse(chunk)
        except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError, ValueError, TypeError):
            return None  # the whole text's parse says what is wrong
        key = hash(chunk)
        if key in self.seen and chunk not in self.parts:
            self.parts[chunk] = part
            self.chars += len(chunk)
            while self.chars > limits.PARSE_CACHE_CHARS and self.parts:
                oldest = next(iter(self.parts))
                self.chars -= len(oldest)
                del self.parts[oldest]
        self.seen.add(key)
        return part

    def _assemble(self, chunks: list[str]) -> Optional[cst.Module]:
        """The module of the text made of these statement texts, as libcst's whole parse builds
        it, or None when one cannot be told to be that (then the text is parsed whole)."""
        import libcst as cst

        body: list[Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]] = []
        used: set[int] = set()
        first: Optional[cst.Module] = None
        indent: Optional[str] = None
        pending: Sequence[cst.EmptyLine] = ()
        last: Optional[cst.Module] = None
        for chunk in chunks:
            part = self._part(chunk, used)
            if part is None or len(part.body) != 1:
                return None
            used.add(id(part))
            if first is None:
                first = part
            elif part.header or part.default_newline != first.default_newline:
                return None  # a part that reads its lines otherwise than the whole text
            statement = part.body[0]
            blocks = _opens_block(statement)
            if blocks is None:
                return None
            if blocks:  # libcst reads the text's indentation from its first indented block
                if indent is None:
                    indent = part.default_indent
                elif part.default_indent != indent:
                    return None
            if pending:  # what a part alone gives its footer, the whole text gives the next statement
                statement = statement.with_changes(leading_lines=(*pending, *statement.leading_lines))
            body.append(statement)
            pending = part.footer
            last = part
        if first is None or last is None:
            return None
        return cst.Module(body=body, header=first.header, footer=pending, encoding=first.encoding,
                          default_indent=indent if indent is not None else first.default_indent,
                          default_newline=first.default_newline, has_trailing_newline=last.has_trailing_newline)


def _statement_texts(text: str) -> Optional[list[str]]:
    """The text cut where each top-level statement's first line begins (a decorated definition at
    its first decorator; the first statement from the text's start), from the guard's scan of this
    very text; None when the statements cannot be told apart that way."""
    if _UNCOUNTED.search(text):
        return None
    tops = top_level_starts(text)
    if not tops:
        return None
    cuts = [0]
    for offset in tops[1:]:
        cut = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
        if cut <= cuts[-1]:
            return None
        cuts.append(cut)
    cuts.append(len(text))
    return [text[start:end] for start, end in zip(cuts, cuts[1:])]


def _opens_block(statement: cst.BaseStatement) -> Optional[bool]:
    """Whether libcst meets an indented block in this top-level statement, found by its first
    clause; None when that cannot tell (a one-line clause before an indented one)."""
    import libcst as cst

    if not isinstance(statement, cst.BaseCompoundStatement):
        return False
    if isinstance(statement.body, cst.IndentedBlock):
        return True
    later = [getattr(statement, name, None) for name in ("orelse", "handlers", "finalbody", "cases")]
    return None if any(later) else False


def _parse_with_blanks_after_keywords(text: str) -> Optional[cst.Module]:
    """The module of a text that Python accepts and libcst's validation refuses, with a blank
    after each `if` and `else` written against an opening parenthesis; else None.

    libcst's parser reads `x if c else(lambda: y)`, and then IfExp's validation raises TypeError
    on the parser's own node (LibCST issue 1061). With the blank, the tree is the same but for that
    whitespace; the module's code then differs from the text by those blanks, which the positions of
    findings allow for (skiplint.positions aligns the two). Only the analysis reads this tree: fix
    edits the text itself."""
    import io
    import tokenize

    import libcst as cst

    lines = io.StringIO(text, newline="").readlines()
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    blanks: list[int] = []
    try:
        previous: Optional[tokenize.TokenInfo] = None
        for token in tokenize.generate_tokens(iter(lines).__next__):
            if (previous is not None and previous.type == tokenize.NAME and previous.string in ("if", "else")
                    and token.string == "(" and token.start == previous.end):
                blanks.append(starts[token.start[0] - 1] + token.start[1])
            previous = token
    except (tokenize.TokenError, SyntaxError):
        return None
    if not blanks:
        return None
    bridged = text
    for offset in reversed(blanks):
        bridged = bridged[:offset] + " " + bridged[offset:]
    try:
        return _libcst_parse(bridged)
    except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError, ValueError, TypeError):
        return None


def _libcst_parse(text: str) -> cst.Module:
    """libcst's own parse of a text, as it ships."""
    import libcst as cst

    return cst.parse_module(text)


#: The statements this process has parsed (the session's, once sessions hold it).
PARTS = StatementParts()

class Memo(Protocol):
    """What parse_module asks of a memo of earlier parses (skiplint.reparse.Memo)."""

    def parse(self, text: str) -> Optional[cst.Module]: ...

    def keep(self, text: str, module: cst.Module) -> None: ...


#: The language server's memo of the document being analysed, if any.
_MEMO: contextvars.ContextVar[Optional[Memo]] = contextvars.ContextVar("skiplint_parse_memo", default=None)


@contextlib.contextmanager
def reusing(memo: Memo) -> Iterator[None]:
    """Within this block, the parse of `memo.target` reuses the statements of the memo's previous
    module that an edit did not touch (skiplint.reparse), and the memo keeps what it parses."""
    token = _MEMO.set(memo)
    try:
        yield
    finally:
        _MEMO.reset(token)


def parse_fragment(text: str) -> cst.Module:
    """The libcst module of a run of whole top-level statements cut from a text that the guard
    accepted (skiplint.reparse); ParseFailure when libcst cannot parse it alone."""
    import libcst as cst

    try:
        return _libcst_parse(text)
    except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError, ValueError, TypeError) as error:
        raise ParseFailure(f"cannot parse this part alone: {type(error).__name__}") from None


def parse_module(text: str, parts: Optional[StatementParts] = None) -> cst.Module:
    """The libcst module of `text`, or ParseFailure with a one-line reason and where it applies;
    `parts`: the statements parsed before that it may reuse (by default, this process's)."""
    refused = hazard(text)
    if refused is not None:
        reason, offset = refused
        raise ParseFailure(reason, *position(text, offset))
    memo = _MEMO.get()
    if memo is None:
        return _parse_checked(text, parts)
    module = memo.parse(text)
    if module is None:
        module = _parse_checked(text, parts)
    memo.keep(text, module)
    return module


def _parse_checked(text: str, parts: Optional[StatementParts] = None) -> cst.Module:
    """parse_module past the guard."""
    import libcst as cst

    try:
        return (parts or PARTS).parse(text)
    except cst.ParserSyntaxError as error:
        libcst_error = error
    except RecursionError:
        raise ParseFailure("nested too deeply for the parser (RecursionError)") from None
    except ValueError as error:
        raise ParseFailure(f"cannot parse: {error}") from None
    except (cst.CSTValidationError, TypeError) as error:  # libcst's validation of its own parser's nodes
        python_error = python_syntax_error(text)
        if python_error is not None:
            raise _python_failure(python_error, text) from None
        module = _parse_with_blanks_after_keywords(text)
        if module is None:
            raise ParseFailure(f"valid Python that libcst refuses: {error}") from None
        return module
    python_error = python_syntax_error(text)
    if python_error is not None:
        raise _python_failure(python_error, text) from None
    from skiplint import syntax

    module = syntax.parse_bridging_gaps(text)
    if module is not None:
        return module
    first = str(libcst_error.message).splitlines()[0] if libcst_error.message else ""
    message = _PARSER_PREFIX.sub("", first) or "invalid syntax"
    raise ParseFailure(f"valid Python that libcst cannot parse: {message}", libcst_error.raw_line,
                       libcst_error.raw_column) from None
