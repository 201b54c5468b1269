"""The per-file pipeline: read, prefilter, parse once, extract facts, check, select, locate, noqa."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any, Iterable, Optional

import libcst as cst

from skiplint import checks, interpret, limits, noqa, parsing, prefilter, rules, skippables, sources
from skiplint.diagnostics import Diagnostic, FileResult as FileResult, error_text, shown
from skiplint.rules import Selection as Selection
from skiplint.parsing import ParseFailure as ParseFailure
from skiplint.findings import AnalyzerBug, Owner, OwnerRef
from skiplint.facts import Finding, Locator, ModelFacts, ModuleFacts, SkippableClass
from skiplint.positions import with_room
from skiplint.project import ProjectIndex
from skiplint.apiimports import Aliases
from skiplint.session import Session as Session

# The cheap front (reading, the prefilter, the verdict on a file that needs no analysis) is
# skiplint.prefilter, which imports no libcst; this module is imported only for files that pass it.

#: Every code, opt-in ones included (the flake8 plugin: flake8 itself selects).
EVERYTHING = Selection(select=tuple(rules.RULES))


def analyze(text: str, path: str, *, prefiltered: bool = False, max_unroll: Optional[int] = None,
            session: Optional[Session] = None) -> Optional[ModuleFacts]:
    """Facts of one module's source, or None when it does not mention the API. Raises ParseFailure.

    The SKP2xx/SKP3xx findings of its compositions and pipes are among the module's findings.
    """
    both = analyze_models(text, path, prefiltered=prefiltered, max_unroll=max_unroll, session=session)
    if both is None:
        return None
    facts, models = both
    extra = tuple(checks.model_findings(models))
    return dataclasses.replace(facts, findings=facts.findings + extra) if extra else facts


def analyze_models(text: str, path: str, *, prefiltered: bool = False, max_unroll: Optional[int] = None,
                   session: Optional[Session] = None) -> Optional[tuple[ModuleFacts, ModelFacts]]:
    """The skippable-class facts and the composition/pipe facts of one module's source, with the
    session's project index, parsed statements and api-aliases (a new session when none is given)."""
    session = session if session is not None else Session()
    if not prefiltered and not prefilter.wanted(text, path, session):
        return None
    module = parsing.parse_module(text, session.parts, session.memo)
    starts = session.parts.top_level_starts(text)
    try:
        both = with_room(session.parts.needs_room(text),
                         lambda: _analyze_models(module, text, path, session, starts, max_unroll))
    except RecursionError:
        raise ParseFailure(too_deep("analyse")) from None
    if session.kept is not None:
        session.kept[path] = both[1]
    return both


def too_deep(what: str) -> str:
    """Why a tree that Python's recursion limit stopped, with all the room it is given, is not
    checked. Python 3.12 also holds nested C calls to a limit of its own, which no setting
    raises: libcst's code generation (how findings are located) meets it about 740 levels down
    a tree, where 3.9 to 3.11 and 3.13 go on."""
    own = "; Python 3.12 also limits nested C calls" if sys.version_info[:2] == (3, 12) else ""
    return f"nested too deeply to {what} (RecursionError with {limits.DEEP_RECURSION:,} frames of room{own})"


def _analyze_models(module: cst.Module, text: str, path: str, session: Session, starts: Optional[list[int]],
                    max_unroll: Optional[int]) -> tuple[ModuleFacts, ModelFacts]:
    project, aliases = session.project, session.aliases
    index = skippables.ModuleIndex(module, aliases)
    locator = Locator(module, text, starts)  # one per module: all its findings are located in one pass
    facts = skippables.extract(module, path, text, index, locator,
                               lambda importer, qualified: project.resolve_function(importer, qualified, aliases))
    project.learn(path, text, index, facts, aliases)  # a later summary of this file needs no second parse
    if not interpret.relevant(text):
        return facts, ModelFacts(path)
    try:
        models = interpret.extract(module, path, facts, index, locator, _resolver(project, path, aliases),
                                   max_unroll=max_unroll)
        if models.specialized:
            facts = _specialized(facts, models.specialized)
    except RecursionError:  # with all the room it is given (`with_room`): said by analyze_models
        raise
    except Exception as error:  # an analyzer bug: reported as SKP902, never silent
        if os.environ.get("SKIPLINT_DEBUG"):
            raise
        bug = AnalyzerBug("compositions", error_text(error))
        facts = dataclasses.replace(facts, findings=facts.findings + tuple(rules.run("bug", bug)), bug=bug)
        models = ModelFacts(path)
    return facts, models


def _specialized(facts: ModuleFacts, made: tuple[SkippableClass, ...]) -> ModuleFacts:
    """The module's facts with each class statement that the interpreter saw run replaced by the
    classes its executions made (a factory's calls, a loop's iterations)."""
    replaced = {id(cls.site.node) for cls in made if cls.site is not None}
    kept = tuple(cls for cls in facts.skippables if cls.site is None or id(cls.site.node) not in replaced)
    return dataclasses.replace(facts, skippables=kept + made)


def _internal_error(facts: ModuleFacts, path: str, selection: Selection) -> Optional[str]:
    """Why the file was not fully checked, when the analyzer failed on it and the rule that reports
    that (SKP902) is selected, in the rule's words; else None."""
    if facts.bug is None:
        return None
    failure = prefilter.analyzer_bug(path, facts.bug)
    return failure.error if all(selection(d.code) for d in failure.diagnostics) else None


def _resolver(project: ProjectIndex, path: str, aliases: Aliases) -> Any:
    def resolve(qualified: str) -> Any:
        summary = project.resolve_class(path, qualified, aliases)
        if summary is None:
            return None
        return interpret.class_from_summary(summary.name, summary.kind, summary.stash, summary.pop,
                                            summary.output_stashes)
    return resolve


def _diagnostics(findings: Iterable[Finding], path: str, text: str, selection: Selection,
                 apply_noqa: bool) -> tuple[Diagnostic, ...]:
    chosen = [f for f in findings if selection(f.code)]
    if not chosen:
        return ()
    lines = sources.lines(text)
    noqa_at: dict[int, Optional[tuple[str, ...]]] = {}  # read once per line, however many findings
    #: (line, col, code, message) -> the first finding there, its end, and every owner: one
    #: diagnostic, whoever else it belongs to.
    out: dict[tuple[int, int, str, str], tuple[Finding, tuple[int, int], set[Owner]]] = {}
    by_locator: dict[int, tuple[Locator, list[cst.CSTNode]]] = {}
    for finding in chosen:
        for site in (finding.site, *(owner.site for owner in finding.owners)):
            if site is not None:
                by_locator.setdefault(id(site.locator), (site.locator, []))[1].append(site.node)
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
            raise ParseFailure(too_deep("locate its findings")) from None
        if apply_noqa and 0 < line <= len(lines):
            if line not in noqa_at:
                noqa_at[line] = noqa.suppressed_codes(lines[line - 1])
            if noqa.covers(noqa_at[line], finding.code):
                continue
        message = shown(rules.RULES[finding.code].format(**dict(finding.args)))  # names escaped
        owners = out.setdefault((line, col, finding.code, message), (finding, (end_line, end_col), set()))[2]
        try:
            owners.update(_owner(ref) for ref in finding.owners)
        except RecursionError:
            raise ParseFailure(too_deep("locate its findings")) from None
    return tuple(sorted(rules.diagnostic(path, (line, col), code, message, end, first.args, tuple(sorted(owners)))
                        for (line, col, code, message), (first, end, owners) in out.items()))


def _owner(ref: OwnerRef) -> Owner:
    return Owner(ref.kind, ref.name, ref.site.position[0] if ref.site is not None else 0, ref.factories)


def check_text(text: str, path: str, selection: Selection = Selection(), *, apply_noqa: bool = True,
               prefiltered: bool = False, max_unroll: Optional[int] = None,
               session: Optional[Session] = None) -> FileResult:
    """Check decoded source text. Where the analyzer fails (SKP902) on text that Python itself
    refuses (libcst's grammar is more lenient than CPython's compiler), the file is SKP900 with
    Python's reason: the text is no module, and the failure no bug to report. A new session is
    made when none is given."""
    session = session if session is not None else Session()
    try:
        result, failed = _check_text(text, path, selection, apply_noqa, prefiltered, max_unroll, session)
    except Exception:
        refused = _refused_by_python(text, path)
        if refused is None:
            raise
        return refused
    if failed:
        return _refused_by_python(text, path) or result
    return result


def _refused_by_python(text: str, path: str) -> Optional[FileResult]:
    """SKP900 with the running Python's reason when it does not compile `text`, else None. The
    whole compile, not only the parse: `break` outside a loop, a repeated keyword argument, a
    `return` in a class body parse, and only the compiler refuses them."""
    error = parsing.python_syntax_error(text, compiler=True)
    if error is None:
        return None
    failure = parsing.python_failure(error, text)
    return prefilter.unchecked(path, str(failure), failure.line, failure.col)


def _check_text(text: str, path: str, selection: Selection, apply_noqa: bool, prefiltered: bool,
                max_unroll: Optional[int], session: Session) -> tuple[FileResult, bool]:
    """The file's result, and whether the analyzer failed on it (with SKP902 selected)."""
    try:
        if not prefiltered and not prefilter.wanted(text, path, session):
            return FileResult(path, ()), False
        facts = analyze(text, path, prefiltered=True, max_unroll=max_unroll, session=session)
    except ParseFailure as failure:
        return prefilter.unchecked(path, str(failure), failure.line, failure.col), False
    if facts is None:
        return FileResult(path, ()), False
    found = checks.module_findings(facts)
    try:
        diagnostics = with_room(session.parts.needs_room(text),
                                lambda: _diagnostics(found, path, text, selection, apply_noqa))
    except ParseFailure as failure:
        return prefilter.unchecked(path, str(failure)), False
    error = _internal_error(facts, path, selection)
    return FileResult(path, diagnostics, error), error is not None


def check_file(path: str, selection: Selection = Selection(), *, max_unroll: Optional[int] = None,
               session: Optional[Session] = None) -> FileResult:
    """Read, decode and check one file; any failure becomes SKP900 with its reason."""
    session = session if session is not None else Session()
    verdict = prefilter.triage(path, session)
    if isinstance(verdict, FileResult):
        return verdict
    return check_text(verdict, path, selection, prefiltered=True, max_unroll=max_unroll, session=session)
