"""The one way skiplint parses source: every libcst parse (engine, project index, fix, layout,
verify's static step) goes through `parse_module`.

Before libcst sees a text, `hazard` scans its tokens (a hand scan that never fails, so it works
the same on every Python and whatever syntax error the text has) and refuses what libcst's
recursive native parser would crash on or take minutes over: deep bracket nesting, long operator
and trailer chains, long elif chains and texts of too many tokens (the limits are in limits.py).
When libcst then fails, the running Python's own compile says where and why, as flake8's E999
does; a text that Python accepts but libcst cannot read is parsed again with the one known gap of
libcst's grammar bridged (a parenthesized annotated-assignment target), else reported as such.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import contextvars
import re
import sys
import types
import warnings
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Protocol

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


def python_failure(error: SyntaxError, text: str) -> ParseFailure:
    message = str(getattr(error, "msg", "") or error).splitlines()[0] if str(error) else "invalid syntax"
    line = error.lineno if isinstance(error.lineno, int) and error.lineno > 0 else 1
    col = error.offset - 1 if isinstance(error.offset, int) and error.offset > 0 else 0
    lines = textlines.lines(text)
    if line > len(lines):
        line, col = max(len(lines), 1), 0
    return ParseFailure(f"syntax error: {message}", line, col)




# -- libcst's parse, without checking again what its grammar guarantees --------------------------
# libcst validates every node it builds: CSTNode.__post_init__ calls the node's _validate, which
# rejects what a node built by hand may get wrong (a Name that is no identifier, an operator
# without the blanks it needs, unbalanced parentheses). A node of libcst's own parser cannot be
# wrong in these ways, since its grammar already requires them (libcst's source says as much
# at that method; where the two disagree, the validation is wrong: LibCST issue 1061 refuses
# `x if c else(lambda: y)`), and the checks cost 15% of a parse (1,000 generated model files:
# 9.5 s with them, 8.0 s without, the same trees).
#
# Which nodes skip them is decided per node, from the call stack alone, with no state that a
# parse sets and must undo: libcst's native parser (Rust, no Python frame of its own) builds each
# node by calling its class, so the __init__ of a node it builds is called straight from the
# Python frame that called the parser. _parse_natively is that frame for skiplint's parses and
# for nothing else: a node whose builder is its code skips the checks; every other node (another
# thread's, including one started without `threading`; a signal handler's, a trace function's or
# a finalizer's during the parse, since each runs in a frame of its own; fix's edits; every
# libcst.parse_module of anyone else, which keeps libcst's validation and its issue-1061 refusal)
# is built exactly as libcst builds it.
#
# That test lives in two process-wide changes, each made once and never undone, so no exception
# (Ctrl-C, a signal) can leave a half-restored libcst behind:
# - from the first parse, CSTNode.__post_init__ is _validate_unless_parsed, which calls what was
#   there before (libcst's own, which calls _validate) for every node but the parser's;
# - once the process has parsed _PLAIN_INITS_AFTER characters, each node class whose __init__ is
#   the one dataclasses writes takes one that sets the same fields from the same parameters and
#   then, unless the parser is the caller, calls __post_init__ as the dataclass one does.
# Nodes built by anyone else go through the same steps as before; they are the only change that
# can be seen, as the identity of those attributes (`cst.Name.__init__` is skiplint's function).

#: libcst's native parse_module, once looked up; False when this libcst has none (it is then
#: called through libcst.parse_module and validates everything, as libcst does).
_NATIVE_PARSE: object = None


def _validate(node: cst.CSTNode) -> None:
    """libcst's own CSTNode.__post_init__: what _LIBCST_POST_INIT is until it is read from libcst."""
    node._validate()


#: What CSTNode.__post_init__ was before _validate_unless_parsed took its place (libcst's own).
_LIBCST_POST_INIT: Callable[[cst.CSTNode], None] = _validate


def _parse_natively(parse: Callable[..., cst.Module], text: str) -> cst.Module:
    """libcst's native parse of `text`, as libcst.parse_module calls it for a str (encoding utf-8).
    This frame calls the parser and nothing else: the nodes whose __init__ it calls directly are
    the parser's (see _PARSER_CODE)."""
    return parse(text, encoding="utf-8")


#: The code of the frame that calls libcst's parser for skiplint (see above).
_PARSER_CODE = _parse_natively.__code__


def _validate_unless_parsed(node: cst.CSTNode) -> None:
    """CSTNode.__post_init__ from skiplint's first parse on: the one it replaced, for every node
    but those that libcst's parser builds for _parse_natively."""
    try:
        builder = sys._getframe(2).f_code  # 1 is the node's __init__, 2 what called it
    except ValueError:  # an __init__ called from C with no Python frame above it (a thread's target)
        builder = None
    if builder is not _PARSER_CODE:
        _LIBCST_POST_INIT(node)


#: Per node class of libcst (those whose __init__ is the one dataclasses writes: slots, no field
#: left out of __init__, CSTNode's __post_init__): (class, its __init__, the same __init__ that
#: leaves out the __post_init__ call when the parser is the caller). Built and installed once the
#: process has parsed _PLAIN_INITS_AFTER characters; None until then.
_PLAIN_INITS: Optional[tuple[tuple[type, Callable[..., None], Callable[..., None]], ...]] = None
#: Building them compiles one function per class, 16 ms for libcst 1.9's 172 classes, which the
#: parse of about 70,000 characters wins back (0.7 s over the 3.2 MB of the generated tree): a run
#: over a commit's few files never pays it, a run over a project pays it once per process.
_PLAIN_INITS_AFTER = 100_000
#: Characters this process has parsed so far.
_PARSED = 0


#: Code flags of a function that takes *args or **kwargs (inspect.CO_VARARGS, CO_VARKEYWORDS).
_CO_VARARGS, _CO_VARKEYWORDS = 0x04, 0x08
#: The names the plain __init__s use besides their parameters.
_GENERATED_NAMES = frozenset({"self", "getframe", "parser", "parsed"})


def _plain_inits(cst_node: type) -> tuple[tuple[type, Callable[..., None], Callable[..., None]], ...]:
    """For every node class whose __init__ dataclasses wrote, an __init__ that sets the same fields
    from the same parameters (names, kinds, defaults and default factories), through the slots'
    own descriptors, then calls __post_init__ unless its caller is _parse_natively. Over the 1,000
    generated files the whole check takes 8% less than with the dataclass __init__ and a no-op
    __post_init__ (6 interleaved rounds in one process: 10.27 s against 11.01 s): that one sets
    each field through object.__setattr__ (the nodes are frozen), then looks the hook up and calls
    it."""
    import dataclasses

    validate = cst_node.__dict__["__post_init__"]
    classes: dict[type, None] = {}  # every subclass, once, in a stable order
    pending: list[type] = [cst_node]
    while pending:
        subclasses: list[type] = type.__subclasses__(pending.pop())
        for sub in subclasses:
            if sub not in classes:
                classes[sub] = None
                pending.append(sub)
    source: list[str] = []
    names: dict[str, object] = {"getframe": sys._getframe, "parser": _PARSER_CODE}
    plan: list[tuple[type, types.FunctionType, str]] = []
    for number, cls in enumerate(classes):
        original = cls.__dict__.get("__init__")
        if (not isinstance(original, types.FunctionType) or original.__code__.co_filename != "<string>"
                or not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__
                or getattr(cls, "__post_init__", None) is not validate):
            continue  # not the __init__ that dataclasses writes, or more than libcst's own hook
        code = original.__code__
        positional, keyword = code.co_argcount - 1, code.co_kwonlyargcount
        parameters = code.co_varnames[1:1 + positional + keyword]
        fields = {field.name: field for field in dataclasses.fields(cls)}
        slots = [slot for slot in (_slot(cls, name) for name in parameters) if slot is not None]
        if (code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS) or set(parameters) != set(fields)
                or not all(field.init for field in fields.values()) or len(slots) != len(parameters)
                or not _GENERATED_NAMES.isdisjoint(parameters)):
            continue  # a field the generated code could not name
        defaults: dict[str, object] = dict(zip(parameters[positional - len(original.__defaults__ or ()):positional],
                                               original.__defaults__ or ()))
        defaults.update(original.__kwdefaults__ or {})
        signature = ", ".join(["self", *parameters[:positional], *(["*"] if keyword else []),
                               *parameters[positional:]])
        lines = [f"def init_{number}({signature}):"]
        for index, (name, slot) in enumerate(zip(parameters, slots)):
            setter = f"set_{number}_{index}"
            names[setter] = slot.__set__
            factory = fields[name].default_factory
            if factory is dataclasses.MISSING:
                lines.append(f" {setter}(self, {name})")
                continue
            unset, make = f"unset_{number}_{index}", f"make_{number}_{index}"
            names[unset], names[make] = defaults[name], factory
            lines.append(f" {setter}(self, {make}() if {name} is {unset} else {name})")
        lines += [" try:",
                  "  parsed = getframe(1).f_code is parser",
                  " except ValueError:",  # called from C with no Python frame above it
                  "  parsed = False",
                  " if not parsed:",
                  "  self.__post_init__()"]
        source.append("\n".join(lines))
        plan.append((cls, original, f"init_{number}"))
    exec(compile("\n\n".join(source) + "\n", "<skiplint.parsing plain inits>", "exec"), names)
    inits = []
    for cls, original, name in plan:
        fast = names[name]
        if isinstance(fast, types.FunctionType):
            fast.__defaults__, fast.__kwdefaults__ = original.__defaults__, original.__kwdefaults__
            fast.__annotations__, fast.__qualname__ = original.__annotations__, original.__qualname__
            fast.__module__ = original.__module__
            fast.__code__ = fast.__code__.replace(co_name=original.__code__.co_name)  # what errors name
            inits.append((cls, original, fast))
    return tuple(inits)


def _slot(cls: type, name: str) -> Optional[types.MemberDescriptorType]:
    """The slot that holds attribute `name` of cls's instances, else None."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            found = klass.__dict__[name]
            return found if isinstance(found, types.MemberDescriptorType) else None
    return None


def _native_parser(cst_module: types.ModuleType) -> Optional[Callable[..., cst.Module]]:
    """libcst's native parse_module, with CSTNode.__post_init__ made _validate_unless_parsed (and,
    past _PLAIN_INITS_AFTER characters, the plain __init__s installed); None for a libcst without
    a native parser or without validation in CSTNode.__post_init__, or on a Python without
    sys._getframe (libcst is then left as it is, and validates every node).

    No lock: every step can be cut short by an exception (Ctrl-C lands even between a `with`
    statement's acquire and its body, and a held lock would stop every later parse) and can be
    taken again or twice, by this thread or another, with the same result: a class keeps libcst's
    __init__ or takes its plain one, never a third; the hook read is never skiplint's own."""
    global _NATIVE_PARSE, _LIBCST_POST_INIT, _PLAIN_INITS
    if _NATIVE_PARSE is None:
        node = cst_module.CSTNode
        hook = node.__dict__.get("__post_init__")
        try:  # the import statement's own path: no Python frame (importlib's holds locks) once imported
            __import__("libcst.native")
        except ImportError:
            pass
        parse = getattr(sys.modules.get("libcst.native"), "parse_module", None)
        if parse is None or hook is None or not hasattr(node, "_validate") or not hasattr(sys, "_getframe"):
            _NATIVE_PARSE = False
        else:
            if hook is not _validate_unless_parsed:
                _LIBCST_POST_INIT = hook
                setattr(node, "__post_init__", _validate_unless_parsed)
            _NATIVE_PARSE = parse
    if _NATIVE_PARSE is False:
        return None
    if _PLAIN_INITS is None and _PARSED > _PLAIN_INITS_AFTER:
        inits = _plain_inits(cst_module.CSTNode)
        for cls, dataclass_init, fast in inits:
            if cls.__dict__.get("__init__") is dataclass_init:
                setattr(cls, "__init__", fast)
        _PLAIN_INITS = inits
    return _NATIVE_PARSE  # type: ignore[return-value]


def _parse_unchecked(text: str) -> cst.Module:
    """libcst.parse_module(text), without validating the nodes its parser builds."""
    import libcst as cst

    global _PARSED
    _PARSED += len(text)
    parse = _native_parser(cst)
    if parse is None:
        return cst.parse_module(text)  # a libcst that validates elsewhere: leave it as it is
    return _parse_natively(parse, text)


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
        return _parse_unchecked(text)
    except (cst.ParserSyntaxError, RecursionError, ValueError, TypeError) as error:
        raise ParseFailure(f"cannot parse this part alone: {type(error).__name__}") from None


def parse_module(text: str) -> cst.Module:
    """The libcst module of `text`, or ParseFailure with a one-line reason and where it applies."""
    refused = hazard(text)
    if refused is not None:
        reason, offset = refused
        raise ParseFailure(reason, *position(text, offset))
    memo = _MEMO.get()
    if memo is None:
        return _parse_checked(text)
    module = memo.parse(text)
    if module is None:
        module = _parse_checked(text)
    memo.keep(text, module)
    return module


def _parse_checked(text: str) -> cst.Module:
    """parse_module past the guard."""
    import libcst as cst

    try:
        return _parse_unchecked(text)
    except cst.ParserSyntaxError as error:
        libcst_error = error
    except RecursionError:
        raise ParseFailure("nested too deeply for the parser (RecursionError)") from None
    except (ValueError, TypeError) as error:
        raise ParseFailure(f"cannot parse: {error}") from None
    python_error = python_syntax_error(text)
    if python_error is not None:
        raise python_failure(python_error, text) from None
    from skiplint import syntax

    module = syntax.parse_bridging_gaps(text)
    if module is not None:
        return module
    first = str(libcst_error.message).splitlines()[0] if libcst_error.message else ""
    message = _PARSER_PREFIX.sub("", first) or "invalid syntax"
    raise ParseFailure(f"valid Python that libcst cannot parse: {message}", libcst_error.raw_line,
                       libcst_error.raw_column) from None
