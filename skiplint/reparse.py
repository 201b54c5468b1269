"""Parse the next text of an edited document by re-parsing only the top-level statements the edit
touched, and reusing the previous module's other statements (the language server's path).

An edit changes the text between a common prefix and a common suffix. The statements of the
previous module whose code overlaps the change, and one statement on each side, are cut out of the
new text at statement boundaries (where a statement's leading blank and comment lines begin) and
parsed alone; the statements before and after are the previous module's own nodes. That is the
module a whole parse gives:

- a top-level statement begins at column 0 after the previous one's code is complete, so the code
  before the fragment, and after it, tokenizes as it did (the fragment must parse on its own, end
  at a line break and hold at least one statement);
- the neighbours absorb what an edit at a boundary may join: an indented line typed after a
  `def` belongs to it, a decorator typed before a class belongs to that class, comment lines
  after a block belong to the next statement or to the block, as the neighbour's own parse says;
- a fragment parsed alone gives its leading lines to `Module.header` and its trailing ones to
  `Module.footer`, which a whole parse gives to the statement after them: they are moved there;
- the module's own settings (indentation, line break, encoding) are read by libcst from the
  text's first indented line, first line break and first two lines: an edit that reaches any of
  them, and a fragment whose own reading differs, is parsed whole.

Anything else (a text libcst's code generation does not reproduce line for line: form feeds or
backslash continuation lines; statement starts the guard's scan cannot give) is parsed whole.
tests/test_reparse.py checks the result against a whole parse, node for node, over random edits.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Optional, Sequence

from skiplint import parsing, positions, textlines

if TYPE_CHECKING:
    import libcst as cst

_BREAK = re.compile(r"\r\n|\r|\n")


class Memo:
    """The last text parsed for one document, its module and where each top-level statement's code
    begins; `target` is the text the next parse may reuse it for (the document's new text)."""

    __slots__ = ("text", "module", "starts", "target", "reused")

    def __init__(self) -> None:
        self.text: Optional[str] = None
        self.module: Optional[cst.Module] = None
        self.starts: Optional[list[int]] = None
        self.target: Optional[str] = None
        #: How many parses were answered by statements (for tests and the benchmark).
        self.reused = 0

    def parse(self, text: str) -> Optional[cst.Module]:
        """The module of `text` from the previous one, or None: parse it whole."""
        if self.module is None or self.starts is None or self.text is None or text is not self.target:
            return None
        module = _reparse(self.text, self.module, self.starts, text)
        if module is not None:
            self.reused += 1
        return module

    def keep(self, text: str, module: cst.Module, tops: list[int]) -> None:
        """Remember `text`'s module for the next edit, when its statements (which begin at `tops`,
        from the guard's scan) can be told apart."""
        self.text, self.module, self.starts = text, module, None
        if text is self.target:
            self.starts = _starts(text, module, tops)


def _starts(text: str, module: cst.Module, tops: list[int]) -> Optional[list[int]]:
    """Where the code of each top-level statement begins (its leading lines included; the first
    at 0, with the module's header), from where the guard's scan saw them begin."""
    found = None if parsing.UNCOUNTED.search(text) else positions.scanned_lines(module, text, tops)
    if found is None or found and (found[0] != len(module.header) + 1 or min(found) < 1):
        return None
    breaks = textlines.line_starts(text)
    starts = [0 if index == 0 else breaks[line - 1] for index, line in enumerate(found)]
    return starts if all(a < b for a, b in zip(starts, starts[1:])) else None


def _common(old: str, new: str) -> tuple[int, int]:
    """The lengths of the common prefix and suffix of two texts (the suffix not overlapping it)."""
    short = min(len(old), len(new))
    low, high = 0, short
    while low < high:  # the longest prefix, by halves: each comparison is one C call
        middle = (low + high + 1) // 2
        if old[:middle] == new[:middle]:
            low = middle
        else:
            high = middle - 1
    prefix = low
    low, high = 0, short - prefix
    while low < high:
        middle = (low + high + 1) // 2
        if old[len(old) - middle:] == new[len(new) - middle:]:
            low = middle
        else:
            high = middle - 1
    return prefix, low


def _holding(starts: list[int], offset: int) -> int:
    """The index of the statement whose code holds `offset` (the last one at or before it)."""
    return max(bisect.bisect_right(starts, offset) - 1, 0)


def _first_block(body: Sequence[cst.BaseStatement]) -> Optional[int]:
    """The index of the first top-level statement with an indented block: libcst reads the
    module's indentation from the first block of the text, which lies in it."""
    import libcst as cst

    for index, statement in enumerate(body):
        if isinstance(statement, cst.BaseCompoundStatement) and isinstance(statement.body, cst.IndentedBlock):
            return index
    return None


def _reparse(old: str, module: cst.Module, starts: list[int], new: str) -> Optional[cst.Module]:
    import libcst as cst

    prefix, suffix = _common(old, new)
    body = module.body
    first = _holding(starts, prefix) - 1
    first_line = _BREAK.search(old)
    second_line = _BREAK.search(old, first_line.end()) if first_line is not None else None
    if first < 1 or second_line is None or starts[first] < second_line.end():
        return None  # the edit may reach the first line break or an encoding cookie
    last = min(_holding(starts, len(old) - suffix) + 1, len(body) - 1)
    delta = len(new) - len(old)
    begin = starts[first]
    end = starts[last + 1] + delta if last + 1 < len(body) else len(new)
    if end <= begin or end > len(new) or (end < len(new) and (
            new[end - 1] not in "\r\n" or new[end - 1:end + 1] == "\r\n")):
        return None  # not a line's start in the new text: the edit joined lines across the boundary
    try:
        part = parsing.parse_fragment(new[begin:end])
    except parsing.ParseFailure:
        return None
    if not part.body or part.default_newline != module.default_newline:
        return None
    block = _first_block(module.body)
    if _first_block(part.body) is not None:
        if part.default_indent != module.default_indent:
            return None  # the fragment's blocks were read with another indentation than the rest
    elif block is not None and first <= block <= last:
        return None  # the text's first block is gone: the indentation is read from a later one
    fresh = list(part.body)
    if part.header:
        fresh[0] = fresh[0].with_changes(leading_lines=(*part.header, *fresh[0].leading_lines))
    after = list(body[last + 1:])
    footer = module.footer
    if not after:
        footer = part.footer
    elif part.footer:
        after[0] = after[0].with_changes(leading_lines=(*part.footer, *after[0].leading_lines))
    has_trailing_newline = part.has_trailing_newline if not after else module.has_trailing_newline
    return cst.Module(body=(*body[:first], *fresh, *after), header=module.header, footer=footer,
                      encoding=module.encoding, default_indent=module.default_indent,
                      default_newline=module.default_newline, has_trailing_newline=has_trailing_newline)
