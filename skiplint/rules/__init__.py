"""Every rule skiplint reports, one unit each (`skiplint.rules.base.Rule`), grouped by family.

This package is the only place a code number is written down: the checks make findings through
the rules' own values, and docs/rules.md, `skiplint rule`, the flake8 plugin, the CLI's
--select/--ignore and the runtime companion read them from here.
"""

from __future__ import annotations

from skiplint.rules import analyzer, composition, one_class, pipe, portability
from skiplint.rules.base import Rule, selected as _selected

#: Families in the order of their codes, each with its title and what fails.
FAMILIES = (one_class, composition, pipe, portability, analyzer)

RULES: dict[str, Rule] = {rule.code: rule for family in FAMILIES for rule in vars(family).values()
                          if isinstance(rule, Rule)}
OPT_IN: frozenset[str] = frozenset(rule.code for rule in RULES.values() if rule.opt_in)


def selected(code: str, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
             extend_select: tuple[str, ...] = ()) -> bool:
    """flake8-style selection by prefix: the longest matching prefix of select/ignore wins."""
    return _selected(code, OPT_IN, select, ignore, extend_select)


__all__ = ["FAMILIES", "OPT_IN", "RULES", "Rule", "selected"]
