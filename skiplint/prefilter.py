"""The cheap front of every check: whether a file can use the skip API (`wanted`), decided without
libcst, and the verdict on a file that needs no analysis or cannot be checked.

Loading this module (which every run and every flake8 process does) builds no more than the import
table of skiplint.apiimports: a run over files that do not use the API costs little more than
reading them. The project walk (skiplint.projectscan) is imported only for files that say `Sequential`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Union

from skiplint import sources
from skiplint.apiimports import NO_ALIASES, alias_entries as alias_entries, mentions_api as mentions_api, readable
from skiplint.session import Session

if TYPE_CHECKING:
    from skiplint.diagnostics import Diagnostic, FileResult
    from skiplint.findings import AnalyzerBug
    from skiplint.rules.base import Fact


def wanted(data: Union[bytes, str], path: str, session: Optional[Session] = None) -> bool:
    """The whole prefilter: the file names an API module (or a module of one of the session's
    api-aliases), or it composes (says `Sequential`) names it imports from its own project that may
    be skippable classes (the session's project walk reads those modules once; no session: a
    session of this call's own, without api-aliases)."""
    aliases = session.aliases if session is not None else NO_ALIASES
    text = readable(data)
    if text is None or mentions_api(text, aliases):
        return True
    data = text
    word: Union[bytes, str] = b"Sequential" if isinstance(data, bytes) else "Sequential"
    if word not in data:  # type: ignore[operator]
        return False
    if session is None:
        session = Session()
    return session.scan.imports_project_skippables(path, data, aliases)


def triage(path: str, session: Optional[Session] = None) -> Union[FileResult, str]:
    """Read one file: its verdict when it needs no analysis (clean, or unreadable: SKP900), else
    its decoded text for the analysis.

    One policy for what cannot be analysed: a file that cannot be read at all is SKP900 (whether
    it uses the API cannot be told); a file whose bytes name no API module is not decoded or
    parsed, so nothing is reported about it, whatever it holds (a syntax error, NUL bytes, bytes
    that are not text: Python and flake8's E902/E999 report those); a file that names the API and
    cannot be decoded or parsed is SKP900.
    """
    try:
        data = sources.read_bytes(path)
    except sources.SourceError as error:
        return unchecked(path, str(error))
    return judge(data, path, session)


def judge(data: bytes, path: str, session: Optional[Session] = None) -> Union[FileResult, str]:
    """As triage, for the bytes of a file already read (or of standard input)."""
    from skiplint.diagnostics import FileResult

    try:
        if not wanted(data, path, session):
            return FileResult(path, ())
        return sources.decode(data)
    except sources.SourceError as error:
        return unchecked(path, str(error))


def unchecked(path: str, reason: str, line: int = 1, col: int = 0) -> FileResult:
    """A file that could not be checked: SKP900 with the reason, whatever is selected (silence would
    read as clean); a syntax error where the running Python's compile puts it."""
    from skiplint.diagnostics import FileResult
    from skiplint.findings import Unchecked

    return FileResult(path, reported(path, "unchecked", Unchecked(reason, line, col)), reason)


def internal_error(path: str, what: str, error: BaseException) -> FileResult:
    """SKP902 for an analyzer bug met while analysing `what`: the file counts as not checked
    (exit 2), the error is shown."""
    from skiplint.diagnostics import error_text
    from skiplint.findings import AnalyzerBug

    return analyzer_bug(path, AnalyzerBug(what, error_text(error)))


def analyzer_bug(path: str, bug: AnalyzerBug) -> FileResult:
    """What the rules report of an analyzer bug (SKP902), and its text as the file's error."""
    from skiplint.diagnostics import FileResult, without_code

    found = reported(path, "bug", bug)
    return FileResult(path, found, without_code(found[0].code, found[0].message))


def reported(path: str, fact: Fact, given: object) -> tuple[Diagnostic, ...]:
    """The diagnostics the rules' checks of a file-level fact make (reported at the fact's line, else
    the file's first), without libcst."""
    from skiplint import rules
    from skiplint.findings import At

    out = []
    for finding in rules.run(fact, given):
        at = finding.site if isinstance(finding.site, At) else At()
        message = rules.RULES[finding.code].format(**dict(finding.args))
        out.append(rules.diagnostic(path, (at.line, at.col), finding.code, message, args=finding.args))
    return tuple(out)
