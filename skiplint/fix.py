"""`skiplint fix`: textual rewrites of the mechanical mistakes, SKP106, SKP107 and SKP401.

A fix is a small edit of the original text: characters inserted before and after the reported
node (SKP106, SKP107) or a module path replaced (SKP401). Each fixable rule carries its fixer
(`Rule.fixer`, in its family module under skiplint/rules/), which plans the edit from the finding
itself: the node that spans its range, as Python's own parser reads it, and its arguments. So
every character outside the edit (form feeds, continuation lines, comments, line endings, the
encoding) stays as it was. A fix is kept only when the edited file still parses and lints with no
finding, of any code, that it did not have before, and flake8's default checks (pyflakes,
pycodestyle) report nothing new on it; otherwise the file is left as it was for that finding and
the reason is printed.
"""

from __future__ import annotations

import argparse
import ast
import collections
import difflib
import functools
import io
import os
import re
import sys
import tokenize
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional, Sequence, TypeVar

from skiplint import apiimports, config, engine, filenoqa, parallel, parsing, prefilter, rules, sources, streams
from skiplint.diagnostics import Diagnostic, without_code
from skiplint.edits import TARGETS as TARGETS, Edit as Edit, NotFixable as NotFixable, Source as Source
from skiplint.rules import analyzer, one_class, portability
from skiplint.writes import EXIT_CHANGES, EXIT_OK, EXIT_UNCHECKED, Unwritten, inside, write_fix
from skiplint.session import Session

#: The codes `skiplint fix` rewrites: those of the rules that have a fixer, in the rules' order.
FIXABLE = tuple(code for code, rule in rules.RULES.items() if rule.fixer is not None)

#: File mode: 0 done (or nothing to fix), 1 --diff has changes or a file changed while it was
#: fixed, 2 a file could not be fixed or its fix could not be written.
#: Standard input mode (`fix -`), as the lint: 0 nothing left, 1 findings left, 2 could not check.
EXIT_CLEAN, EXIT_FINDINGS = 0, 1

#: Python's line breaks (its tokenizer's, not str.splitlines', which also breaks at \f, \x1c, U+2028),
#: and a line with its break.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r".*?(?:\r\n|\r|\n)|.+", re.S)


class _Flagged(NamedTuple):
    """A finding of flake8's default checks (pyflakes, pycodestyle): not skiplint's, so no rule's."""

    code: str
    line: int
    col: int
    message: str


#: A finding the "nothing new" comparisons read (code, line, message): skiplint's or flake8's.
_R = TypeVar("_R", Diagnostic, _Flagged)


@dataclass(frozen=True)
class FileFix:
    """What `skiplint fix` did to one file."""

    path: str
    original: str
    fixed: str
    applied: tuple[Diagnostic, ...]
    #: Findings of the fixable codes left in place, each with the reason.
    left: tuple[tuple[Diagnostic, str], ...]
    error: Optional[str] = None
    #: The edits of each applied fix, in order, each in the coordinates of the text it was applied to.
    edits: tuple[tuple[Edit, ...], ...] = ()
    #: Every finding of the fixed text (what `skiplint` reports on it).
    remaining: tuple[Diagnostic, ...] = ()
    #: Why the fix was not written (a link outside the paths given, a change made meanwhile, a
    #: write the file system refused); the file is as it was.
    unwritten: Optional[str] = None
    #: What not writing it costs in `skiplint fix`'s exit status (Unwritten.status).
    unwritten_status: int = EXIT_OK

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def splice(text: str, edits: Sequence[Edit]) -> str:
    """`text` with non-overlapping edits applied."""
    out, at = [], 0
    for edit in sorted(edits, key=lambda e: e.start):
        if edit.start < at:
            raise ValueError("overlapping edits")
        out.append(text[at:edit.start])
        out.append(edit.text)
        at = edit.end
    out.append(text[at:])
    return "".join(out)


def split_lines(text: str) -> list[str]:
    """The lines of `text` as Python counts them, each with its line break."""
    return _LINE.findall(text)


# -- planning the edit of one finding --------------------------------------------------------------

def plan(text: str, diagnostic: Diagnostic, target: str = "torchgpipe") -> list[Edit]:
    """The edits that fix one finding in `text`, by its rule's fixer; NotFixable when there is no
    mechanical rewrite."""
    source = Source(text)
    rule = rules.RULES.get(diagnostic.code)
    if rule is None or rule.fixer is None:
        raise NotFixable(f"{diagnostic.code} has no automatic fix")
    return list(rule.fixer(source, diagnostic, target))


# -- one file --------------------------------------------------------------------------------------

def _line_of(text: str, offset: int) -> int:
    return len(_LINE_BREAK.findall(text, 0, offset)) + 1


def _introduced(before: Sequence[_R], after: Sequence[_R], text: str,
                edits: Sequence[Edit], exact: bool = True) -> list[_R]:
    """Findings of `after` (the edited text) that `before` did not have: same code, same message
    (any message when not `exact`), same line once the lines the edits add or remove are taken
    into account."""
    mapping = []  # (first and last line of the edit in the edited text, its first line before, shift after it)
    total = 0
    for edit in sorted(edits, key=lambda e: e.start):
        first, last = _line_of(text, edit.start), _line_of(text, edit.end)
        delta = len(_LINE_BREAK.findall(edit.text)) - len(_LINE_BREAK.findall(text, edit.start, edit.end))
        mapping.append((first + total, last + total + delta, first, total + delta))
        total += delta

    def original_line(line: int) -> int:
        for new_first, new_last, first, shift in reversed(mapping):
            if line > new_last:
                return line - shift
            if line >= new_first:
                return first
        return line

    had = collections.Counter((d.code, d.line, d.message if exact else "") for d in before)
    new = []
    for diagnostic in after:
        key = (diagnostic.code, original_line(diagnostic.line), diagnostic.message if exact else "")
        if had[key] > 0:
            had[key] -= 1
        else:
            new.append(diagnostic)
    return new


def _gone(diagnostic: Diagnostic, before: Sequence[Diagnostic], after: Sequence[Diagnostic]) -> bool:
    """Whether the edit removed the finding: one fewer finding of its code and arguments."""
    def same(d: Diagnostic) -> bool:
        return d.code == diagnostic.code and d.args == diagnostic.args
    return sum(map(same, after)) < sum(map(same, before))


def _described(finding: _R) -> str:
    return f"{finding.code} at line {finding.line}: {without_code(finding.code, finding.message)}"


@dataclass(frozen=True)
class _Linted:
    """A text and its findings: those reported (the configured selection, after noqa) and every
    finding of every code, noqa ignored (what a fix must not add to)."""

    text: str
    reported: tuple[Diagnostic, ...]
    every: tuple[Diagnostic, ...]
    error: Optional[str]


def _lint(text: str, path: str, settings: config.Config, session: Optional[Session] = None) -> _Linted:
    session = session if session is not None else Session()
    reported = parallel.check_source(text, path, settings, session)
    if reported.error is not None:
        return _Linted(text, reported.diagnostics, (), reported.error)
    every = engine.check_text(text, path, engine.EVERYTHING, apply_noqa=False, max_unroll=settings.max_unroll,
                              session=session.configured(settings.api_aliases))
    return _Linted(text, reported.diagnostics, every.diagnostics, every.error)


def fix_source(text: str, path: str, settings: config.Config = config.Config(), target: str = "torchgpipe",
               codes: Sequence[str] = FIXABLE, session: Optional[Session] = None) -> FileFix:
    """Apply every fix that makes the file strictly better, one at a time, re-linting after each
    (with the caller's session, else one of its own). A file-level `# skiplint: noqa` or
    `# flake8: noqa` leaves the file alone, as the lint does."""
    if filenoqa.skips_file(text):
        return FileFix(path, text, text, (), ())
    session = session if session is not None else Session()
    state = _lint(text, path, settings, session)
    if state.error is not None:
        where = next(((d.line, d.col) for d in state.reported if d.code == analyzer.UNCHECKED_FILE.code), (1, 0))
        reason = state.error if where == (1, 0) else f"{state.error} at {where[0]}:{where[1] + 1}"
        return FileFix(path, text, text, (), (), reason, remaining=state.reported)
    compiles = any(d.code in codes for d in state.reported) and _compiles(text, path)
    applied: list[Diagnostic] = []
    edits: list[tuple[Edit, ...]] = []
    left: list[tuple[Diagnostic, str]] = []
    tried: set[tuple[str, int, int, tuple[tuple[str, str], ...]]] = set()
    for _ in range(4 * len(state.reported) + 8):
        pending = [d for d in state.reported
                   if d.code in codes and (d.code, d.line, d.col, d.args) not in tried]
        if not pending:
            break
        diagnostic = pending[0]
        tried.add((diagnostic.code, diagnostic.line, diagnostic.col, diagnostic.args))
        try:
            change = plan(state.text, diagnostic, target)
        except NotFixable as why:
            left.append((diagnostic, str(why)))
            continue
        outcome = _judged(diagnostic, state, change, path, settings, compiles, session)
        if isinstance(outcome, str):
            left.append((diagnostic, outcome))
            continue
        applied.append(diagnostic)
        edits.append(tuple(change))
        state = outcome
    return FileFix(path, text, state.text, tuple(applied), tuple(left), edits=tuple(edits),
                   remaining=state.reported)


def _judged(diagnostic: Diagnostic, before: _Linted, change: Sequence[Edit], path: str,
            settings: config.Config, compiles: bool, session: Session) -> "str | _Linted":
    """The edited text when it is strictly better than `before`, else why it is not."""
    candidate = splice(before.text, change)
    if compiles and not _compiles(candidate, path):
        return "the rewritten file would not compile"
    try:
        parsing.parse_module(candidate, session.parts)
    except parsing.ParseFailure as error:
        return f"the rewritten file would not parse: {error}"
    after = _lint(candidate, path, settings, session)
    if after.error is not None:
        return f"the rewritten file could not be checked: {after.error}"
    introduced = [d for d in _introduced(before.every, after.every, before.text, change)
                  if not _same_fact(diagnostic, d)]
    if introduced:
        return f"would introduce {_described(introduced[0])}"
    if not _gone(diagnostic, before.reported, after.reported):
        return "the rewritten file still has this finding"
    # flake8's default checks, as clean as they were: compared by code and line, since their
    # messages carry what the edit changes (a line's length).
    flagged = _introduced(flake8_findings(before.text, path), flake8_findings(candidate, path),
                          before.text, change, exact=False)
    if flagged:
        return f"would introduce {_described(flagged[0])} (flake8's default checks)"
    return after


def _same_fact(fixed: Diagnostic, new: Diagnostic) -> bool:
    """Whether `new` only says again what `fixed` said: a pop whose tensor the code discards is,
    once yielded, what SKP116 (opt-in) describes, on the same line."""
    return (fixed.code == one_class.COMMAND_NOT_YIELDED.code and fixed.arg("kind") == "pop"
            and new.code == one_class.DISCARDED_POP.code and new.line == fixed.line)


@functools.lru_cache(maxsize=1)
def _pycodestyle() -> tuple[Any, type]:
    """pycodestyle's options with flake8's defaults, and a report that keeps what it is told."""
    import pycodestyle
    from flake8 import defaults

    class Report(pycodestyle.BaseReport):  # type: ignore[misc]
        def __init__(self, options: Any) -> None:
            super().__init__(options)
            self.found: list[tuple[int, int, str]] = []

        def error(self, line_number: int, offset: int, text: str, check: Any) -> Optional[str]:
            code: Optional[str] = super().error(line_number, offset, text, check)
            if code:
                self.found.append((line_number, offset, text))
            return code

    guide = pycodestyle.StyleGuide(quiet=True, ignore=list(defaults.IGNORE),
                                   max_line_length=defaults.MAX_LINE_LENGTH)
    return guide.options, Report


@functools.lru_cache(maxsize=4)
def flake8_findings(text: str, path: str) -> tuple[_Flagged, ...]:
    """What flake8's default checks report on `text`, with flake8's default settings: pyflakes
    (F codes, from flake8's own table of them) and pycodestyle (E and W codes; flake8's default
    ignore list and line length). `text` must parse."""
    import pycodestyle
    import pyflakes.checker
    from flake8.plugins.pyflakes import FLAKE8_PYFLAKES_CODES

    out = []
    for found in pyflakes.checker.Checker(ast.parse(text), filename=path, withDoctest=False).messages:
        code = FLAKE8_PYFLAKES_CODES.get(type(found).__name__, "F999")
        message = f"{code} {found.message % found.message_args}"
        out.append(_Flagged(code, found.lineno, getattr(found, "col", 0), message))
    options, report_class = _pycodestyle()
    report = report_class(options)
    lines = io.StringIO(text, newline=None).readlines()  # as flake8 reads a file: universal newlines
    pycodestyle.Checker(path, lines=lines, options=options, report=report).check_all()
    for line, col, message in report.found:
        out.append(_Flagged(message.split(" ", 1)[0], line, col, message))
    return tuple(out)


def _compiles(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _encoded(outcome: FileFix, data: bytes) -> bytes:
    """The fixed text in the file's own encoding; SourceError when that would change other bytes."""
    encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    try:
        if outcome.original.encode(encoding) != data:
            raise sources.SourceError(f"{encoding} does not reproduce the file byte for byte; not rewritten")
        return outcome.fixed.encode(encoding)
    except UnicodeEncodeError:
        raise sources.SourceError(f"the fix cannot be written in {encoding}") from None


def fix_bytes(data: bytes, path: str, settings: config.Config, target: str,
              codes: Sequence[str], session: Optional[Session] = None) -> tuple[FileFix, bytes]:
    """The outcome of fixing a file's contents, and the fixed contents (`data` itself when unchanged)."""
    if not apiimports.mentions_api(data, apiimports.NO_ALIASES) and not settings.api_aliases:
        try:
            text = sources.decode(data)
        except sources.SourceError:  # names no API module: not read (prefilter.triage)
            text = ""
        return FileFix(path, text, text, (), ()), data
    try:
        text = sources.decode(data)
    except sources.SourceError as error:
        return FileFix(path, "", "", (), (), str(error)), data
    outcome = fix_source(text, path, settings, target, codes, session)
    if not outcome.changed:
        return outcome, data
    try:
        return outcome, _encoded(outcome, data)
    except sources.SourceError as error:
        return FileFix(path, text, text, (), (), str(error)), data


def _analyzer_bug(path: str, error: Exception) -> FileFix:
    """A file left as it is because the analyzer failed on it: one line, the lint's SKP902 text,
    never a traceback (unless SKIPLINT_DEBUG is set)."""
    if os.environ.get("SKIPLINT_DEBUG"):
        raise error
    return FileFix(path, "", "", (), (), prefilter.internal_error(path, "this file", error).error)


def fix_file(path: str, settings: config.Config, target: str, codes: Sequence[str],
             write: bool, roots: Optional[Sequence[str]] = None, session: Optional[Session] = None) -> FileFix:
    """Fix one file, writing the fix when `write` (see write_fix). Outside when the file is a
    symbolic link resolving outside `roots`; Changed or WriteFailed when the fix is not written."""
    inside(path, roots)
    try:
        data = sources.read_bytes(path)
    except sources.SourceError as error:
        return FileFix(path, "", "", (), (), str(error))
    outcome, fixed = fix_bytes(data, path, settings, target, codes, session)
    if write and outcome.changed:
        write_fix(path, data, fixed, roots)
    return outcome


# -- the command -----------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiplint fix",
        description=f"Rewrite the mechanical mistakes in place: {one_class.BARE_STRING_DECLARATION.code} "
                    "(a bare string declaration becomes a one-element list), "
                    f"{one_class.COMMAND_NOT_YIELDED.code} (the missing yield), "
                    f"{portability.REMOVED_TORCH_PIPELINE.code} (imports of the removed "
                    "torch.distributed.pipeline.sync skip API move to --target). A fix only makes a "
                    "file strictly better: it is kept when the file then lints with no finding, of "
                    "any code, that it did not have, flake8's default checks (pyflakes, pycodestyle) "
                    "report nothing new, and every character outside the edit is kept; otherwise the "
                    "file is left as it is and the reason is printed.",
        epilog="Exit status: 0 done (or nothing to fix), 1 with --diff when there are changes, or "
               "a file changed while it was fixed (run again), 2 a file could not be read, parsed "
               "or written (a file that cannot be written is left as it was). A symbolic link "
               "that resolves outside the paths given is left alone. With '-' (standard input): 0 nothing is "
               "left to report in the fixed source, 1 findings are left, 2 it could not be checked.",
    )
    p.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                   help="files or directories to fix, recursively (default: .); '-' reads the "
                        "source from standard input and writes the fixed source to standard output")
    p.add_argument("--diff", action="store_true",
                   help="print the changes as a unified diff instead of writing them")
    p.add_argument("--target", choices=tuple(TARGETS), default="torchgpipe",
                   help=f"where {portability.REMOVED_TORCH_PIPELINE.code} moves skip API imports "
                        "(default: torchgpipe)")
    p.add_argument("--select", default=None, metavar="CODES",
                   help="comma-separated codes to fix (default: " + ",".join(FIXABLE) + ")")
    p.add_argument("--config", metavar="FILE", help="read the configuration from FILE only")
    p.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    p.add_argument("--stdin-display-name", metavar="NAME", default=None,
                   help="with '-': the name of the source in messages, and the path whose "
                        "configuration applies (default: stdin, configured from the current directory)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but the diff or the source")
    return p


def diff(outcome: FileFix) -> str:
    """The unified diff of a fix, with lines as Python counts them."""
    return "".join(difflib.unified_diff(
        split_lines(outcome.original), split_lines(outcome.fixed),
        fromfile=f"a/{outcome.path}", tofile=f"b/{outcome.path}"))


def _report(outcome: FileFix, name: str, wrote: bool, say: Callable[[str], None]) -> None:
    if outcome.changed:
        fixed = ", ".join(f"{d.code} (line {d.line})" for d in outcome.applied)
        say(f"{name}: {'fixed' if wrote else 'would fix'} {fixed}")
    for diagnostic, why in outcome.left:
        say(f"{name}:{diagnostic.line}:{diagnostic.col + 1}: {diagnostic.code} not fixed: {why}")


def fix_stdin(display_name: Optional[str], finder: config.Finder, target: str, codes: Sequence[str],
              show_diff: bool, say: Callable[[str], None]) -> int:
    """`skiplint fix -` (and `skiplint check --fix -`): the source read from standard input, fixed
    (or its diff) on standard output; the exit status is the lint's on the fixed source."""
    name = display_name or "stdin"
    settings = finder.for_file(display_name or os.path.join(os.getcwd(), "stdin"))
    for problem in finder.problems:
        streams.say(str(problem))
    try:
        data = sources.read_stream(sys.stdin.buffer)  # at most the size limit: as a file of it
    except sources.SourceError as error:  # not all read: nothing to give back
        say(f"{name}: could not fix this source: {error}")
        return EXIT_UNCHECKED
    if display_name is not None and settings.excludes_named(display_name):
        outcome, fixed = FileFix(name, "", "", (), ()), data
    else:
        try:
            outcome, fixed = fix_bytes(data, name, settings, target, codes, Session())
        except Exception as error:
            outcome, fixed = _analyzer_bug(name, error), data
    streams.write_stdout(diff(outcome) if show_diff else fixed)
    if outcome.error is not None:
        say(f"{name}: could not fix this source: {outcome.error}")
        return EXIT_UNCHECKED
    _report(outcome, name, not show_diff, say)
    return EXIT_FINDINGS if outcome.remaining else EXIT_CLEAN


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    codes: tuple[str, ...] = FIXABLE
    if args.select:
        wanted = tuple(c.strip().upper() for c in args.select.replace(" ", ",").split(",") if c.strip())
        codes = tuple(code for code in FIXABLE if code.startswith(wanted))
    finder = config.Finder(explicit=args.config, isolated=args.isolated)
    if finder.unusable:  # a --config that cannot be read: never fix with settings nobody asked for
        for problem in finder.problems:
            streams.say(str(problem))
        return EXIT_UNCHECKED
    say: Callable[[str], None] = (lambda _line: None) if args.quiet else streams.say
    if "-" in args.paths:
        if args.paths != ["-"]:
            streams.say("skiplint fix: '-' (standard input) cannot be combined with other paths")
            return EXIT_UNCHECKED
        return fix_stdin(args.stdin_display_name, finder, args.target, codes, args.diff, say)
    tasks = list(finder.discover(args.paths))
    for problem in finder.problems:
        streams.say(str(problem))
    if not tasks and not finder.fatal:
        say(f"skiplint fix: no Python files to fix in {' '.join(args.paths)}")
    return fix_tasks(tasks, args.target, codes, not args.diff, say, write_diff, roots=args.paths)[0]


def write_diff(text: str) -> None:
    """A file's diff on standard output, flushed before its account goes to standard error: a
    reader gone early then stops the run at this file, in the one line the CLI gives a closed pipe."""
    streams.write_stdout(text)


def fix_tasks(tasks: Sequence[tuple[str, config.Config]], target: str, codes: Sequence[str], write: bool,
              say: Callable[[str], None],
              show: Optional[Callable[[str], object]] = None,
              roots: Optional[Sequence[str]] = None) -> tuple[int, list[FileFix]]:
    """Fix each file with its configuration, in place when `write`, else giving `show` the diff:
    the exit status of `skiplint fix` (0 done, 1 a diff was shown or a file changed while it was
    fixed, 2 a file could not be fixed or written) and each file's outcome. Files that resolve
    outside `roots` (the paths given) are left alone, with one line each. `skiplint fix` and
    `skiplint check --fix`/`--diff` both run this."""
    status = EXIT_OK
    outcomes = []
    session = Session()  # this command's, for every file it fixes
    for path, settings in tasks:
        try:
            outcome = fix_file(path, settings, target, codes, write=write, roots=roots, session=session)
        except Unwritten as why:
            say(f"{path}: {why}")
            status = max(status, why.status)
            outcomes.append(FileFix(path, "", "", (), (), unwritten=str(why), unwritten_status=why.status))
            continue
        except Exception as error:
            outcome = _analyzer_bug(path, error)
        outcomes.append(outcome)
        if outcome.error is not None:
            say(f"{path}: could not fix this file: {outcome.error}")
            status = EXIT_UNCHECKED
            continue
        if outcome.changed and not write:
            if show is not None:
                show(diff(outcome))
            status = max(status, EXIT_CHANGES)
        _report(outcome, path, write, say)
    return status, outcomes
