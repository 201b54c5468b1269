"""Autograd dataflow through a skippable forward: which tensors share saved autograd history.

balance_by_time profiles each layer alone: it detaches the layer's input (keeping requires_grad),
runs forward, then backward from the layer's output, which frees the tensors every node of that
graph saved. A skip stashed there and popped by a later layer leads the later layer's backward into
the same graph: it fails ('Trying to backward through the graph a second time') exactly when the
stashed tensor and the output share a node that saved tensors, and the popping layer's output
depends on the popped tensor. Measured on torchgpipe 0.0.7 and fairscale 0.4.13
(tests/profiling_shapes.py, run by tests/runtime/test_oracle_conditions.py): `+`, `-`, views,
`cat`, `sum` save nothing; a Linear saves its input; `relu`, `*`, ... save theirs only when some
operand requires grad; `detach()`, `torch.no_grad()` and constants start no history.

A value (`model.Value`) is followed through forward's statements and expressions (`walk`), and
through the methods, module functions (of its module, or imported from the project) and submodules
it reaches, as the set of saving nodes its history certainly holds. A node is certain when some
operand certainly requires grad (a layer or parameter that is not frozen: `attributes`), or exists
only when the layer's input requires grad.
Branches and loops keep what every path holds. A torch function not known to save nothing is taken
to save its tensor arguments; any other call that is not followed depends on its arguments and
holds no saving node, so that a report is certain. The same walk finds the pops whose tensor no
code reads with its history (`Flow.read`): only `name.detach()`, `name.detach_()`, under
`torch.no_grad()`, or not at all.
"""

from __future__ import annotations

from skiplint.gradflow.attributes import Attributes, torch_layers
from skiplint.gradflow.model import (
    BREAKING, INPUT, INPUT_SOURCE, ITEM, MAY, NO, NOTHING, PARAM_LAYERS, PASSING, PASSING_LAYERS, SAVING,
    SAVING_LAYERS, YES, Flow, Value, meet,
)
from skiplint.gradflow.walker import FunctionResolver, ImportedFunction

__all__ = ["Attributes", "BREAKING", "Flow", "FunctionResolver", "INPUT", "INPUT_SOURCE", "ITEM", "ImportedFunction",
           "MAY", "NO", "NOTHING", "PARAM_LAYERS", "PASSING", "PASSING_LAYERS", "SAVING", "SAVING_LAYERS", "Value",
           "YES", "meet", "torch_layers"]
