"""The lines of source text, as Python's tokenizer counts them: the one place that says where a
line ends (sources, parsing and the position finding all read lines through it)."""

from __future__ import annotations

import re

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def lines(text: str) -> list[str]:
    """The lines of source text without their breaks, as Python's tokenizer, flake8 and editors
    count them: only CR LF, CR and LF end a line (not the form feed, U+2028 or the other breaks
    that `str.splitlines` also splits on)."""
    if not text:
        return []
    parts = _LINE_BREAK.split(text)
    if parts[-1] == "":
        parts.pop()
    return parts


def line_starts(text: str) -> list[int]:
    """Offset of the first character of each line (the same lines as `lines`; one more start
    when the text ends with a line break)."""
    return [0] + [match.end() for match in _LINE_BREAK.finditer(text)]
