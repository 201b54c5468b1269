"""Reporters: the same results as text, JSON, SARIF 2.1.0 or GitHub workflow annotations.

A reporter is a function from a `Report` to the text written to stdout or `--output`; it never
decides what is reported, only how. Whatever a path or message holds (a skip name with a line
break, a lone surrogate from an undecodable file name), every reporter writes it escaped as
Python's repr would, so a finding can neither forge another line nor fail to encode.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Counter as CounterType, FrozenSet, Optional, Sequence

from skiplint import __version__, rules, sources
from skiplint.diagnostics import Diagnostic, FileResult, shown, without_code

#: Version of the JSON report's layout (docs/json-schema.json); bumped on any incompatible change.
JSON_SCHEMA_VERSION = 3
#: Where each rule is documented; a rule's anchor is its code in lower case.
HELP_URL = "https://github.com/skiplint/skiplint/blob/main/docs/rules.md"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URL = "https://github.com/skiplint/skiplint"


@dataclass
class Report:
    """What one run found, and how the user asked to see it."""

    results: Sequence[FileResult]
    statistics: bool = False
    show_source: bool = False
    #: Text format: the address of each finding's rule documentation on the line after it.
    show_url: bool = False
    #: Text format: colour the path, the separators and the code as flake8 does.
    color: bool = False
    #: Text format, for a terminal: mark the findings `skiplint fix` fixes with `[*]` and end
    #: with a summary. Piped output stays one finding per line, as flake8 prints it.
    terminal: bool = False
    #: The findings that `skiplint fix` fixes (each (path, code, line, message), as many as there are).
    fixable: CounterType[tuple[str, str, int, str]] = field(default_factory=Counter)
    #: The command that fixes them, for the summary.
    fix_command: str = ""
    #: Findings fixed and files changed by `check --fix` before this report, for the summary.
    fixed: tuple[int, int] = (0, 0)
    _lines: dict[str, Optional[list[str]]] = field(default_factory=dict, repr=False)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for result in self.results for d in result.diagnostics]

    @property
    def unchecked(self) -> list[FileResult]:
        return [result for result in self.results if result.error is not None]

    def source_line(self, diagnostic: Diagnostic) -> Optional[str]:
        """The reported line of source, without its line break (None when it cannot be read)."""
        if diagnostic.path not in self._lines:
            try:
                text = sources.decode(sources.read_bytes(diagnostic.path))
                self._lines[diagnostic.path] = sources.lines(text)
            except sources.SourceError:
                self._lines[diagnostic.path] = None
        lines = self._lines[diagnostic.path]
        if lines is None or not 0 < diagnostic.line <= len(lines):
            return None
        return lines[diagnostic.line - 1]

    def counts(self) -> list[tuple[str, int]]:
        return sorted(Counter(d.code for d in self.diagnostics).items())


def fixable_codes() -> FrozenSet[str]:
    """The codes `skiplint fix` rewrites (the fixer is imported only when a report needs them)."""
    from skiplint.fix import FIXABLE

    return frozenset(FIXABLE)


def level(code: str) -> str:
    """SARIF level of a code: opt-in codes are informational notes, the others errors."""
    return "note" if rules.RULES[code].opt_in else "error"


def help_uri(code: str) -> str:
    return f"{HELP_URL}#{code.lower()}"


# -- text ------------------------------------------------------------------------------------------

def statistics_lines(report: Report) -> list[str]:
    """flake8's --statistics: one line per code, count first."""
    return [f"{count:<5} {code} {rules.RULES[code].name}" for code, count in report.counts()]


#: ANSI SGR sequences, as flake8 colours its report: the path bold, the separators cyan, the code
#: bold red; the rest is plain.
BOLD, CYAN, RED, RESET = "\x1b[1m", "\x1b[36m", "\x1b[31m", "\x1b[m"
#: The mark of a finding `skiplint fix` fixes (ruff's).
FIXABLE_MARK = "[*]"


def fixable_key(d: Diagnostic) -> tuple[str, str, int, str]:
    return d.path, d.code, d.line, d.message


def finding_line(d: Diagnostic, color: bool = False, fixable: bool = False) -> str:
    """`path:line:col: CODE message`, flake8's line; `CODE [*] message` when it is fixable."""
    path, message = shown(d.path), shown(d.message)
    code, rest = message[:len(d.code)], message[len(d.code):]
    if not color:
        mark = f" {FIXABLE_MARK}" if fixable else ""
        return f"{path}:{d.line}:{d.col + 1}: {code}{mark}{rest}"
    sep = f"{CYAN}:{RESET}"
    mark = f" {CYAN}{FIXABLE_MARK}{RESET}" if fixable else ""
    return f"{BOLD}{path}{RESET}{sep}{d.line}{sep}{d.col + 1}{sep} {BOLD}{RED}{code}{RESET}{mark}{rest}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def summary_lines(report: Report, fixable: int) -> list[str]:
    """The end of a report on a terminal: what was fixed, what was found, what can be fixed and how."""
    out = []
    if report.fixed[0]:
        out.append(f"Fixed {_count(report.fixed[0], 'finding')} in {_count(report.fixed[1], 'file')}.")
    diagnostics = report.diagnostics
    files = len(report.results)
    if diagnostics:
        hit = sum(1 for result in report.results if result.diagnostics)
        where = _count(hit, "file") if hit == files else f"{hit} of {_count(files, 'file')}"
        line = f"Found {_count(len(diagnostics), 'finding')} in {where}"
        unchecked = len(report.unchecked)
        out.append(line + (f"; {_count(unchecked, 'file')} could not be checked." if unchecked else "."))
    else:
        out.append(f"No findings in {_count(files, 'file')}.")
    if fixable:
        mark = f"{CYAN}{FIXABLE_MARK}{RESET}" if report.color else FIXABLE_MARK
        out.append(f"{mark} {fixable} fixable with `{report.fix_command}`.")
    return out


def text(report: Report) -> str:
    out: list[str] = []
    marks = Counter(report.fixable) if report.terminal else Counter()
    marked = 0
    for d in report.diagnostics:
        key = fixable_key(d)
        fixable = marks[key] > 0
        if fixable:
            marks[key] -= 1
            marked += 1
        out.append(finding_line(d, report.color, fixable))
        if report.show_source:
            line = report.source_line(d)
            if line is not None:
                out.append(line)
                # The caret under the column, keeping tabs so that it lines up.
                out.append("".join(c if c == "\t" else " " for c in line[:d.col]) + "^")
        if report.show_url:
            out.append(f"    {help_uri(d.code)}")
    if report.statistics:
        out.extend(statistics_lines(report))
    if report.terminal:
        out.extend(summary_lines(report, marked))
    return "".join(line + "\n" for line in out)


def names(report: Report) -> str:
    """flake8's -q: the name of each file with findings, once (and --statistics)."""
    out = list(dict.fromkeys(shown(d.path) for d in report.diagnostics))
    if report.statistics:
        out.extend(statistics_lines(report))
    return "".join(line + "\n" for line in out)


def nothing(report: Report) -> str:
    """flake8's -qq: no findings (the exit status tells), only --statistics."""
    return "".join(line + "\n" for line in statistics_lines(report)) if report.statistics else ""


# -- JSON ------------------------------------------------------------------------------------------

def json_report(report: Report) -> str:
    diagnostics = []
    fixable = fixable_codes() if report.diagnostics else frozenset()
    for d in report.diagnostics:
        end_line, end_col = d.end
        item: dict[str, object] = {
            "path": shown(d.path), "line": d.line, "column": d.col + 1,
            "end_line": end_line, "end_column": end_col + 1, "code": d.code,
            "name": rules.RULES[d.code].name, "message": shown(without_code(d.code, d.message)),
            "url": help_uri(d.code), "fixable": d.code in fixable,
        }
        if report.show_source:
            item["source"] = report.source_line(d)
        diagnostics.append(item)
    payload: dict[str, object] = {
        "schema_version": JSON_SCHEMA_VERSION,
        "tool": {"name": "skiplint", "version": __version__},
        "files_checked": len(report.results),
        "diagnostics": diagnostics,
        "unchecked": [{"path": shown(r.path), "reason": shown(r.error or "")} for r in report.unchecked],
    }
    if report.statistics:
        payload["statistics"] = [{"code": code, "name": rules.RULES[code].name, "count": count}
                                 for code, count in report.counts()]
    return json.dumps(payload, indent=2) + "\n"


# -- SARIF 2.1.0 -----------------------------------------------------------------------------------

def sarif_rule(rule: rules.Rule) -> dict[str, object]:
    full = rule.summary + (f". At run time: {rule.failure}" if rule.failure else ".")
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "helpUri": help_uri(rule.code),
        "help": {"text": f"{full}{'' if full.endswith('.') else '.'} See {help_uri(rule.code)}",
                 "markdown": f"{full}\n\n[{rule.code} {rule.name}]({help_uri(rule.code)})"},
        "defaultConfiguration": {"level": level(rule.code), "enabled": not rule.opt_in},
        "properties": {"tags": ["skip-connections", "pipeline-parallel"] + (["opt-in"] if rule.opt_in else [])},
    }


def artifact_uri(path: str) -> str:
    """A relative URI for paths under the current directory (as code scanning wants), else file://."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    if relative.startswith(os.pardir):
        return "file://" + _quote(absolute)
    return _quote(relative)


def _quote(path: str) -> str:
    """Percent-encoded bytes of the path as the file system has them (a name that is not valid
    UTF-8 keeps its bytes)."""
    return urllib.parse.quote(os.fsencode(path.replace(os.sep, "/")))


def sarif(report: Report) -> str:
    codes = list(rules.RULES)
    index = {code: i for i, code in enumerate(codes)}
    results = []
    fixable = fixable_codes() if report.diagnostics else frozenset()
    for d in report.diagnostics:
        uri = artifact_uri(d.path)
        location: dict[str, object] = {"uri": uri}
        if not uri.startswith("file://"):
            location["uriBaseId"] = "%SRCROOT%"
        end_line, end_col = d.end
        region: dict[str, object] = {"startLine": d.line, "startColumn": d.col + 1,
                                     "endLine": end_line, "endColumn": end_col + 1}
        if report.show_source:
            line = report.source_line(d)
            if line is not None:
                region["snippet"] = {"text": line}
        results.append({
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": level(d.code),
            "message": {"text": shown(without_code(d.code, d.message))},
            "locations": [{"physicalLocation": {"artifactLocation": location, "region": region}}],
            "properties": {"fixable": d.code in fixable},
        })
    notifications = [
        {"level": "error", "message": {"text": shown(f"could not check this file: {r.error}")},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri(r.path)}}}]}
        for r in report.unchecked
    ]
    cwd = _quote(os.path.abspath(os.curdir).rstrip(os.sep) + os.sep)
    return json.dumps({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "skiplint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URL,
                "rules": [sarif_rule(rules.RULES[code]) for code in codes],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + cwd}},
            "columnKind": "unicodeCodePoints",
            "invocations": [{"executionSuccessful": not report.unchecked,
                             "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }, indent=2) + "\n"


# -- GitHub workflow commands ----------------------------------------------------------------------

_GITHUB_LEVEL = {"error": "error", "note": "notice"}


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(report: Report) -> str:
    out = []
    for d in report.diagnostics:
        command = _GITHUB_LEVEL[level(d.code)]
        props = ",".join((
            f"file={_escape_property(shown(d.path))}", f"line={d.line}", f"col={d.col + 1}",
            f"title={_escape_property(d.code + ' ' + rules.RULES[d.code].name)}",
        ))
        out.append(f"::{command} {props}::{_escape_data(shown(without_code(d.code, d.message)))}")
    if report.statistics:
        out.extend(statistics_lines(report))
    return "".join(line + "\n" for line in out)


FORMATS: dict[str, Callable[[Report], str]] = {
    "text": text,
    "json": json_report,
    "sarif": sarif,
    "github": github,
}
