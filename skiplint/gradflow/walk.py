"""The one walk of a forward body (and of the methods, functions and submodules it reaches): each
statement and expression evaluated to a `model.Value`. Its parts: walker.py (the state they share),
statements.py, expressions.py and calls.py (what it follows into)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional

import libcst as cst

if TYPE_CHECKING:  # read in annotations only: SKP303's check imports this package from the rules
    from skiplint.imports import Scope
from skiplint.gradflow.attributes import torch_layers
from skiplint.gradflow.calls import Calls
from skiplint.gradflow.expressions import Expressions
from skiplint.gradflow.model import Flow, INPUT, INPUT_SOURCE, Value
from skiplint.gradflow.statements import Statements
from skiplint.gradflow.walker import FunctionResolver


class Analysis(Statements, Expressions, Calls):
    """The walk of one skippable forward, put together from its parts."""


def analyse(forward: cst.FunctionDef, methods: dict[str, cst.FunctionDef], scope_of: dict[int, Scope],
            commands: Mapping[int, str], functions: Optional[Mapping[str, cst.FunctionDef]] = None,
            classes: Optional[Mapping[str, Mapping[str, cst.FunctionDef]]] = None,
            imported: Optional[tuple[str, FunctionResolver]] = None) -> Flow:
    """The dataflow of one skippable forward (`commands`: id of each stash/pop call -> its kind;
    `functions`: the module-level functions of its module, followed where forward calls them;
    `classes`: the methods of its module-level classes, followed where forward runs an instance
    that __init__ stores; `imported`: the module's path and what finds the project functions it
    imports, followed where forward calls them)."""
    classes = classes or {}
    analysis = Analysis(scope_of, methods, torch_layers(methods, scope_of, classes), commands, functions, classes,
                        imported)
    output, returned = analysis.run(forward, [Value(frozenset(), INPUT, frozenset({INPUT_SOURCE}))])
    analysis.flow.output = output
    analysis.flow.returned = returned
    return analysis.flow
