"""The per-file pipeline: read, prefilter, parse once, extract facts, check, select, locate, noqa."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import libcst as cst

from skiplint import checks, compositions, noqa, parsing, pipes, rules, skippables, sources
from skiplint.diagnostics import Diagnostic, shown
from skiplint.parsing import ParseFailure as ParseFailure
from skiplint.facts import Finding, Locator, ModelFacts, ModuleFacts
from skiplint import imports
from skiplint.project import INDEX, ProjectIndex



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


def mentions_api(text: str) -> bool:
    """The prefilter: a file that names no API module cannot use the API."""
    return imports.mentions_api(text)


def wanted(text: str, path: str, project: Optional[ProjectIndex] = None) -> bool:
    """The whole prefilter: the file names an API module, or it composes skippable classes that it
    imports from modules of its own project (each read once, then cached)."""
    if mentions_api(text):
        return True
    return "Sequential" in text and (project or INDEX).imports_project_skippables(
        path, text.encode("utf-8", "replace"))


def _wanted_bytes(data: bytes, path: str, project: Optional[ProjectIndex]) -> bool:
    if imports.mentions_api(data):
        return True
    return b"Sequential" in data and (project or INDEX).imports_project_skippables(path, data)


def analyze(text: str, path: str, *, project: Optional[ProjectIndex] = None,
            prefiltered: bool = False, max_unroll: Optional[int] = None) -> Optional[ModuleFacts]:
    """Facts of one module's source, or None when it does not mention the API. Raises ParseFailure.

    The SKP2xx/SKP3xx findings of its compositions and pipes are among the module's findings.
    """
    both = analyze_models(text, path, project=project, prefiltered=prefiltered, max_unroll=max_unroll)
    if both is None:
        return None
    facts, models = both
    extra = tuple(pipes.model_findings(models))
    if extra:
        facts = dataclasses.replace(facts, findings=facts.findings + extra)
    return facts


def analyze_models(text: str, path: str, *, project: Optional[ProjectIndex] = None,
                   prefiltered: bool = False,
                   max_unroll: Optional[int] = None) -> Optional[tuple[ModuleFacts, ModelFacts]]:
    """The skippable-class facts and the composition/pipe facts of one module's source."""
    index_ = project or INDEX
    if not prefiltered and not wanted(text, path, index_):
        return None
    module = parsing.parse_module(text)
    try:
        index = skippables.ModuleIndex(module)
        locator = Locator(module)  # one per module: all its findings are located in one pass
        facts = skippables.extract(module, path, text, index, locator)
        if not compositions.relevant(text):
            return facts, ModelFacts(path)
        try:
            models = compositions.extract(module, path, facts, index, locator, _resolver(index_, path),
                                          max_unroll=max_unroll)
        except RecursionError:
            raise
        except Exception:  # an analyzer bug abstains on compositions; it never breaks a CI run
            if os.environ.get("SKIPLINT_DEBUG"):
                raise
            models = ModelFacts(path)
    except RecursionError:
        raise ParseFailure("nested too deeply to analyse (RecursionError)") from None
    return facts, models


def _resolver(project: ProjectIndex, path: str) -> Any:
    def resolve(qualified: str) -> Any:
        summary = project.resolve_class(path, qualified)
        if summary is None:
            return None
        return compositions.class_from_summary(summary.name, summary.kind, summary.stash, summary.pop)
    return resolve


def _diagnostics(findings: Iterable[Finding], path: str, text: str, selection: Selection,
                 apply_noqa: bool) -> tuple[Diagnostic, ...]:
    chosen = [f for f in findings if selection(f.code)]
    if not chosen:
        return ()
    lines = sources.lines(text)
    out = set()
    by_locator: dict[int, tuple[Locator, list[cst.CSTNode]]] = {}
    for finding in chosen:
        if finding.site is not None:
            by_locator.setdefault(id(finding.site.locator), (finding.site.locator, []))[1].append(finding.site.node)
    try:
        for locator, nodes in by_locator.values():
            locator.locate(nodes)  # one pass of code generation per module for all its findings
    except RecursionError:
        pass  # reported below, finding by finding
    for finding in chosen:
        try:
            line, col = finding.site.position if finding.site is not None else (1, 0)
            end_line, end_col = finding.site.locator.end(finding.site.node) if finding.site is not None else (0, 0)
        except RecursionError:
            return (Diagnostic(path, 1, 0, "SKP900", rules.RULES["SKP900"].format(
                reason="nested too deeply to locate its findings (RecursionError)")),)
        if apply_noqa and 0 < line <= len(lines) and noqa.is_suppressed(finding.code, lines[line - 1]):
            continue
        message = shown(rules.RULES[finding.code].format(**dict(finding.args)))  # names escaped
        out.add(Diagnostic(path, line, col, finding.code, message, end_line, end_col))
    return tuple(sorted(out))


def _unchecked(path: str, reason: str, selection: Selection, line: int = 1, col: int = 0) -> FileResult:
    """A file that could not be checked is reported whatever is selected: silence would read as
    clean. A syntax error is reported where the running Python's compile puts it."""
    message = rules.RULES["SKP900"].format(reason=reason)
    return FileResult(path, (Diagnostic(path, line, col, "SKP900", message),), reason)


def check_text(text: str, path: str, selection: Selection = Selection(), *, apply_noqa: bool = True,
               project: Optional[ProjectIndex] = None, prefiltered: bool = False,
               max_unroll: Optional[int] = None) -> FileResult:
    """Check decoded source text."""
    try:
        if not prefiltered and not wanted(text, path, project):
            return FileResult(path, ())
        facts = analyze(text, path, project=project, prefiltered=True, max_unroll=max_unroll)
    except ParseFailure as failure:
        return _unchecked(path, str(failure), selection, failure.line, failure.col)
    if facts is None:
        return FileResult(path, ())
    return FileResult(path, _diagnostics(checks.module_findings(facts), path, text, selection, apply_noqa))


def check_file(path: str, selection: Selection = Selection(), *, project: Optional[ProjectIndex] = None,
               max_unroll: Optional[int] = None) -> FileResult:
    """Read, decode and check one file; any failure becomes SKP900 with its reason."""
    try:
        data = sources.read_bytes(path)
        if b"\0" not in data and not _wanted_bytes(data, path, project):
            # Cheap path: no API module is named, so only decodability is left to confirm.
            sources.decode(data)
            return FileResult(path, ())
        text = sources.decode(data)
    except sources.SourceError as error:
        return _unchecked(path, str(error), selection)
    return check_text(text, path, selection, project=project, prefiltered=True, max_unroll=max_unroll)


def check_paths(paths: Iterable[str], selection: Selection = Selection(), *,
                project: Optional[ProjectIndex] = None, max_unroll: Optional[int] = None) -> list[FileResult]:
    """Check every Python file under the paths; one project index serves the whole run."""
    index = project or INDEX
    return [check_file(path, selection, project=index, max_unroll=max_unroll)
            for path in sources.discover(paths)]
