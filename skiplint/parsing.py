"""The one way skiplint parses source: every libcst parse (engine, project index, fix, layout,
verify's static step) goes through `parse_module`, and libcst is used as it ships.

Before libcst sees a text, the guard (skiplint.guard) refuses what its native parser would crash
on or take minutes over. When libcst then fails, the running Python's own compile says where and
why, as flake8's E999 does; a text that Python accepts but libcst cannot read is parsed again with
the known gaps of libcst bridged (a parenthesized annotated-assignment target; `else(` that its
validation refuses), else reported as such. A top-level statement met before in the same session
is not parsed again (`StatementParts`)."""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
import warnings
from typing import Optional, Protocol, Sequence, Union

import libcst as cst

from skiplint import guard, limits, syntax, textlines
from skiplint.guard import Scanned


class ParseFailure(Exception):
    """The source could not be parsed: `str()` is the one-line reason; `line` (1-based) and `col`
    (0-based) say where, as the running Python reports it, when that is known."""

    def __init__(self, reason: str, line: int = 1, col: int = 0) -> None:
        super().__init__(reason)
        self.line = line
        self.col = col


# -- lines and positions ----------------------------------------------------------------------------

def position(text: str, offset: int) -> tuple[int, int]:
    """(1-based line, 0-based column) of a character offset, lines as Python's tokenizer counts them."""
    starts = textlines.line_starts(text)
    index = bisect.bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index]


# -- parsing ----------------------------------------------------------------------------------------

_PARSER_PREFIX = re.compile(r"^(?:parser error: |tokenizer error: )?(?:error at \d+:\d+: )?")


def python_syntax_error(text: str, compiler: bool = False) -> Optional[SyntaxError]:
    """The running Python's own verdict on `text`: its SyntaxError, or None when it parses (with
    `compiler`: when it compiles; the parse does not refuse `break` outside a loop, a repeated
    keyword argument, a `return` in a class body)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are not our business
            compile(text, "<skiplint>", "exec", 0 if compiler else ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        return error
    except (RecursionError, MemoryError) as error:
        if compiler:
            return python_syntax_error(text) or SyntaxError("too complex for Python's compiler")
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


# -- parsing less: top-level statements already parsed, by their text -------------------------------
# skiplint parses with libcst as it ships (its validation of every node included). What it saves
# instead is parsing the same statement twice: a run over a project meets the same imports, the
# same helper classes and the same blocks in many files. A text is cut at the start of the line where
# each top-level statement begins (the guard's scan saw it; the blank and comment lines before it
# stay with the statement above, and go to this one when the module is put together); one whose text
# was met before in this run is parsed once and its libcst nodes reused (they are immutable). A
# text less than half of which was met before is parsed whole, as libcst parses it, so a run over
# files that share little pays one hash per statement. tests/test_parsing.py holds the module made
# of statements to libcst's own parse of the whole text, node for node.

#: Texts whose statement starts are not told by line counts (see positions._DROPPED_BY_LIBCST).
UNCOUNTED = re.compile(r"\f|\\(?:\r\n|\r|\n)")


class StatementParts:
    """libcst modules of single top-level statements met more than once, by their text, within
    limits.PARSE_CACHE_CHARS characters (the oldest go first); and the hashes of the statements
    met once, so that only a statement met again is kept (a project that shares nothing keeps no
    tree)."""

    __slots__ = ("parts", "chars", "seen", "whole", "reused", "scanned")

    def __init__(self) -> None:
        self.parts: dict[str, cst.Module] = {}
        self.chars = 0
        self.seen: set[int] = set()
        #: Texts parsed whole and statements reused (for tests and docs/performance.md).
        self.whole = 0
        self.reused = 0
        #: The guard's verdict on the last text it accepted (see `scan`).
        self.scanned: Optional[Scanned] = None

    def scan(self, text: str) -> Union[Scanned, tuple[str, int]]:
        """The guard's verdict on `text` (guard.scan), remembered for this very text object: the
        parse, the location of its findings and `needs_room` all read it."""
        last = self.scanned
        if last is not None and last.text is text:
            return last
        found = guard.scan(text)
        if isinstance(found, Scanned):
            self.scanned = found
        return found

    def top_level_starts(self, text: str) -> Optional[list[int]]:
        """Where the top-level statements of `text` begin, as the guard's scan saw them (None when
        it refuses the text)."""
        found = self.scan(text)
        return found.starts() if isinstance(found, Scanned) else None

    def needs_room(self, text: str) -> bool:
        """Whether the tree of `text` may be deeper than limits.SHALLOW_DEPTH levels, as the scan
        counts them: its analysis then runs with room to recurse (positions.with_room)."""
        found = self.scan(text)
        return isinstance(found, Scanned) and found.deep

    def parse(self, text: str, starts: list[int]) -> cst.Module:
        """The module of a text that the guard accepted, whose top-level statements begin at
        `starts`, from the statements met before where it has any, else from libcst's parse of the
        whole text; libcst's exceptions as its parse of the whole text raises them."""
        chunks = _statement_texts(text, starts)
        if chunks is None or 2 * sum(len(chunk) for chunk in chunks
                                     if chunk in self.parts or hash(chunk) in self.seen) < len(text):
            if chunks is not None:  # less than half the text met before: one parse is cheaper
                if len(self.seen) > limits.PARSE_CACHE_SEEN:
                    self.seen.clear()
                self.seen.update(hash(chunk) for chunk in chunks)
            self.whole += 1
            return _libcst_parse(text)
        module = self._assemble(chunks)
        if module is None:
            self.whole += 1
            return _libcst_parse(text)
        return module

    def _part(self, chunk: str, used: set[int]) -> Optional[cst.Module]:
        """The module of one statement's text: the one kept, unless this text already used it."""
        part = self.parts.get(chunk)
        if part is not None and id(part) not in used:
            self.reused += 1
            return part
        try:
            part = _libcst_parse(chunk)
        except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError, ValueError, TypeError):
            return None  # the whole text's parse says what is wrong
        if part.code != chunk:
            # libcst does not give back every text it parses: blank lines before an indented comment
            # that ends a module are lost. Such a part cannot stand for its text: the whole is parsed.
            return None
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


def _statement_texts(text: str, tops: list[int]) -> Optional[list[str]]:
    """The text cut where each top-level statement's first line begins (`tops`, from the guard's
    scan; the first statement from the text's start); None when the statements cannot be told
    apart that way."""
    if UNCOUNTED.search(text):
        return None
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
    return cst.parse_module(text)


class Memo(Protocol):
    """What parse_module asks of a memo of earlier parses (skiplint.reparse.Memo)."""

    def parse(self, text: str) -> Optional[cst.Module]: ...

    def keep(self, text: str, module: cst.Module, starts: list[int]) -> None: ...


def parse_fragment(text: str) -> cst.Module:
    """The libcst module of a run of whole top-level statements cut from a text that the guard
    accepted (skiplint.reparse); ParseFailure when libcst cannot parse it alone."""
    try:
        return _libcst_parse(text)
    except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError, ValueError, TypeError) as error:
        raise ParseFailure(f"cannot parse this part alone: {type(error).__name__}") from None


def parse_module(text: str, parts: Optional[StatementParts] = None, memo: Optional[Memo] = None) -> cst.Module:
    """The libcst module of `text`, or ParseFailure with a one-line reason and where it applies.

    `parts`: the statements parsed before that it may reuse (none given: a parse of its own); `memo`:
    the memo of an edited document whose text this is (skiplint.reparse): the parse reuses the
    statements of the document's previous module that the edit did not touch, and the memo keeps
    what it parses. Only the parse of the document itself is given the memo, so parsing a module
    it imports never replaces what the memo keeps."""
    parts = parts if parts is not None else StatementParts()
    found = parts.scan(text)
    if not isinstance(found, Scanned):
        reason, offset = found
        raise ParseFailure(reason, *position(text, offset))
    starts = found.starts()
    module = memo.parse(text) if memo is not None else None
    if module is None:
        module = _parse_checked(text, parts, starts)
    if memo is not None:
        memo.keep(text, module, starts)
    return module


def _parse_checked(text: str, parts: StatementParts, starts: list[int]) -> cst.Module:
    """parse_module past the guard."""
    try:
        return parts.parse(text, starts)
    except cst.ParserSyntaxError as error:
        libcst_error = error
    except RecursionError:
        raise ParseFailure("nested too deeply for the parser (RecursionError)") from None
    except ValueError as error:
        raise ParseFailure(f"cannot parse: {error}") from None
    except (cst.CSTValidationError, TypeError) as error:  # libcst's validation of its own parser's nodes
        python_error = python_syntax_error(text)
        if python_error is not None:
            raise python_failure(python_error, text) from None
        module = _parse_with_blanks_after_keywords(text)
        if module is None:
            raise ParseFailure(f"valid Python that libcst refuses: {error}") from None
        return module
    python_error = python_syntax_error(text)
    if python_error is not None:
        raise python_failure(python_error, text) from None
    module = syntax.parse_bridging_gaps(text)
    if module is not None:
        return module
    first = str(libcst_error.message).splitlines()[0] if libcst_error.message else ""
    message = _PARSER_PREFIX.sub("", first) or "invalid syntax"
    raise ParseFailure(f"valid Python that libcst cannot parse: {message}", libcst_error.raw_line,
                       libcst_error.raw_column) from None
