"""What a rule's fixer (`Rule.fixer`) reads and returns: the file as Python parses it, and the
edits. It depends on neither skiplint.fix nor the rules, so that a fixer in its family module can
import it."""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from skiplint import sources

if TYPE_CHECKING:
    from skiplint.diagnostics import Diagnostic

#: Where the skip API lives for each `--target`: (the skip package, the module that contains it).
TARGETS: dict[str, tuple[str, str]] = {
    "torchgpipe": ("torchgpipe.skip", "torchgpipe"),
    "fairscale": ("fairscale.nn.pipe.skip", "fairscale.nn.pipe"),
}

_NOWHERE = "Python's parser puts no such node at the reported position"


class NotFixable(Exception):
    """This occurrence has no mechanical rewrite (the message says why)."""


@dataclass(frozen=True)
class Edit:
    """Replace the characters [start, end) of the source with `text`."""

    start: int
    end: int
    text: str


class Source:
    """A module's text and its `ast`, with exact character offsets for nodes and tokens: what a
    rule's fixer (`Rule.fixer`) reads to plan its edits."""

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            self.tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            raise NotFixable(f"Python cannot parse the file ({type(error).__name__})") from None
        self.starts = sources.line_starts(text)
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent

    def offset(self, line: int, col_bytes: int) -> int:
        """The character offset of `ast`'s (1-based line, UTF-8 byte column)."""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        head = self.text[start:end].encode("utf-8", "surrogatepass")[:col_bytes]
        return start + len(head.decode("utf-8", "surrogatepass"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_line is None or end_col is None:
            raise NotFixable("Python gives no end position for the node")
        return self.offset(node.lineno, node.col_offset), self.offset(end_line, end_col)  # type: ignore[attr-defined]

    def nodes(self, diagnostic: Diagnostic, kinds: Union[type, tuple[type, ...]]) -> list[ast.AST]:
        """The nodes of these kinds that span the finding's range (its start, and its end where
        the finding knows it), outermost first; NotFixable when there is none."""
        def offset(line: int, col: int) -> int:
            if not 1 <= line <= len(self.starts):
                raise NotFixable(_NOWHERE)
            return self.starts[line - 1] + col

        start = offset(diagnostic.line, diagnostic.col)
        end = offset(diagnostic.end_line, diagnostic.end_col) if diagnostic.end_line else None
        found = []
        for node in ast.walk(self.tree):
            if isinstance(node, kinds) and getattr(node, "lineno", None) == diagnostic.line:
                span = self.span(node)
                if span[0] == start and (end is None or span[1] == end):
                    found.append(node)
        if not found:
            raise NotFixable(_NOWHERE)
        return sorted(found, key=self.depth)

    def depth(self, node: ast.AST) -> int:
        depth = 0
        while node in self.parents:
            node = self.parents[node]
            depth += 1
        return depth

    def tokens(self, node: ast.AST) -> list[tuple[str, int, int]]:
        """The significant tokens of a statement: (string, start offset, end offset)."""
        start, end = self.span(node)
        segment = self.text[start:end]
        starts = sources.line_starts(segment)
        out = []
        try:
            for token in tokenize.generate_tokens(io.StringIO(segment, newline="").readline):
                if token.type in (tokenize.NAME, tokenize.OP):
                    (row, col), (end_row, end_col) = token.start, token.end
                    out.append((token.string, start + starts[row - 1] + col, start + starts[end_row - 1] + end_col))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            raise NotFixable("the statement could not be tokenized on its own") from None
        return out
