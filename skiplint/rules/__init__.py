"""Every rule skiplint reports, one unit each (`skiplint.rules.base.Rule`), grouped by family.

This package is the only place a code number is written down: the checks make findings through
the rules' own values, and docs/rules.md, `skiplint rule`, the flake8 plugin, the CLI's
--select/--ignore and the runtime companion read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from skiplint.findings import Finding
from skiplint.rules import analyzer, composition, one_class, pipe, port, portability
from skiplint.rules.base import Rule, diagnostic, run

#: Families in the order of their codes, each with its title and what fails.
FAMILIES = (one_class, composition, pipe, portability, port, analyzer)

RULES: dict[str, Rule] = {rule.code: rule for family in FAMILIES for rule in vars(family).values()
                          if isinstance(rule, Rule)}
OPT_IN: frozenset[str] = frozenset(rule.code for rule in RULES.values() if rule.opt_in)


def selected(code: str, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
             extend_select: tuple[str, ...] = ()) -> bool:
    """flake8-style selection by prefix: the longest matching prefix of select/ignore wins."""
    chosen = select or ("SKP",)
    best_select = max((len(p) for p in (*chosen, *extend_select) if code.startswith(p)), default=-1)
    if code in OPT_IN:
        explicit = max((len(p) for p in (*select, *extend_select) if code.startswith(p)), default=-1)
        # Opt-in codes are on only when named in full, as flake8's extend_default_ignore does.
        if explicit < len(code):
            return False
        best_select = explicit
    best_ignore = max((len(p) for p in ignore if code.startswith(p)), default=-1)
    return best_select >= 0 and best_select > best_ignore


@dataclass(frozen=True)
class Selection:
    """Which codes are reported: flake8's --select/--ignore/--extend-select, by prefix."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()

    def __call__(self, code: str) -> bool:
        return selected(code, self.select, self.ignore, self.extend_select)


def without_superseded(found: Sequence[Finding], at_node: bool = True) -> list[Finding]:
    """One mistake, one diagnostic: `found` without each finding that a finding of a rule which
    supersedes its rule (`Rule.supersedes`) replaces, at the same node (`at_node`), or anywhere
    in `found` (the findings of one fact: one class)."""
    over: dict[str, set[int]] = {}
    for finding in found:
        for code in RULES[finding.code].supersedes:
            over.setdefault(code, set()).add(id(finding.site.node) if at_node and finding.site is not None else 0)
    if not over:
        return list(found)
    return [f for f in found if f.code not in over
            or (at_node and (f.site is None or id(f.site.node) not in over[f.code]))]


__all__ = ["FAMILIES", "OPT_IN", "RULES", "Rule", "Selection", "diagnostic", "run", "selected",
           "without_superseded"]
