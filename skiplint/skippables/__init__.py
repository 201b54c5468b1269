"""Extract the facts of a module's @skippable classes from a libcst tree.

One statement-level pass builds the scopes (imports and other bindings) and finds every class,
function and import (`index`); expressions are walked only inside the forwards and helpers of
classes that use the API, and at the few statements that can hold a command. `names` reads the
declared and commanded skip names, `known` the values that cannot be commands, `commands` what
each statement of a forward does, `paths` walks each forward once for the commands on each path
through it and its autograd dataflow (skiplint.gradflow), and `extraction` makes the module's facts.
"""

from __future__ import annotations

from skiplint.skippables.extraction import computed, extract, removed_import_brings, specialize
from skiplint.skippables.index import ClassInfo, ModuleIndex, nonlocal_owner
from skiplint.gradflow.attributes import assignment_targets
from skiplint.skippables.names import NameResolver, Resolved, static_string
from skiplint.skippables.paths import ForwardAnalysis

__all__ = ["ClassInfo", "ForwardAnalysis", "ModuleIndex", "NameResolver", "Resolved", "assignment_targets",
           "computed", "extract", "nonlocal_owner", "removed_import_brings", "specialize", "static_string"]
