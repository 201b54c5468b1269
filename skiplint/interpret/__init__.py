"""Composition facts: which nn.Sequential children, namespaces and pipe calls a module builds.

A small abstract interpreter runs the statements that build models: module code, functions that
nobody in the module calls (tests, builders; parameters take their defaults), helpers at their
call sites with the arguments given, and the `__init__` of Sequential subclasses. It knows
literals, lists, dicts, constant ranges (unrolled, bounded), `Namespace()` identities and
`.isolate(...)`; anything else, and anything past the budget (skiplint.limits.Budget), is
unknown, and a composition is not checked past an unknown.

values.py: the value kinds; core.py: scopes, control flow and what a run keeps; rebinding.py:
`global` and `nonlocal`; operations.py: constants under the budget; statements.py, expressions.py,
calls.py, classes.py, api.py: the parts of the interpreter; interpreter.py: running a module;
extract.py: the facts.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import libcst as cst

from skiplint.facts import Command, Declaration, Forward, ModelFacts, ModuleFacts, SkippableClass
from skiplint.interpret.core import ClassResolver
from skiplint.interpret.extract import Conversion
from skiplint.interpret.interpreter import Interpreter
from skiplint.interpret.values import ClassV
from skiplint.limits import BUDGET, Budget
from skiplint.positions import Locator
from skiplint.skippables import ModuleIndex

__all__ = ["NEEDLES", "class_from_summary", "extract", "relevant"]

#: Words of which one must occur for a module to build compositions, call pipes or call a
#: skippable layer directly.
NEEDLES = ("Sequential", "Pipe", "balance_by_", "LazyModule", "verify_skippables", "inspect_skip_layout",
           "skippable")


def relevant(text: str) -> bool:
    """Whether a module's text can build a composition or call a pipe at all (cheap test)."""
    return any(needle in text for needle in NEEDLES)


def class_from_summary(name: str, kind: str, stash: Optional[frozenset[str]],
                       pop: Optional[frozenset[str]], output_stashes: frozenset[str] = frozenset()) -> ClassV:
    """A class of another project module, as the interpreter sees it: a skippable one as the facts
    its summary keeps (its declarations, the stashes that share its output)."""
    if kind != "skippable":
        return ClassV(name, kind)
    shares = tuple(Command("stash", skip, shares_output=True) for skip in sorted(output_stashes))
    facts = SkippableClass(name, Declaration.of("stash", stash), Declaration.of("pop", pop), Forward(None, shares))
    return ClassV(name, kind, facts)


def extract(module: cst.Module, path: str, facts: ModuleFacts, index: ModuleIndex,
            locator: Optional[Locator] = None, resolve_class: Optional[ClassResolver] = None,
            max_unroll: Optional[int] = None, verified_functions: Sequence[str] = (),
            budget: Budget = BUDGET) -> ModelFacts:
    """The compositions and pipes of one parsed module (whose skippable classes are in `facts`).

    `max_unroll` replaces the budget's loop unrolling (the `max-unroll` setting).
    `verified_functions`: module-level functions whose result is given to a pipe by a harness (the
    runtime companion's `FILE:build` target), so that verify_skippables runs on it."""
    if locator is None:
        locator = next((c.site.locator for c in facts.skippables if c.site is not None), None) or Locator(module)
    if max_unroll is not None:
        budget = dataclasses.replace(budget, unroll=max(int(max_unroll), 0))
    interpreter = Interpreter(index, facts, locator, budget, resolve_class)
    interpreter.verified_functions = frozenset(verified_functions)
    interpreter.run()
    specialized = interpreter.specializations()
    models = Conversion(interpreter).facts(path)
    return dataclasses.replace(models, specialized=specialized) if specialized else models
