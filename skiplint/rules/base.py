"""What a rule is: one unit holding everything skiplint knows about one code.

A family module declares its rules as `Rule` values, then its checks (functions from one fact to
findings, registered by the fact they consume: `checks`), its fixers (`fixes`) and how findings of
several facts combine (`combines`). The drivers (skiplint.checks) run every check registered for
each fact (`run`) and name no code. A Diagnostic is made only here (`diagnostic`).
"""

from __future__ import annotations

import dataclasses
import string
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Optional, Sequence, TypeVar

from skiplint.findings import Finding, Owner, OwnerRef

if TYPE_CHECKING:
    from skiplint.diagnostics import Diagnostic
    from skiplint.edits import Edit, Source


#: The steps of `skiplint verify` where a library failure appears (a rule's run-time contract):
#: verify_skippables over the whole Sequential; a layer's forward (or the backward it starts), in
#: the plain Sequential or in the pipe; splitting the Sequential at the balance; the pipe's own
#: forward and backward across partitions (never met by the plain Sequential).
Step = Literal["verify", "forward", "partition", "pipe"]
#: What tells whose failure it is: the failing layer's class is the finding's class ("class"); the
#: failing child is the finding's layer ("layer"), named by the message or, when the message names
#: none, the first child that stashes the name with no later pop ("stashing layer"); the pipe as a
#: whole ("model": the same code in the model's files is the prediction).
Subject = Literal["class", "layer", "stashing layer", "model"]
#: Where a failure a finding accounts for sits: at the finding's own subject, or at an earlier layer.
Place = Literal["same", "earlier layer"]


@dataclass(frozen=True)
class Fails:
    """One library failure a rule predicts: what `skiplint verify` reads back into the rule's code
    (skiplint.runtime.contract)."""

    #: Where in a run it appears.
    step: Step
    #: A regular expression matched in full (re.S) against the failure as the library words it:
    #: `Type: message` for an exception (`Type (raised in PATH)` for one with no message), or one
    #: `* ...` line of verify_skippables' TypeError. Named groups give the failure's skip `name`
    #: (or `names`, several quoted), `layer` (the child's name) and `op`; a failure with no name
    #: group is matched by its subject alone.
    pattern: str
    subject: Subject
    #: The finding's arguments that must hold for its failure to be this one (e.g. a pop, not a
    #: stash, of SKP110): (argument, value) pairs.
    when: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Accounts:
    """A library failure of another rule's code that a finding of this rule accounts for: one
    mistake that the library words as another rule's failure."""

    #: The code the library's failure is read as.
    code: str
    #: Where that failure sits relative to the finding's subject.
    place: Place = "same"
    #: The finding's arguments that must hold: (argument, value) pairs.
    when: tuple[tuple[str, str], ...] = ()
    #: The failure names the finding's skip name (False: the subject alone tells).
    same_name: bool = True
    #: The failure confirms the finding and is shown under its code (True), or only shows that
    #: the finding predicted it (False: the finding's own failure confirms it).
    confirms: bool = True


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    #: str.format template; the reported text is "CODE " + template.format(**args).
    template: str
    #: One line: what the rule finds.
    summary: str
    #: The run-time failure the rule predicts (empty for the analyzer's own codes), for people.
    failure: str
    #: Where the diagnostic is reported: the line to put `# noqa: CODE` on.
    reported_at: str
    #: When the rule reports, where that is narrower than its summary says.
    when: Optional[str] = None
    opt_in: bool = False
    #: Codes this rule replaces where both would be reported at one node (one mistake, one
    #: diagnostic): the more certain failure wins.
    supersedes: tuple[str, ...] = ()
    #: The arguments that tell two findings of this rule at one node apart when a block is built
    #: twice (one mistake at one place is one finding, whichever builds it): by default the skip's
    #: bare name (a rule without one: one finding per node).
    distinct_by: tuple[str, ...] = ("name",)
    #: The rule's run-time contract, what `skiplint verify` joins (skiplint.runtime.contract): the
    #: library failures it predicts, each with its step and subject ...
    predicts: tuple[Fails, ...] = ()
    #: ... and the failures of other codes that its findings account for.
    accounts_for: tuple[Accounts, ...] = ()
    #: The title of its fix as an editor offers it: a short verb phrase ("Add `yield`"), a
    #: str.format template of the finding's arguments and `target` (`--target`); None: no fixer.
    fix_title: Optional[str] = None
    #: The template's fields, in order: the rule's arguments.
    fields: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = (name for _literal, name, _spec, _conversion in string.Formatter().parse(self.template))
        object.__setattr__(self, "fields", tuple(dict.fromkeys(name for name in names if name is not None)))

    @property
    def fixer(self) -> Optional[Fixer]:
        """`skiplint fix`'s rewrite of a finding of this rule (registered beside the rule with
        `@fixes(RULE)`), or None when the rule has no mechanical fix."""
        return FIXERS.get(self.code)

    def title(self, args: Iterable[tuple[str, str]], target: str) -> str:
        """The fix's title for a finding with `args`, fixed for `target` (the rule's code where it
        has no title)."""
        if self.fix_title is None:
            return f"Fix {self.code}"
        return self.fix_title.format(**dict(args), target=target)

    def format(self, **args: object) -> str:
        """The whole message: the code, then the template filled with the arguments (`text`)."""
        return f"{self.code} {self.text(**args)}"

    def text(self, **args: object) -> str:
        return self.template.format(**args)

    def at(self, site: Optional[Any], *owners: OwnerRef, **args: object) -> Finding:
        """A finding of this rule at `site` (a `facts.Site`; None: the file's first line), with its
        arguments: every field of the template, and any the message does not show (the skip's bare
        name, for the join)."""
        missing = [name for name in self.fields if name not in args]
        if missing:
            raise TypeError(f"{self.code} needs {', '.join(missing)}")
        return Finding(self.code, tuple((key, str(value)) for key, value in args.items()), site, owners)

    def identity(self, finding: Finding) -> tuple[Optional[str], ...]:
        """What tells `finding` apart from another of this rule at its node (`distinct_by`)."""
        return tuple(finding.arg(name) for name in self.distinct_by)

    def diagnostic(self, path: str, line: int = 1, col: int = 0, **args: object) -> Diagnostic:
        """This rule's diagnostic at `line`:`col` of `path` (a file-level code: the file could not
        be checked, or the analyzer failed on it), its message rendered from its arguments."""
        return diagnostic(path, (line, col), self.code, self.format(**args),
                          args=tuple((key, str(value)) for key, value in args.items()))


def diagnostic(path: str, start: tuple[int, int], code: str, message: str, end: tuple[int, int] = (0, 0),
               args: tuple[tuple[str, str], ...] = (), owners: tuple[Owner, ...] = ()) -> Diagnostic:
    """The one place a Diagnostic is made: a finding located in `path` (`end` (0, 0): not known),
    with its rendered message, its arguments and its owners."""
    from skiplint.diagnostics import Diagnostic  # not loaded by the front that finds nothing (flake8's)

    return Diagnostic(path, start[0], start[1], code, message, end[0], end[1], args, owners)


# -- checks, by the fact they consume ---------------------------------------------------------------

#: The kinds of fact a check consumes, and what it is given for each:
#: "module": the module's `facts.ModuleFacts`; "class": one `facts.SkippableClass`;
#: "composition": one `facts.Composition` and whether verify_skippables runs on it (a bool);
#: "pipe": one `facts.Pipe` (a pipe, balancer or LazyModule call); "model": the module's
#: `facts.ModelFacts` (what it builds, as a whole); "unchecked": a file that could not be checked
#: (`findings.Unchecked`); "bug": an analyzer failure (`findings.AnalyzerBug`).
Fact = Literal["module", "class", "composition", "pipe", "model", "unchecked", "bug"]

CheckFunction = Callable[..., Iterable[Finding]]
_F = TypeVar("_F", bound=CheckFunction)
#: How the findings of one rule that several facts make become the ones reported.
Combine = Callable[[list[Finding]], Iterable[Finding]]


@dataclass(frozen=True)
class Check:
    """One check: the kind of fact it consumes, the rules whose findings it makes, the function."""

    fact: Fact
    rules: tuple[Rule, ...]
    function: CheckFunction


#: Every check by the fact it consumes, in the order the family modules register them (importing
#: `skiplint.rules` imports every family, so all are there).
CHECKS: dict[str, list[Check]] = {}
#: Rule code -> how the findings of that rule that several facts make at one node become one
#: (each fact's findings of it, in order -> the findings reported).
COMBINE: dict[str, Combine] = {}


def checks(fact: Fact, *reports: Rule) -> Callable[[_F], _F]:
    """Register a check of `fact` that makes findings of the rules `reports`."""
    def register(function: _F) -> _F:
        CHECKS.setdefault(fact, []).append(Check(fact, reports, function))
        return function
    return register


#: A fixer: (the file as Python parses it, the finding, the --target) -> the edits; it raises
#: `skiplint.edits.NotFixable` with the reason when this occurrence has none.
Fixer = Callable[["Source", "Diagnostic", str], Sequence["Edit"]]
_Fixer = TypeVar("_Fixer", bound=Fixer)
#: Rule code -> its fixer (`Rule.fixer`).
FIXERS: dict[str, Fixer] = {}


def fixes(rule: Rule) -> Callable[[_Fixer], _Fixer]:
    """Register the fixer of `rule` (what `skiplint fix` and the editor's quick fix apply)."""
    def register(function: _Fixer) -> _Fixer:
        FIXERS[rule.code] = function
        return function
    return register


def combines(rule: Rule) -> Callable[[Combine], Combine]:
    """Register how the findings of `rule` that several facts make become the ones reported."""
    def register(function: Combine) -> Combine:
        COMBINE[rule.code] = function
        return function
    return register


def run(fact: Fact, *given: object, owners: tuple[OwnerRef, ...] = (),
        but: Optional[CheckFunction] = None) -> Iterator[Finding]:
    """The findings of every check registered for `fact` (except `but`), given `given`; with
    `owners`, each finding belongs to them (what the fact is part of)."""
    for check in CHECKS.get(fact, ()):
        if check.function is not but:
            for finding in check.function(*given):
                yield owned(finding, owners) if owners else finding


def owned(finding: Finding, owners: tuple[OwnerRef, ...]) -> Finding:
    """`finding`, belonging to `owners` (the fact it was found for, or every build it was found in)."""
    return dataclasses.replace(finding, owners=owners)
