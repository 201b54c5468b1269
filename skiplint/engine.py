"""The per-file pipeline: read, prefilter, parse once, extract facts, check, select, locate, noqa."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import libcst as cst

from skiplint import checks, noqa, rules, skippables, sources
from skiplint.diagnostics import Diagnostic
from skiplint.facts import Finding, ModuleFacts
from skiplint.imports import PREFILTER_NEEDLES, prefilter_needles

_TEXT_NEEDLES = tuple(n.decode() for n in PREFILTER_NEEDLES)


@dataclass(frozen=True)
class Selection:
    """Which codes are reported: flake8's --select/--ignore/--extend-select, by prefix."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()

    def __call__(self, code: str) -> bool:
        return rules.selected(code, self.select, self.ignore, self.extend_select)


#: Every code, opt-in ones included (the flake8 plugin: flake8 itself selects).
EVERYTHING = Selection(select=tuple(rules.RULES))


@dataclass(frozen=True)
class FileResult:
    path: str
    diagnostics: tuple[Diagnostic, ...]
    #: Why the file could not be checked (also reported as SKP900), or None.
    error: Optional[str] = None


class ParseFailure(Exception):
    """The source could not be parsed; the message is the one-line reason."""


def mentions_api(text: str) -> bool:
    """The prefilter: a file that names no API module cannot use the API."""
    return any(needle in text for needle in _TEXT_NEEDLES) or any(
        needle.decode() in text for needle in prefilter_needles()[len(PREFILTER_NEEDLES):])


def parse(text: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        message = str(error.message).splitlines()[0] if error.message else "invalid syntax"
        raise ParseFailure(f"syntax error at {error.raw_line}:{error.raw_column + 1}: {message}") from None
    except RecursionError:
        raise ParseFailure("nested too deeply for the parser (RecursionError)") from None
    except (ValueError, TypeError) as error:
        raise ParseFailure(f"cannot parse: {error}") from None


def analyze(text: str, path: str) -> Optional[ModuleFacts]:
    """Facts of one module's source, or None when it does not mention the API. Raises ParseFailure."""
    if not mentions_api(text):
        return None
    module = parse(text)
    try:
        return skippables.extract(module, path, text)
    except RecursionError:
        raise ParseFailure("nested too deeply to analyse (RecursionError)") from None


def _diagnostics(findings: Iterable[Finding], path: str, text: str, selection: Selection,
                 apply_noqa: bool) -> tuple[Diagnostic, ...]:
    chosen = [f for f in findings if selection(f.code)]
    if not chosen:
        return ()
    lines = text.splitlines()
    out = set()
    for finding in chosen:
        line, col = finding.site.position if finding.site is not None else (1, 0)
        if apply_noqa and 0 < line <= len(lines) and noqa.is_suppressed(finding.code, lines[line - 1]):
            continue
        message = rules.RULES[finding.code].format(**dict(finding.args))
        out.add(Diagnostic(path, line, col, finding.code, message))
    return tuple(sorted(out))


def _unchecked(path: str, reason: str, selection: Selection) -> FileResult:
    message = rules.RULES["SKP900"].format(reason=reason)
    diags = (Diagnostic(path, 1, 0, "SKP900", message),) if selection("SKP900") else ()
    return FileResult(path, diags, reason)


def check_text(text: str, path: str, selection: Selection = Selection(), *, apply_noqa: bool = True) -> FileResult:
    """Check decoded source text."""
    try:
        facts = analyze(text, path)
    except ParseFailure as failure:
        return _unchecked(path, str(failure), selection)
    if facts is None:
        return FileResult(path, ())
    return FileResult(path, _diagnostics(checks.module_findings(facts), path, text, selection, apply_noqa))


def check_file(path: str, selection: Selection = Selection()) -> FileResult:
    """Read, decode and check one file; any failure becomes SKP900 with its reason."""
    try:
        data = sources.read_bytes(path)
        if not any(needle in data for needle in prefilter_needles()) and b"\0" not in data:
            # Cheap path: no API module is named, so only decodability is left to confirm.
            sources.decode(data)
            return FileResult(path, ())
        text = sources.decode(data)
    except sources.SourceError as error:
        return _unchecked(path, str(error), selection)
    return check_text(text, path, selection)


def check_paths(paths: Iterable[str], selection: Selection = Selection()) -> list[FileResult]:
    return [check_file(path, selection) for path in sources.discover(paths)]
