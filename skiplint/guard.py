"""Which texts libcst must not be given (`scan`): deep bracket nesting, long operator and
trailer chains, long elif chains, texts of too many tokens (the limits are in skiplint.limits).

Most texts are judged by the quick bounds below, a few passes of the regex engine; the others by
the token scan of skiplint.tokenscan. What the scan says of a text it accepts (`Scanned`: where its
top-level statements begin, whether its tree needs room to recurse) is what the parse by
statements, the location of findings and `with_room` read; the session's StatementParts keeps the
last one.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional, Union

from skiplint import limits
from skiplint.tokenscan import _STRING_REST, _Refused, _Scan


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


#: A word or one other character that is no blank: every token holds at least one, so their
#: count bounds the tokens.
_TOKENISH = re.compile(r"\w+|[^\w \t\f\r\n]")


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
                tokens = len(_TOKENISH.findall(quiet, start, match.start()))
                if tokens > longest:
                    return None
                deep = deep or (tokens > shallow and _deep_line(text[start:match.start()], elifs))
    if line < ends and quiet[line] not in " \t\f\r\n":
        tops.append((line, _head(text, line)))
    if ends - line > shallow:
        tokens = len(_TOKENISH.findall(quiet, line, ends))
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


class Scanned(NamedTuple):
    """What the guard's scan says of a text it accepts: its column-0 logical lines (offset and
    first word) and whether its tree may be deeper than limits.SHALLOW_DEPTH (see needs_room)."""

    text: str
    tops: list[tuple[int, str]]
    deep: bool

    def starts(self) -> list[int]:
        """Offsets where the top-level statements begin (a decorated definition at its first
        decorator). One offset per statement of libcst's Module.body when the text has no form
        feed before a statement (the scan reads such a line as indented)."""
        starts: list[int] = []
        decorated = False
        for pos, word in self.tops:
            if word in _CONTINUING:
                decorated = False
                continue
            if not decorated:
                starts.append(pos)
            decorated = word == "@"
        return starts


def scan(text: str) -> Union[Scanned, tuple[str, int]]:
    """What the scan says of a text libcst may be given, else why not (one line) and the offset
    where that shows."""
    quick = _quick_bounds(text)
    if quick is not None:
        return Scanned(text, *quick)
    scanner = _Scan(text)
    try:
        scanner.code(0)
    except _Refused as refused:
        return str(refused), refused.pos
    return Scanned(text, scanner.tops, scanner.deep)


#: Words that continue a compound statement begun on an earlier line.
_CONTINUING = frozenset({"else", "elif", "except", "finally"})


def comment_spans(text: str) -> Optional[list[tuple[int, int]]]:
    """(start, end) of every comment of `text`, as the token scan finds them, or None when the
    scan stops at a limit before the end."""
    scanner = _Scan(text)
    scanner.comments = []
    try:
        scanner.code(0)
    except _Refused:
        return None
    return scanner.comments
