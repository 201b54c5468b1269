"""The drivers: every check of the rules package run on each fact it consumes (the module, each
skippable class, what the module builds, each composition and pipe), with what the findings
belong to. Which rule a check serves, and which fact it consumes, is written in the rule's family
module (`skiplint.rules.base.checks`); nothing here names a code."""

from __future__ import annotations

from typing import Iterator, Optional

from skiplint import rules
from skiplint.findings import OwnerRef
from skiplint.facts import Composition, Finding, ModelFacts, ModuleFacts, SkippableClass
from skiplint.pipes import verified as verified_ids
from skiplint.rules.base import COMBINE, owned


def module_findings(facts: ModuleFacts) -> Iterator[Finding]:
    """Every finding of a module: those carried with its facts (its compositions' and pipes',
    `model_findings`), those of the module's checks, then each class's.

    One mistake, one diagnostic: a finding that a finding of a rule which supersedes it replaces
    at the same node is left out (a discarded pop that a pipe puts across partitions is not also
    the style warning at that call), and so is one that a finding about the same class replaces.
    The findings of a rule that several classes make at one node become one (`Rule` combines)."""
    found = [*facts.findings, *rules.run("module", facts)]
    combined: dict[str, list[Finding]] = {}
    for cls in facts.skippables:
        for finding in class_findings(cls):
            if finding.code in COMBINE:
                combined.setdefault(finding.code, []).append(finding)
            else:
                found.append(finding)
    for code, each in combined.items():
        found.extend(COMBINE[code](each))
    yield from rules.without_superseded(found)


def class_findings(cls: SkippableClass) -> Iterator[Finding]:
    """The findings of one class (its checks'), owned by the class (at its class statement),
    without those another of them supersedes."""
    found = list(rules.run("class", cls, owners=(OwnerRef("class", cls.name, cls.site),)))
    yield from rules.without_superseded(found, at_node=False)


# -- compositions and pipes ------------------------------------------------------------------------

def model_findings(model: ModelFacts) -> Iterator[Finding]:
    """Every finding of a module's compositions and pipes: one per (code, reported node, skip).

    A layer maps each name to one namespace, so within one build the name tells its skips apart:
    two skips of one layer are two findings. A block that is built twice (a helper called with two
    arguments) is one mistake at one place, reported once, even where each build isolates it in
    a namespace of its own (what tells two findings of a rule apart: `Rule.distinct_by`)."""
    verified = verified_ids(model)
    found = [*rules.run("model", model)]
    for composition in model.compositions:
        found += composition_findings(composition, verified=id(composition) in verified)
    for pipe in model.pipes:  # owned by the pipe's composition
        owners = (_owner(pipe.composition),) if pipe.composition is not None else ()
        found += rules.run("pipe", pipe, owners=owners)
    seen: dict[tuple[str, int, object], Finding] = {}
    for finding in found:
        node_id = id(finding.site.node) if finding.site is not None else 0
        key = (finding.code, node_id, rules.RULES[finding.code].identity(finding))
        first = seen.get(key)
        if first is None:
            seen[key] = finding
        else:  # the same mistake in another build: it belongs to that composition too
            known = {_owner_key(o) for o in first.owners}
            seen[key] = owned(first, first.owners + tuple(o for o in finding.owners if _owner_key(o) not in known))
    yield from seen.values()


def _owner_key(owner: OwnerRef) -> tuple[object, ...]:
    """Owners are told apart by their node too (a Site equals every other Site)."""
    return (owner.kind, owner.name, owner.factories, id(owner.site.node) if owner.site is not None else 0)


def _owner(composition: Composition) -> OwnerRef:
    """The owner of a composition's findings (and its pipes'): the composition, at its expression,
    with the module-level functions that return it."""
    return OwnerRef("composition", composition.name, composition.site, composition.factories)


def composition_findings(composition: Composition, verified: Optional[bool] = None) -> Iterator[Finding]:
    """The findings of one composition (its checks': verify_skippables on its direct children),
    owned by it. `verified`: whether verify_skippables runs on it (given to GPipe/Pipe or
    verify_skippables; default: whether it is given to a pipe)."""
    if verified is None:
        verified = composition.piped
    return rules.run("composition", composition, verified, owners=(_owner(composition),))
