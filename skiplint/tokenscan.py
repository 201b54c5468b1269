"""The guard's token scan: one pass over a text's tokens, by hand (it never fails, so it works the
same on every Python and whatever syntax error the text has), that counts what libcst's recursive
native parser would crash on or take minutes over (skiplint.guard decides with it; the limits are
in skiplint.limits).
"""

from __future__ import annotations

import re
from typing import Optional

from skiplint import limits


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


def _columns(indentation: str, col: int = 0, altcol: int = 0) -> tuple[int, int]:
    """(col, altcol) of a line's indentation (after `col` and `altcol`), as Python's tokenizer
    counts them."""
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
        col, altcol = _columns(indent.group(), col, altcol)
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


#: The kinds of token that count as one operator or operand where they stand (a colon counts as
#: one in a lambda, whose body continues its expression).
_OPERATORS = frozenset({"name", "op", "number", "word", "lambda", "other", "close"})


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
                self.rooms[:] = [self.room(level) for level in range(len(self.bases))]
            if levels > limits.MAX_DEPTH:
                raise _Refused(f"nested too deeply to parse (more than {limits.MAX_DEPTH:,} levels of "
                               f"operators, operands and elif branches at once)", pos)

    def room(self, level: int) -> int:
        """How far the run of bracket level `level` may grow before `count` has something to say."""
        if self.deep:
            return min(limits.MAX_EXPRESSION_RUN, limits.MAX_DEPTH - self.bases[level])
        return min(limits.MAX_EXPRESSION_RUN, limits.SHALLOW_DEPTH - self.bases[level] - 2 * level)

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

    def code(self, pos: int, field: bool = False) -> int:
        """Scan code from `pos`; in an f-string field, stop after its closing brace.

        The common tokens are counted inline (the same arithmetic as count and open), with the
        token count and depth in locals written back before any other method runs: this loop meets
        every token of every checked file."""
        text, end = self.text, len(self.text)
        base = self.depth
        runs, bases, rooms, lambdas = self.runs, self.bases, self.rooms, self.lambdas
        tokens, depth, line_start = self.tokens, self.depth, self.line_start
        most_tokens, deepest = limits.MAX_TOKENS, limits.MAX_NESTING
        longest_run, deepest_tree, shallow = limits.MAX_EXPRESSION_RUN, limits.MAX_DEPTH, limits.SHALLOW_DEPTH
        room = rooms[-1] = self.room(depth)  # past it, count, opening or reach decide
        match_token, operators = _TOKEN.match, _OPERATORS
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
                    _lone_backslash(self, match.start(kind), pos)
                elif kind == "comment" and self.comments is not None:
                    self.comments.append((match.start(kind), pos))
                continue
            if line_start and depth == 0:
                line_start = False
                word = match.group(kind) if kind == "name" or kind == "word" or kind == "lambda" else ""
                self.statement(match.start(kind), word)
                room = rooms[-1]
            if kind in operators or (kind == "colon" and lambdas[-1] and not (field and depth == base)):
                if kind == "close":
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
                elif kind == "lambda":
                    lambdas[-1] += 1
                elif kind == "colon":
                    lambdas[-1] -= 1  # a lambda's body continues its expression
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
            elif kind == "colon" and field and depth == base:
                self.tokens, self.depth, self.line_start = tokens, depth, line_start
                return self.fstring_spec(pos)
            elif kind == "separator" or kind == "colon":
                tokens += 1
                if tokens > most_tokens:
                    self.tokens, self.line_start = tokens - 1, line_start
                    self.count(match.start(kind))  # raises: one token too many
                runs[-1] = 0
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


def _lone_backslash(scan: _Scan, start: int, after: int) -> None:
    """A logical line of `scan` that begins with backslash continuations (lines holding only
    `\\`). libcst, like Python 3.9, keeps the statement that follows in the block of the line before.
    Python 3.10 and later indent it as the first of those backslashes that is not in column
    0, else as its own line (see `_continued_columns`). Where the two differ, the file's
    blocks depend on the Python that runs it: refused on every Python, so that every Python
    gives the same verdict. Where they agree (the same columns, however spelled with form
    feeds, or several backslash lines in a row), the text is accepted."""
    if scan.judged == scan.line_pos:
        return  # a later backslash of a logical line already judged at its first
    scan.judged = scan.line_pos
    columns = _continued_columns(scan.text, scan.line_pos)
    if columns is None:
        return  # no statement follows on the continued lines
    if columns != _columns(scan.indentation):
        raise _Refused("a line holding only a backslash before a change of indentation (Python 3.10+ "
                       "puts the next statement in another block than libcst and Python 3.9 do)", start)
    scan.continued = True
