"""Join runtime failures with static findings: a pure function of the two, of what the run reached,
and of each rule's run-time contract (`Rule.predicts`, `Rule.accounts_for`, in skiplint/rules/).

A static finding is `confirmed` when a runtime failure is read as its code (or as a code it accounts
for, `Accounts.confirms`) at its subject: the same class, the same layer, or the pipe as a whole,
as the rule's `Fails.subject` says, and the same skip name when the failure names one. A runtime
failure is `predicted` when it confirms some static finding, or when a finding accounts for it
without confirming (one mistake that the library reports twice and the static pass once);
`missed` otherwise. An unconfirmed finding is `not reproduced` when the step where its failure
would appear ran over its subject, `not exercised` when it did not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from skiplint.rules import RULES, Rule, pipe
from skiplint.rules.base import Accounts
from skiplint.runtime import messages
from skiplint.runtime.report import Observation, StaticFinding

#: The code whose failure is a balance that does not cover the model (read by the partition steps).
BALANCE = pipe.BALANCE_MISMATCH.code
VERIFY_STEP = "verify_skippables"


@dataclass
class Reach:
    """What the run reached, so that an unconfirmed finding is told apart as not reproduced/exercised."""

    #: Child name -> class name, for every direct child of the model.
    layers: dict[str, str] = field(default_factory=dict)
    #: Classes whose forward completed at least once / raised.
    completed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    verify_ran: bool = False
    layout_ran: bool = False
    #: A Pipe (or a pipelining schedule) ran forward and backward to its end or to a failure.
    pipe_ran: bool = False
    #: A step of the rules' contracts ("verify", "partition", "forward", "pipe") -> the first step
    #: of the run that performed it, as its step line names it.
    ran: dict[str, str] = field(default_factory=dict)

    def performed(self, step: str, name: str) -> None:
        """The run's step `name` performs the contract's `step` (the first one is kept)."""
        self.ran.setdefault(step, name)


def _rule(code: Optional[str]) -> Optional[Rule]:
    return RULES.get(code) if code is not None else None


def _holds(when: tuple[tuple[str, str], ...], finding: StaticFinding) -> bool:
    return all(finding.args.get(key) == value for key, value in when)


def observable(finding: StaticFinding) -> bool:
    """Whether a run can show this finding's failure: its rule predicts one (under the finding's
    arguments), or accounts for another rule's."""
    rule = _rule(finding.code)
    if rule is None:
        return False
    return (any(_holds(f.when, finding) for f in rule.predicts)
            or any(_holds(a.when, finding) for a in rule.accounts_for))


def _layer_is(finding: StaticFinding, layer: Optional[str], cls: Optional[str]) -> bool:
    """The finding's layer (typed: its child name and class) is the observed child."""
    if finding.layer is None or layer is None:
        return False
    return finding.layer.key == layer and (cls is None or finding.layer.cls == cls)


def _at_subject(finding: StaticFinding, o: Observation, subject: Optional[str]) -> bool:
    """The failure is at the finding's subject, as the failure's own rule tells whose it is."""
    if subject == "model":
        return True
    if subject == "class":
        return finding.cls is not None and finding.cls == o.cls
    return _layer_is(finding, o.layer, o.cls) or (finding.layer is None and finding.cls is not None
                                                  and finding.cls == o.cls)


def _predicts(finding: StaticFinding, o: Observation) -> bool:
    """The finding's own contract reads this failure: same code, same subject, same name."""
    if o.code is None or finding.code != o.code:
        return False
    rule = _rule(o.code)
    if rule is not None and rule.predicts and not any(_holds(f.when, finding) for f in rule.predicts):
        return False
    if messages.names_skip(o.code) and finding.name != o.name:
        return False
    return _at_subject(finding, o, messages.subject(o.code))


def _accounts(finding: StaticFinding, o: Observation, order: list[str]) -> Optional[Accounts]:
    """The entry of the finding's contract that accounts for this failure of another code, if any."""
    rule = _rule(finding.code)
    if rule is None or o.code is None or o.code == finding.code:
        return None
    for entry in rule.accounts_for:
        if entry.code != o.code or not _holds(entry.when, finding):
            continue
        if entry.same_name and (o.name is None or finding.name != o.name):
            continue
        if entry.place == "same" and _at_subject(finding, o, messages.subject(o.code)):
            return entry
        if entry.place == "earlier layer" and finding.layer is not None and o.layer in order \
                and finding.layer.key in order and order.index(o.layer) < order.index(finding.layer.key):
            return entry
    return None


def _step_ran(step: str, reach: Reach) -> str:
    """The step of the run that performed this contract step ("" when none did)."""
    if step in reach.ran:
        return reach.ran[step]
    done = {"verify": reach.verify_ran, "partition": reach.layout_ran, "pipe": reach.pipe_ran,
            "forward": bool(reach.completed or reach.failed)}[step]
    return step if done else ""


def _steps_of(finding: StaticFinding) -> list[str]:
    """The contract steps where the finding's failure would appear, the earliest first."""
    rule = _rule(finding.code)
    if rule is None:
        return []
    found: set[str] = {f.step for f in rule.predicts if _holds(f.when, finding)}
    found |= {step for entry in rule.accounts_for if _holds(entry.when, finding)
              for step in messages.steps(entry.code)}
    return [step for step in ("verify", "partition", "forward", "pipe") if step in found]


def _unconfirmed(s: StaticFinding, reach: Reach) -> tuple[str, str, str]:
    """(verdict, note, the step that exercised it) of a finding no failure confirms."""
    if not observable(s):
        return "not exercised", "its failure is silent at run time or happens before a run", ""
    classes = set(reach.layers.values())
    step = _steps_of(s)[0]
    ran = _step_ran(step, reach)
    if step in ("verify", "forward") and s.cls is not None and s.cls not in classes:
        return "not exercised", f"'{s.cls}' is not a layer of this model", ""
    if step != "forward":
        why = {"pipe": "no Pipe ran forward and backward", "partition": "the partitioning step did not run",
               "verify": "verify_skippables did not run"}[step]
        return ("not reproduced", "", ran) if ran else ("not exercised", why, "")
    if s.cls is None:
        return "not exercised", "not about a layer of this model", ""
    if s.cls in reach.failed:
        return "not exercised", f"the forward of '{s.cls}' failed first with another error", ""
    if s.cls in reach.completed:
        return "not reproduced", "", ran
    return "not exercised", f"the run did not reach '{s.cls}'", ""


def join(observations: list[Observation], static: list[StaticFinding],
         reach: Reach) -> tuple[list[Observation], list[StaticFinding]]:
    """Mark each observation predicted/missed and give each static finding its verdict."""
    joined_obs = []
    confirmed: dict[int, str] = {}
    order = list(reach.layers)
    for o in observations:
        hits = [i for i, s in enumerate(static) if _predicts(s, o)]
        predicted = bool(hits)
        for i, s in enumerate(static):
            entry = _accounts(s, o, order) if not hits else None
            if entry is None:
                continue
            predicted = True
            if entry.confirms:  # the failure is this finding's own, worded as another rule's
                o = replace(o, code=s.code)
                hits = [i]
                break
        for i in hits:
            confirmed.setdefault(i, o.step)
        joined_obs.append(replace(o, predicted=predicted))
    joined_static = []
    for i, s in enumerate(static):
        if i in confirmed:
            joined_static.append(replace(s, verdict="confirmed", note="", step=confirmed[i]))
        else:
            verdict, note, step = _unconfirmed(s, reach)
            joined_static.append(replace(s, verdict=verdict, note=note, step=step))  # type: ignore[arg-type]
    return _dedupe(joined_obs), joined_static


def _dedupe(observations: list[Observation]) -> list[Observation]:
    """One failure, once: the same code, layer and name met by several steps is kept at the first;
    a forward failure of a layer and name that verify_skippables already named is that same root cause."""
    seen: set[tuple[Optional[str], ...]] = set()
    verified = {(o.layer, o.name) for o in observations if o.step == VERIFY_STEP}
    out = []
    for o in observations:
        if o.step != VERIFY_STEP and (o.layer, o.name) in verified:
            continue
        key = (o.code, o.layer, o.cls, o.name) + ((o.message,) if o.code is None else ())
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out
