"""Join runtime failures with static findings: a pure function of the two and of what the run reached.

A static finding is `confirmed` only when a runtime failure maps to the same code, the same subject
(class for SKP1xx, layer for SKP2xx) and the same skip name. A runtime failure is `predicted` when
it confirms some static finding, or when a finding stands for it (STANDS_FOR: one mistake that the
static pass reports once and the library twice), `missed` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from skiplint.rules import RULES, Rule, composition, one_class, pipe
from skiplint.runtime import messages
from skiplint.runtime.report import Observation, StaticFinding

#: Codes of the rules about one @skippable class (their subject is the class, not a layer).
_CLASS_CODES = frozenset(rule.code for rule in vars(one_class).values() if isinstance(rule, Rule))
#: The late-bound name and the conditional command: static findings that explain a failure the
#: library words as another code's (an undeclared stash or pop; a declared name not stashed or popped).
_LATE = one_class.LATE_BOUND_SKIP_NAME.code
CONDITIONAL = one_class.CONDITIONAL_COMMAND.code
#: An undeclared stash or pop that a late-bound name (SKP117) explains when the static pass said so.
_BY_LATE = frozenset({one_class.UNDECLARED_STASH.code, one_class.UNDECLARED_POP.code})
#: Forward failures that a conditional (SKP111) explains when the static pass said so, with the
#: verb the finding must have.
_BY_CONDITION = {one_class.UNUSED_STASH_DECLARATION.code: "stashed", one_class.UNUSED_POP_DECLARATION.code: "popped"}
#: Codes whose failure a run can show: those whose rule predicts a library failure, and those
#: that explain one; the others are silent or happen before a run can start.
OBSERVABLE = frozenset(code for code in RULES if messages.predicting(code)) | {_LATE, CONDITIONAL}
#: Codes checked by verify_skippables over the whole Sequential at once.
VERIFY_CODES = messages.verify_codes()
BALANCE = pipe.BALANCE_MISMATCH.code
DISCARDED_POP = pipe.DISCARDED_CROSS_PARTITION_POP.code
#: Codes whose runtime failure names neither layer nor skip: the same code in the model's files is
#: the prediction.
PIPE_LEVEL = frozenset({BALANCE, DISCARDED_POP})
#: Codes about one class whose failure needs no skip name to match.
UNNAMED = frozenset(code for code in OBSERVABLE - messages.naming_codes() - PIPE_LEVEL - {_LATE, CONDITIONAL})
VERIFY_STEP = "verify_skippables"
UNPOPPED = composition.STASH_NEVER_POPPED.code
_REPEAT = one_class.REPEATED_COMMAND.code


#: Where a failing layer sits, relative to the layer of a finding that stands for its failure.
EARLIER = "an earlier layer"
#: Runtime failures that a static finding of another code stands for, keyed by the finding's code:
#: {finding's code: {failure's code: where the failing layer sits}}; the skip name is the same.
#: A pop in the wrong namespace is one mistake that verify_skippables reports twice: at the pop
#: (SKP201) and at the stash that nothing pops then (SKP202, an earlier layer). The static pass
#: reports it once, at the pop, and leaves the stash's SKP202 out by design
#: (skiplint.pipes.composition_findings): that SKP201 predicts both failures.
STANDS_FOR: dict[str, dict[str, str]] = {
    composition.POP_BEFORE_STASH.code: {UNPOPPED: EARLIER},
}


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


def _strip(text: Optional[str]) -> Optional[str]:
    return text.strip("'\"") if text is not None else None


def _is_class_code(code: str) -> bool:
    return code in _CLASS_CODES


def _layer_key(static_layer: str) -> tuple[Optional[str], str]:
    """The static pass writes a layer as `KEY (Label)`: its child name, then what it is."""
    head, _, label = static_layer.partition(" (")
    return _strip(head), label


def _layer_matches(static_layer: Optional[str], obs: Observation) -> bool:
    """A static finding's layer (its child name, or the class expression) is the observed layer."""
    if static_layer is None or obs.layer is None:
        return False
    head, label = _layer_key(static_layer)
    if head != obs.layer:
        return False
    label = label.rstrip(")")
    return not label or obs.cls is None or label.split(".")[-1].split("(")[0] == obs.cls


def matches(s: StaticFinding, o: Observation) -> bool:
    if o.code is None or s.code != o.code:
        return False
    if o.code in PIPE_LEVEL:
        return True
    if o.code not in UNNAMED and s.name != o.name:
        return False
    if _is_class_code(o.code):
        return s.cls is not None and s.cls == o.cls
    return _layer_matches(s.layer, o) or (s.layer is None and s.cls is not None and s.cls == o.cls)


def stands_for(s: StaticFinding, o: Observation, reach: Reach) -> bool:
    """Whether the finding predicts a failure of another code (STANDS_FOR): the same skip name, at a
    layer of the model where the table puts it relative to the finding's layer."""
    where = STANDS_FOR.get(s.code, {}).get(o.code or "")
    if where is None or o.name is None or s.name != o.name or s.layer is None or o.layer is None:
        return False
    order = list(reach.layers)
    own = _layer_key(s.layer)[0]
    if own not in order or o.layer not in order:
        return False
    if where == EARLIER:
        return order.index(o.layer) < order.index(own)
    raise ValueError(f"STANDS_FOR: unknown place {where!r}")


def _explained(o: Observation, static: list[StaticFinding]) -> Observation:
    """The observation under the code of the static finding that explains it better: a late-bound
    name (SKP117) for an undeclared stash or pop, a conditional (SKP111) for one not done."""
    if o.code in _BY_LATE and any(s.code == _LATE and s.cls == o.cls and s.name == o.name for s in static):
        return replace(o, code=_LATE)
    verb = _BY_CONDITION.get(o.code) if o.code is not None else None
    if verb is None:
        return o
    for s in static:
        if s.code == CONDITIONAL and s.cls == o.cls and s.name == o.name and s.args.get("verb") == verb:
            return replace(o, code=CONDITIONAL)
    return o


def _unconfirmed(s: StaticFinding, reach: Reach) -> tuple[str, str]:
    if s.code == DISCARDED_POP:
        return ("not reproduced", "") if reach.pipe_ran else ("not exercised", "no Pipe ran forward and backward")
    if s.code not in OBSERVABLE or (s.code == _REPEAT and s.args.get("verb") == "stashed"):
        return "not exercised", "its failure is silent at run time or happens before a run"
    if s.code == BALANCE:
        return ("not reproduced", "") if reach.layout_ran else ("not exercised", "the partitioning step did not run")
    classes = set(reach.layers.values())
    if s.code in VERIFY_CODES:
        if s.cls is not None and s.cls not in classes:
            return "not exercised", f"'{s.cls}' is not a layer of this model"
        return ("not reproduced", "") if reach.verify_ran else ("not exercised", "verify_skippables did not run")
    if s.cls is None or s.cls not in classes:
        return "not exercised", f"'{s.cls}' is not a layer of this model" if s.cls else "not about a layer of this model"
    if s.cls in reach.failed:
        return "not exercised", f"the forward of '{s.cls}' failed first with another error"
    if s.cls in reach.completed:
        return "not reproduced", ""
    return "not exercised", f"the run did not reach '{s.cls}'"


def join(observations: list[Observation], static: list[StaticFinding],
         reach: Reach) -> tuple[list[Observation], list[StaticFinding]]:
    """Mark each observation predicted/missed and give each static finding its verdict."""
    joined_obs = []
    confirmed: set[int] = set()
    for o in observations:
        o = _explained(o, static)
        hits = [i for i, s in enumerate(static) if matches(s, o)]
        confirmed.update(hits)
        # A finding that stands for this failure predicts it; only one of its own code confirms it.
        predicted = bool(hits) or any(stands_for(s, o, reach) for s in static)
        joined_obs.append(replace(o, predicted=predicted))
    joined_static = []
    for i, s in enumerate(static):
        if i in confirmed:
            joined_static.append(replace(s, verdict="confirmed", note=""))
        else:
            verdict, note = _unconfirmed(s, reach)
            joined_static.append(replace(s, verdict=verdict, note=note))  # type: ignore[arg-type]
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
