"""Where reported nodes are in the source: `Locator` finds the span of a few nodes of a libcst
module at once, by generating the code of only the top-level statements that hold them (or of the
module, keeping only the targets' spans, when the statements cannot be told apart) and aligning
the generated code with the source where libcst leaves characters out. `with_room` and
`with_deep_stack` give the code generator, and the analysis, the stack a deep tree needs.
"""

from __future__ import annotations

import bisect
import difflib
import os
import re
import sys
import threading
from typing import Any, Callable, Iterable, Optional, Sequence, TypeVar

import libcst as cst
from libcst._nodes.internal import CodegenState  # private in libcst, stable across 1.x

from skiplint import limits, syntax, textlines
from skiplint.limits import MAX_ALIGN_CHARS

T = TypeVar("T")


class _Roomy(threading.Thread):
    """The thread with_deep_stack starts: work already in one needs no other."""


def _roomy() -> bool:
    return isinstance(threading.current_thread(), _Roomy)


def with_deep_stack(func: Callable[[], T]) -> T:
    """Run `func` in a thread with a large stack and recursion limit (libcst's code generator,
    its visitors and the analysis recurse once or more per level of a tree; limits.py says how
    much): limits.DEEP_STACK_BYTES of stack, limits.DEEP_RECURSION frames. Still raises
    RecursionError past them. Where no such thread can be started (a process short of memory or
    threads), `func` runs where it is."""
    if _roomy():
        return func()
    result: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(func())
        except BaseException as error:  # re-raised in the caller's thread
            errors.append(error)

    old_limit, old_size = sys.getrecursionlimit(), threading.stack_size()
    try:
        try:
            threading.stack_size(limits.DEEP_STACK_BYTES)
            worker = _Roomy(target=target, name="skiplint-deep-stack")
            sys.setrecursionlimit(max(old_limit, limits.DEEP_RECURSION))
            worker.start()
        except (RuntimeError, ValueError, MemoryError):
            sys.setrecursionlimit(old_limit)
            return func()
        worker.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)
    if errors:
        raise errors[0]
    return result[0]


def with_room(deep: bool, func: Callable[[], T]) -> T:
    """`func()`, the work on a tree: where it is when the tree is shallow, else (`deep`: the
    guard's scan says it may be deeper than limits.SHALLOW_DEPTH) in a thread with room to
    recurse, so that the same text is analysed alike whatever the caller's own stack holds. A
    RecursionError where it is (a caller that left little of the recursion limit) is retried
    there too."""
    if not deep:
        try:
            return func()
        except RecursionError:
            if _roomy():
                raise
    return with_deep_stack(func)


def _breaks(value: str) -> tuple[int, int]:
    """(line breaks in `value`, offset just after the last one or -1), counting CR LF, CR and LF
    as Python's tokenizer does: one break each."""
    count = value.count("\n") + value.count("\r") - value.count("\r\n")
    if not count:
        return 0, -1
    return count, max(value.rfind("\n"), value.rfind("\r")) + 1


class _Targeted(CodegenState):
    """libcst's code generator, keeping only the span of a few target nodes: the start
    PositionProvider gives (the first token after leading trivia and the node's own opening
    parentheses; the keyword of a decorated def/class) and the end of its last token before its
    own closing parentheses, at the cost of a plain code generation instead of a position for
    every node of the module. Lines are counted as Python counts them (CR, LF and CR LF)."""

    def __init__(self, targets: dict[int, cst.CSTNode], module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets = targets
        self.found: dict[int, tuple[int, int]] = {}
        self.ends: dict[int, tuple[int, int]] = {}
        #: [node id, opening parentheses still to skip, keyword awaited (def/class) or None]
        self.pending: list[list[Any]] = []
        self.line, self.column = 1, 0
        #: Where the last few significant (not blank, not comment) tokens ended, newest last.
        self.recent: list[tuple[int, int]] = [(1, 0)]

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            lpar = getattr(node, "lpar", ())
            keyword = ("def", "async", "class") if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else None
            self.pending.append([id(node), len(lpar) if isinstance(lpar, Sequence) else 0, keyword])

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            rpar = getattr(node, "rpar", ())
            closing = len(rpar) if isinstance(rpar, Sequence) else 0
            self.ends[id(node)] = self.recent[-1 - closing] if closing < len(self.recent) else self.recent[-1]

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if self.pending:
            self._settle(value)
        significant = value.strip(" \t\f\r\n\\")
        newlines, after = _breaks(value)
        if newlines:
            self.line += newlines
            self.column = len(value) - after
        else:
            self.column += len(value)
        if significant and not significant.startswith("#"):
            trailing = len(value) - len(value.rstrip(" \t\f\r\n\\"))
            end = (self.line, self.column - trailing) if trailing <= self.column else (self.line, self.column)
            self.recent.append(end)
            if len(self.recent) > 64:
                del self.recent[:32]

    def _settle(self, value: str) -> None:
        significant = value.lstrip(" \t\f\r\n\\")
        if not significant or significant.startswith("#"):
            return
        lead = value[: len(value) - len(significant)]
        newlines, after = _breaks(lead)
        line = self.line + newlines
        column = len(lead) - after if newlines else self.column + len(lead)
        waiting = []
        for entry in self.pending:
            node_id, parens, keyword = entry
            if keyword is not None:
                if significant in keyword:
                    self.found[node_id] = (line, column)
                else:
                    waiting.append(entry)
            elif parens and significant.startswith("("):
                entry[1] = parens - 1
                waiting.append(entry)
            else:
                self.found[node_id] = (line, column)
        self.pending = waiting


def _holders(module: cst.Module, targets: dict[int, cst.CSTNode]) -> Optional[dict[int, list[int]]]:
    """For each top-level statement that holds targets, their ids (None when one is not found).
    Reported nodes are never whitespace or punctuation, which syntax.walk leaves out."""
    left = set(targets)
    out: dict[int, list[int]] = {}
    for index, statement in enumerate(module.body):
        for node in syntax.walk(statement, into_scopes=True):
            if id(node) in left:
                left.discard(id(node))
                out.setdefault(index, []).append(id(node))
        if not left:
            return out
    return None


def scanned_lines(module: cst.Module, text: str, scanned: Optional[list[int]]) -> Optional[list[int]]:
    """The line where the code of each top-level statement of `module` begins (its leading blank and
    comment lines included), from where the guard's token scan of `text` saw the statements begin
    (`scanned`); None when it saw another number of them."""
    if scanned is None or len(scanned) != len(module.body):
        return None
    breaks = textlines.line_starts(text)
    found = []
    for statement, offset in zip(module.body, scanned):
        leading = len(statement.leading_lines)
        decorators: Sequence[cst.Decorator] = getattr(statement, "decorators", ())
        if decorators:
            leading += len(decorators[0].leading_lines)
        found.append(bisect.bisect_right(breaks, offset) - leading)
    return found


#: What libcst's code generation may drop from a module or repeat in it: a line holding only a
#: backslash, form feeds (dropped before an indent, or copied into the indentation it reuses).
_DROPPED_BY_LIBCST = re.compile(r"(?:\A|(?<=[\r\n]))[ \t\f]*\\(?:\r\n|\r|\n)|\f")


def _by_statement(module: cst.Module, text: str, scanned: Optional[list[int]], targets: dict[int, cst.CSTNode]
                  ) -> Optional[tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]]:
    """The targets' start and end positions from the code of only the top-level statements that hold them, each
    generated from its own first line; None (generate the whole module) when a statement's
    start cannot be told, or its code is not the source's text at that line."""
    if _DROPPED_BY_LIBCST.search(text):
        return None  # blank-looking lines would match the wrong lines: the whole module, then _moved
    holders = _holders(module, targets)
    if holders is None:
        return None
    starts = scanned_lines(module, text, scanned)
    if starts is None:
        return None
    offsets = [0]
    found: dict[int, tuple[int, int]] = {}
    ends: dict[int, tuple[int, int]] = {}
    for index in sorted(holders):
        line = starts[index]
        if line < 1:
            return None
        while len(offsets) < line:
            newline = text.find("\n", offsets[-1])
            if newline < 0:
                return None
            offsets.append(newline + 1)
        state = _Targeted({key: targets[key] for key in holders[index]}, module)
        state.line = line
        module.body[index]._codegen(state)
        code = "".join(state.tokens)
        if not text.startswith(code, offsets[line - 1]):
            return None
        found.update(state.found)
        ends.update(state.ends)
    return found, ends


def _kept(text: str) -> tuple[str, list[int], list[int]]:
    """`text` without what _DROPPED_BY_LIBCST matches, with its kept runs: where each run starts
    in the result and in `text` (two parallel sorted lists)."""
    runs: list[str] = []
    kept_at, text_at = [0], [0]
    size = 0
    for dropped in _DROPPED_BY_LIBCST.finditer(text):
        start, end = dropped.span()
        runs.append(text[text_at[-1]:start])
        size += start - text_at[-1]
        kept_at.append(size)
        text_at.append(end)
    runs.append(text[text_at[-1]:])
    return "".join(runs), kept_at, text_at


def _lines(text: str) -> list[int]:
    """Where each line of `text` begins (no empty line after a final line break)."""
    starts = textlines.line_starts(text)
    if len(starts) > 1 and starts[-1] == len(text):
        starts.pop()
    return starts


def _blocks(a: str, b: str) -> list[difflib.Match]:
    return [block for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
            if block.size]


def _in_blocks(blocks: list[difflib.Match], offset: int) -> Optional[int]:
    index = bisect.bisect_right([block.a for block in blocks], offset) - 1
    if index < 0 or offset >= blocks[index].a + blocks[index].size:
        return None
    return blocks[index].b + offset - blocks[index].a


def _matched(a: str, b: str) -> Optional[Callable[[int], Optional[int]]]:
    """A map from offsets of characters in `a` to offsets of the same characters in `b`, None
    for a character `b` lacks; None when the texts differ by more than limits.MAX_ALIGN_CHARS.

    Texts of as many lines are aligned line by line, and only the lines that differ character
    by character; other texts only in the middle where they differ, after their common
    beginning and end. The character alignment (difflib's) takes about the cube of its length."""
    if a == b:
        return lambda offset: offset
    a_lines, b_lines = _lines(a), _lines(b)
    if len(a_lines) == len(b_lines):
        a_lines.append(len(a))
        b_lines.append(len(b))
        pairs: dict[int, tuple[str, str]] = {}
        spent = 0
        for row in range(len(a_lines) - 1):
            one, other = a[a_lines[row]:a_lines[row + 1]], b[b_lines[row]:b_lines[row + 1]]
            if one != other:
                spent += len(one) + len(other)
                if spent > MAX_ALIGN_CHARS:
                    return None
                pairs[row] = one, other
        differing = {row: _blocks(one, other) for row, (one, other) in pairs.items()}

        def by_line(offset: int) -> Optional[int]:
            row = bisect.bisect_right(a_lines, offset) - 1
            column = offset - a_lines[row]
            if row in differing:
                moved = _in_blocks(differing[row], column)
                return None if moved is None else b_lines[row] + moved
            return b_lines[row] + column
        return by_line
    head = len(os.path.commonprefix([a, b]))
    tail = min(len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]])), len(a) - head, len(b) - head)
    if len(a) + len(b) - 2 * (head + tail) > MAX_ALIGN_CHARS:
        return None
    blocks = _blocks(a[head:len(a) - tail], b[head:len(b) - tail])

    def by_middle(offset: int) -> Optional[int]:
        if offset < head:
            return offset
        if offset >= len(a) - tail:
            return offset + len(b) - len(a)
        moved = _in_blocks(blocks, offset - head)
        return None if moved is None else head + moved
    return by_middle


def _aligned(generated: str, source: str) -> Optional[Callable[[int], Optional[int]]]:
    """A map from offsets of characters in libcst's `generated` code to the offsets of the same
    characters in `source` (None for a character the source lacks), or None when the two cannot
    be aligned within limits.MAX_ALIGN_CHARS.

    The texts are compared without what libcst drops or repeats (_DROPPED_BY_LIBCST), in linear
    time; they are then normally equal, else differ in a few lines (the indentation libcst gives
    a statement after a line holding only a backslash, a final CR it leaves out)."""
    plain, plain_at, generated_at = _kept(generated)
    same, same_at, source_at = _kept(source)
    inner = _matched(plain, same)
    if inner is None:
        return None

    def through(offset: int) -> Optional[int]:
        run = bisect.bisect_right(generated_at, offset) - 1
        kept = plain_at[run] + offset - generated_at[run]
        if run + 1 < len(plain_at) and kept >= plain_at[run + 1]:
            return None  # a character libcst added
        moved = inner(kept)
        if moved is None:
            return None
        back = bisect.bisect_right(same_at, moved) - 1
        return source_at[back] + moved - same_at[back]
    return through


def _moved(generated: str, source: str, starts: dict[int, tuple[int, int]], ends: dict[int, tuple[int, int]]
           ) -> Optional[tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]]:
    """Spans in libcst's generated code moved to the source text. The code generator rewrites a
    little of what Python's tokenizer skips (a line holding only a backslash, a form feed before
    an indent), so the two texts are aligned (see _aligned) and every reported token, which lies
    in text both share, is moved with it. None when one does not lie in shared text, or the texts
    differ too much to align."""
    through = _aligned(generated, source)
    if through is None:
        return None
    g_lines, s_lines = textlines.line_starts(generated), textlines.line_starts(source)

    def point(line: int, column: int, end: bool) -> Optional[tuple[int, int]]:
        if not 0 < line <= len(g_lines):
            return None
        offset = g_lines[line - 1] + column - end  # an end is just after its last character
        if not 0 <= offset < len(generated):
            return None
        moved = through(offset)
        if moved is None:
            return None
        row = bisect.bisect_right(s_lines, moved) - 1
        return row + 1, moved - s_lines[row] + end

    out: tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]] = ({}, {})
    for target, points, end in ((out[0], starts, False), (out[1], ends, True)):
        for key, (line, column) in points.items():
            found = point(line, column, end)
            if found is None:
                return None
            target[key] = found
    return out


class Locator:
    """Positions of a module's nodes, computed only for the nodes that are reported."""

    __slots__ = ("_module", "_found", "_ends", "_text", "_starts")

    def __init__(self, module: cst.Module, text: Optional[str] = None, starts: Optional[list[int]] = None) -> None:
        self._module = module
        self._found: dict[int, tuple[int, int]] = {}
        self._ends: dict[int, tuple[int, int]] = {}
        #: The module's source and where the guard's scan saw its top-level statements begin, when
        #: known: code is then generated only for the statements that hold a reported node (see
        #: _by_statement), not for the whole module.
        self._text = text
        self._starts = starts

    def locate(self, nodes: Iterable[cst.CSTNode]) -> None:
        """Find the spans of these nodes in one pass of code generation."""
        targets = {id(node): node for node in nodes if id(node) not in self._found}
        if not targets:
            return

        def generate() -> tuple[dict[int, tuple[int, int]], dict[int, tuple[int, int]]]:
            if self._text is not None:
                found = _by_statement(self._module, self._text, self._starts, targets)
                if found is not None:
                    return found
            state = _Targeted(targets, self._module)
            self._module._codegen(state)
            if self._text is not None:
                code = "".join(state.tokens)
                if code != self._text:  # libcst left characters out: read positions in the source
                    moved = _moved(code, self._text, state.found, state.ends)
                    if moved is not None:
                        return moved
            return state.found, state.ends
        try:
            found, ends = generate()
        except RecursionError:  # a long expression: retry with room to recurse
            found, ends = with_deep_stack(generate)
        self._found.update(found)
        self._ends.update(ends)
        for node_id in targets:
            self._found.setdefault(node_id, (1, 0))  # a node not in this module: the file's start
            self._ends.setdefault(node_id, self._found[node_id])

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        """(1-based line, 0-based column) of the node's first token."""
        if id(node) not in self._found:
            self.locate((node,))
        return self._found[id(node)]

    def end(self, node: cst.CSTNode) -> tuple[int, int]:
        """(1-based line, 0-based column) just after the node's last token (its own closing
        parentheses excluded, as its start excludes its opening ones)."""
        self.position(node)  # located, if it was not
        return self._ends[id(node)]
