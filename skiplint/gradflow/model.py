"""The value model of a forward body: what a tensor's autograd history certainly holds (the
nodes that saved tensors), whether it requires grad, what it depends on; the torch operations by
what they save; and the result of one forward's walk (`Flow`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional, Sequence

import libcst as cst


#: Grad of a value: none, only when the layer's input requires grad, certainly.
NO, INPUT, YES = 0, 1, 2


#: torch.nn layers with parameters (they require grad): their output certainly does, and they save
#: their input for the gradient of their weights.
PARAM_LAYERS = frozenset({
    "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
    "LayerNorm", "GroupNorm", "Embedding", "EmbeddingBag", "PReLU", "RNN", "LSTM", "GRU", "MultiheadAttention",
})


#: torch.nn layers without parameters that save a tensor when their input requires grad.
SAVING_LAYERS = frozenset({
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softplus",
    "Softmax", "LogSoftmax", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "Hardtanh", "Hardswish", "Hardsigmoid",
})


#: torch.nn layers that return their input or a view of it.
PASSING_LAYERS = frozenset({"Identity", "Flatten", "Unflatten"})


#: Functions and tensor methods that save a tensor for backward.
SAVING = frozenset({
    "relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu", "mish", "sigmoid", "tanh", "softplus",
    "softmax", "log_softmax", "exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "abs", "pow", "mul", "div",
    "matmul", "mm", "bmm", "addmm", "linear", "conv1d", "conv2d", "conv3d", "dropout", "clamp", "max_pool2d",
    "avg_pool2d", "layer_norm", "batch_norm", "prod", "norm", "square", "reciprocal", "erf",
})


#: ... that save none: sums, views, concatenation, copies.
PASSING = frozenset({
    "add", "sub", "neg", "sum", "mean", "cat", "stack", "concat", "view", "view_as", "reshape", "reshape_as",
    "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute", "t", "narrow", "expand", "expand_as",
    "contiguous", "clone", "float", "double", "half", "to", "type_as", "select", "movedim", "swapaxes", "unfold",
})


#: ... that certainly return a view of their operand (measured: `tests/runtime/test_detach_views.py`).
#: Not `reshape`/`flatten` (a copy where a view is impossible), nor `contiguous`/`to`/`float` (their
#: operand itself, or a copy).
VIEWS = frozenset({
    "view", "view_as", "t", "transpose", "permute", "narrow", "select", "squeeze", "unsqueeze", "expand",
    "expand_as", "movedim", "swapaxes", "swapdims", "diagonal", "unfold", "as_strided", "unflatten",
})

#: ... that may return a view of their operand, or the operand itself, or a copy: whether the
#: result is a view cannot be known (MAY). The parts of `chunk`/`split`/`unbind` are views of a
#: tensor, but their result may also be indexed as a tuple.
MAY_VIEWS = frozenset({
    "reshape", "reshape_as", "flatten", "contiguous", "float", "to", "chunk", "split", "tensor_split", "unbind",
    "hsplit", "vsplit", "dsplit", "split_with_sizes",
})

#: A value's view (`Value.view`) that may be a view or not: a view on one path and a copy on
#: another, or made by an operation in MAY_VIEWS.
MAY = -1
#: ... that is an integer index of forward's input: a view of it (a tensor's row), or its item (a
#: tuple's): certainly a view where the input is a micro-batch, else maybe one.
ITEM = 3


#: ... that start no history: detaching, constants.
BREAKING = frozenset({
    "detach", "detach_", "zeros", "ones", "zeros_like", "ones_like", "empty", "empty_like", "full", "full_like",
    "rand", "randn", "rand_like", "randn_like", "randint", "arange", "linspace", "eye", "tensor", "as_tensor",
    "argmax", "argmin", "numel", "size", "dim", "item", "tolist",
})


@dataclass(frozen=True)
class Value:
    """What a value's history certainly holds: saving nodes, each (node id, YES or INPUT); its grad;
    the pops (by their call's id) and the input that it depends on differentiably; for a tuple
    or list whose items are known, each item's value (the whole holds what all items hold); whether
    it is certainly a view (YES), certainly forward's input itself (INPUT: a view where that is a
    micro-batch), an integer index of that input (ITEM), may be a view (MAY), or certainly not (NO);
    whether it is certainly not a stash/pop command (`plain`: what SKP108 reports a yield of); and,
    for a variable, the pops (by their call's id) whose tensor it may hold as popped on some path
    (`reach`: reading the variable reads that tensor; kept through branches and loops, not through
    operations, since an operation reads the variable first)."""

    ops: frozenset[tuple[int, int]] = frozenset()
    grad: int = NO
    sources: frozenset[int] = frozenset()
    items: Optional[tuple["Value", ...]] = None
    view: int = NO
    reach: frozenset[int] = frozenset()
    plain: bool = False


NOTHING = Value()
PLAIN = Value(plain=True)


#: The source id that stands for forward's input.
INPUT_SOURCE = 0


def union(values: Sequence[Value]) -> Value:
    ops: set[tuple[int, int]] = set()
    sources: set[int] = set()
    for value in values:
        ops |= value.ops
        sources |= value.sources
    return Value(frozenset(ops), max((v.grad for v in values), default=NO), frozenset(sources))


def saving(node: cst.CSTNode, values: Sequence[Value], grad: int = NO) -> Value:
    """A node that saves tensors, made when some operand (or the layer's own parameters: `grad`)
    requires grad."""
    joined = union(values)
    certainty = max(joined.grad, grad)
    if certainty == NO:
        return Value(frozenset(), NO, joined.sources)
    return Value(joined.ops | {(id(node), certainty)}, certainty, joined.sources)


def container(items: Sequence[Value]) -> Value:
    """A tuple or list of known items."""
    joined = union(items)
    return Value(joined.ops, joined.grad, joined.sources, tuple(items))


def meet(a: Value, b: Value) -> Value:
    """What two paths both hold."""
    if a is b:
        return a
    b_ops = dict(b.ops)
    ops = frozenset((node, min(kind, b_ops[node])) for node, kind in a.ops if node in b_ops)
    items = None
    if a.items is not None and b.items is not None and len(a.items) == len(b.items):
        items = tuple(meet(x, y) for x, y in zip(a.items, b.items))
    return Value(ops, min(a.grad, b.grad), a.sources & b.sources, items, meet_view(a.view, b.view),
                 a.reach | b.reach, a.plain and b.plain)


def plain(value: Value, certainly: bool = True) -> Value:
    """`value`, known (`certainly`) not to be a command, or not known so."""
    if value.plain is certainly:
        return value
    return replace(value, plain=certainly)


def meet_view(a: int, b: int) -> int:
    """What two paths both hold of a view: certainly a copy (NO) only where both are; a view (or
    the input) on one path and a copy on another may be a view (MAY)."""
    if a == b:
        return a
    return MAY if MAY in (a, b) or NO in (a, b) else ITEM if ITEM in (a, b) else min(a, b)


Env = dict[str, Value]


def meet_envs(envs: Sequence[Env]) -> Env:
    names = set().union(*envs) if envs else set()
    out: Env = {}
    for name in names:
        value: Optional[Value] = None
        for env in envs:
            current = env.get(name, NOTHING)
            value = current if value is None else meet(value, current)
        out[name] = value if value is not None else NOTHING
    return out


@dataclass
class Flow:
    """The result for one forward: per stash call, what its tensor holds; per pop call, whether the
    output depends on it, and whether some code reads its tensor with its history; and the output."""

    stashes: dict[int, Value] = field(default_factory=dict)
    output: Value = NOTHING
    returned: bool = False
    #: The pops of forward's own body written `name = yield pop(...)`, by their call's id.
    assigned_pops: set[int] = field(default_factory=set)
    #: The pops whose tensor some code that may run reads other than as `name.detach()`,
    #: `name.detach_()` or under `torch.no_grad()`.
    read: set[int] = field(default_factory=set)
    #: For each variable of forward: the pops whose tensor it held as popped anywhere in the walk so
    #: far (what a part the dataflow does not follow may read).
    reach_of: dict[str, frozenset[int]] = field(default_factory=dict)
    #: Each pop of `assigned_pops` that the next statement of forward's own body, before any that may
    #: leave it, detaches in place: its `name.detach_()` call.
    detached_in_place: dict[int, cst.Call] = field(default_factory=dict)

    def hold(self, key: str, reach: frozenset[int]) -> None:
        """Record that the variable `key` held the pops `reach` as popped (`reach_of`)."""
        self.reach_of[key] = self.reach_of.get(key, frozenset()) | reach

    def held(self, key: str, value: Value) -> Value:
        """`value`, which the variable `key` holds now, with what it held anywhere (for a part the
        dataflow does not follow)."""
        reach = self.reach_of.get(key)
        return value if not reach or reach <= value.reach else replace(value, reach=value.reach | reach)

    def shares(self, stash_call: int) -> int:
        """YES: the stash (the id of its call) shares a saving node with the output whatever the
        input; INPUT: only when the layer's input requires grad; NO: it shares none (as far as can
        be known)."""
        value = self.stashes.get(stash_call)
        if value is None or not self.returned:
            return NO
        out = dict(self.output.ops)
        kinds = [min(kind, out[node]) for node, kind in value.ops if node in out]
        return max(kinds, default=NO)

    def reaches_output(self, pop_call: cst.CSTNode | int) -> bool:
        """Whether the output depends on a pop call's tensor (or on forward's input: INPUT_SOURCE)."""
        source = pop_call if isinstance(pop_call, int) else id(pop_call)
        return self.returned and source in self.output.sources


def unknown_call(args: Sequence[Value]) -> Value:
    """A call that is not followed (not torch's, not the project's own code): its
    result is taken to depend on every argument, to hold no saving node for certain, and to be
    maybe a view (of an argument, or of anything the callee holds)."""
    joined = union(args)
    return Value(frozenset(), NO, joined.sources, view=MAY)


def meet_all(values: Sequence[Value]) -> Value:
    out = values[0] if values else NOTHING
    for value in values[1:]:
        out = meet(out, value)
    return out
