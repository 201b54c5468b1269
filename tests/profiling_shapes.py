"""Skippable models given to balance_by_time, and whether profiling them fails ('Trying to backward
through the graph a second time'), as measured on torchgpipe 0.0.7 and fairscale 0.4.13 (CPU). The
static tests check what skiplint says of each source (SKP303); the runtime tests run each source."""

from __future__ import annotations

import textwrap

SOURCE = '''import torch
import torch.nn.functional as F
from torch import nn
from {root}.balance import balance_by_time
from {root}.skip import pop, skippable, stash


def merge(a, b):
    return a + b


def keep(t):
    yield stash("s", t)


def take(x):
    s = yield pop("s")
    return x + s


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


class Join(nn.Module):
    def forward(self, a, b):
        return a * 1 + b


@skippable(stash=["s"])
class Stash(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.enc = Encoder()
{init}

    def helper(self, t):
        yield stash("s", t)

    def twice(self, t):
        return self.lin(self.lin(t))

    def forward(self, x):
{stash}


@skippable(pop=["s"])
class Pop(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.blocks = nn.ModuleList([nn.ReLU(), nn.Linear(4, 4)])
        self.heads = nn.ModuleDict({{"out": nn.Linear(4, 4)}})
        self.join = Join()

    def merge(self, a, b):
        return a * 1 + b

    def forward(self, x):
{pop}


model = nn.Sequential({layers})
balance = balance_by_time(2, model, {sample}, timeout=0.02, device=torch.device("cpu"))
'''

#: Stashing forwards (the stash and the output share a node with parameters: profiling fails
#: wherever the layer is).
SHARING = {
    "encoder": "h = self.lin(x)\nyield stash('s', h)\nout = torch.relu(h)\nreturn out",
    "view": "out = self.lin(x)\nv = out[:, :2]\nyield stash('s', v)\nreturn out",
    "attribute": "self.h = self.lin(x)\nyield stash('s', self.h)\nreturn self.h",
    "yield-from": "out = self.lin(x)\nyield from self.helper(out)\nreturn out",
    "yield-from-function": "out = self.lin(x)\nyield from keep(out)\nreturn out",
    "same-tensor": "h = self.lin(x)\nyield stash('s', h)\nreturn h",
    "view-method": "h = self.lin(x)\nyield stash('s', h.view(-1))\nreturn h",
    "relu-of-output": "h = self.lin(x)\nyield stash('s', torch.relu(h))\nreturn h",
    "cat": "h = self.lin(x)\nyield stash('s', torch.cat([h, h], 1)[:, :4])\nreturn h",
    "tuple-assign": "h, g = self.lin(x), x + 1\nyield stash('s', h)\nreturn h + g",
    "chunk": "h = self.lin(x)\na, b = h.chunk(2, dim=1)\nyield stash('s', torch.cat((b, a), 1))\nreturn h",
    "parameter": "h = x @ self.w\nyield stash('s', h)\nreturn h",
    "layer-weight": "h = F.linear(x, self.lin.weight)\nyield stash('s', h)\nreturn h",
    "in-place": "h = self.lin(x)\nout = x + 1\nout.add_(h)\nyield stash('s', h)\nreturn out",
    "method": "h = self.twice(x)\nyield stash('s', h)\nreturn h",
    "method-keyword": "h = self.twice(t=x)\nyield stash('s', h)\nreturn h",
    "yield-from-keyword": "out = self.lin(x)\nyield from self.helper(t=out)\nreturn out",
    "einsum": "h = torch.einsum('ij,jk->ik', x, self.lin.weight)\nyield stash('s', h)\nreturn h",
    "submodule": "h = self.enc(x)\nyield stash('s', h)\nreturn h",
    "submodule-layer": "h = self.enc.lin(x)\nyield stash('s', h)\nreturn h",
    "training": "h = self.lin(x)\nif self.training:\n    yield stash('s', h)\nelse:\n    yield stash('s', x)\nreturn h",
}
#: ... that share a node only when the layer's input requires grad (after a Linear, or a sample
#: that requires grad; not first, not after a frozen layer).
INPUT_SHARING = {
    "mul": "h = x * 2\nyield stash('s', h)\nreturn h",
    "frozen": "h = self.lin(x)\nyield stash('s', h)\nreturn h",
    "frozen-parameter": "h = x @ self.w\nyield stash('s', h)\nreturn h",
}
#: ... that never share a node that saved tensors.
APART = {
    "detached": "h = self.lin(x)\nyield stash('s', h.detach())\nreturn h",
    "input": "yield stash('s', x)\nreturn self.lin(x)",
    "computed-apart": "yield stash('s', x * 2)\nreturn self.lin(x)",
    "add-only": "h = x + 1\nyield stash('s', h)\nreturn h - 1",
    "no-grad": "with torch.no_grad():\n    h = self.lin(x)\nyield stash('s', h)\nreturn h",
    "constant": "h = torch.zeros_like(x)\nyield stash('s', h)\nreturn h + x",
    "detached-in-place": "h = self.lin(x)\nt = h * 1\nt.detach_()\nyield stash('s', t)\nreturn h",
}
#: What a stashing layer's __init__ adds, by stash.
INIT = {
    "parameter": "self.w = nn.Parameter(torch.randn(4, 4))",
    "frozen": "self.lin.requires_grad_(False)",
    "frozen-parameter": "self.w = nn.Parameter(torch.randn(4, 4), requires_grad=False)",
}
#: Popping forwards: only a popped tensor the output depends on leads backward into the stash's graph.
USED = {
    "used": "s = yield pop('s')\nreturn x + s.sum()",
    "cat": "s = yield pop('s')\nreturn torch.cat([x, s], dim=1)",
    "stack": "s = yield pop('s')\nreturn torch.stack((x, s)).sum(0)",
    "tuple-unpack": "s = yield pop('s')\na, b = x, s\nreturn a + b",
    "chunk": "s = yield pop('s')\na, b = s.chunk(2, dim=1)\nreturn x + torch.cat([b, a], 1)",
    "in-place": "s = yield pop('s')\nout = x * 1\nout.add_(s)\nreturn out",
    "is-not-none": "s = yield pop('s')\nif s is not None:\n    x = x + s\nreturn x",
    "training": "s = yield pop('s')\nif self.training:\n    return x + s\nreturn x",
    "if-expression": "s = yield pop('s')\nreturn x + s if s is not None else x",
    "helper": "s = yield pop('s')\nreturn merge(x, s)",
    "yield-from-function": "return (yield from take(x))",
    "method": "s = yield pop('s')\nreturn self.merge(x, s)",
    "method-keywords": "s = yield pop('s')\nreturn self.merge(b=s, a=x)",
    "helper-keyword": "s = yield pop('s')\nreturn merge(x, b=s)",
    "submodule-keyword": "s = yield pop('s')\nreturn self.join(x, b=s)",
    "sequential": "s = yield pop('s')\nreturn x + self.seq(s)",
    "einsum": "s = yield pop('s')\nreturn x + torch.einsum('ij,ij->ij', s, s)",
    "comprehension": "s = yield pop('s')\nreturn torch.cat([t * 1 for t in (x, s)], 1)",
    "submodule": "s = yield pop('s')\nreturn self.join(x, s)",
    "module-list": "s = yield pop('s')\nreturn x + self.blocks[1](s)",
    "module-dict": "s = yield pop('s')\nreturn x + self.heads['out'](s)",
}
UNUSED = {
    "detached": "s = yield pop('s')\nreturn x + s.detach().sum()",
    "discarded": "yield pop('s')\nreturn x * 2",
    "no-grad": "s = yield pop('s')\nwith torch.no_grad():\n    t = s * 2\nreturn x + t.sum()",
    "detached-in-place": "s = yield pop('s')\ns.detach_()\nreturn x + s",
    "rebound-detached": "s = yield pop('s')\ns = s.detach()\nreturn x + s",
    "not-training": "s = yield pop('s')\nif not self.training:\n    return x + s\nreturn x * 1",
}
POPS = {**USED, **UNUSED}
#: What comes before the stashing layer: nothing (the sample does not require grad), a Linear
#: (its output requires grad), a frozen Linear (its output does not), nothing with a sample that
#: requires grad.
BEFORE = {
    "first": ("", "torch.randn(8, 4)"),
    "after-linear": ("nn.Linear(4, 4), ", "torch.randn(8, 4)"),
    "after-frozen": ("nn.Linear(4, 4).requires_grad_(False), ", "torch.randn(8, 4)"),
    "grad-sample": ("", "torch.randn(8, 4, requires_grad=True)"),
}

_FIRST_SHAPES = ("encoder", "view", "attribute", "yield-from", "same-tensor", "view-method", "relu-of-output",
                 "mul", "detached", "input", "computed-apart", "add-only", "no-grad", "constant")
#: The first shapes crossed with the first pops; each later stash with a used and a discarded pop,
#: each later pop with a sharing stash, an input-sharing one and one apart.
CASES = sorted({
    *((stash, pop, before) for stash in _FIRST_SHAPES for pop in ("used", "detached", "discarded", "no-grad")
      for before in ("first", "after-linear")),
    *((stash, pop, before) for stash in (*SHARING, *INPUT_SHARING, *APART) if stash not in _FIRST_SHAPES
      for pop in ("used", "discarded") for before in BEFORE),
    *((stash, pop, before) for stash in ("encoder", "mul", "input") for pop in POPS for before in ("first", "after-linear")),
    *((stash, pop, before) for stash in ("mul", "frozen") for pop in ("used",) for before in BEFORE),
})


def source(stash: str, pop: str, before: str, root: str = "torchgpipe") -> str:
    body = {**SHARING, **INPUT_SHARING, **APART}[stash]
    layers, sample = BEFORE[before]
    return SOURCE.format(root=root, stash=textwrap.indent(body, " " * 8), pop=textwrap.indent(POPS[pop], " " * 8),
                         init=textwrap.indent(INIT.get(stash, ""), " " * 8),
                         layers=layers + "Stash(), nn.ReLU(), Pop()", sample=sample)


def fails(stash: str, pop: str, before: str) -> bool:
    """The measured outcome: profiling fails."""
    input_grad = before in ("after-linear", "grad-sample")
    return pop in USED and (stash in SHARING or (stash in INPUT_SHARING and input_grad))


NESTED_INPUT_STASH = '''
@skippable(stash=["s"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("s", {stashed})
        return x


@skippable(pop=["s"])
class Pop(nn.Module):
    def forward(self, x):
        s = yield pop("s")
        return x + s


model = nn.Sequential(nn.Sequential(nn.Tanh()), nn.Sequential({sibling}, Stash()), nn.Sequential(nn.ReLU(), Pop()))
'''

SKIPPABLE_SIBLING = '''
@skippable(stash=["t"])
class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        yield stash("t", None)
        return self.lin(x)


@skippable(stash=["t"])
class Bias(nn.Module):
    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.zeros(4))

    def forward(self, x):
        yield stash("t", None)
        return x + self.b
'''

#: Whole models whose layout decides (the layers around the skippable ones): the source after the
#: imports of SOURCE, and whether profiling fails.
LAYOUTS = {
    # The stash shares the stashing layer's Linear with its output; the layer is nested, and a
    # skippable layer that keeps its input's history follows it inside the profiled child.
    "nested-then-skippable": ('''
@skippable(stash=["s"])
class Stash(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        yield stash("s", h)
        return h


@skippable(pop=["s"])
class Pop(nn.Module):
    def forward(self, x):
        s = yield pop("s")
        return x + s


@skippable(stash=["t"])
class Keep(nn.Module):
    def forward(self, x):
        yield stash("t", torch.zeros_like(x))
        return x * 1


@skippable(pop=["t"])
class Drop(nn.Module):
    def forward(self, x):
        t = yield pop("t")
        return x + t


model = nn.Sequential(nn.Sequential(Stash(), Keep()), nn.Sequential(Drop(), Pop()))
''', True),
    # An input-sharing stash after a skippable layer whose own Linear makes its output require grad.
    "after-skippable-with-parameters": ('''
@skippable(stash=["s"])
class Stash(nn.Module):
    def forward(self, x):
        h = x * 2
        yield stash("s", h)
        return h


@skippable(pop=["s"])
class Pop(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        s = yield pop("s")
        return self.lin(x + s)


ns = Namespace()
model = nn.Sequential(Stash().isolate(ns), Pop().isolate(ns), nn.Identity(), Stash(), nn.Tanh(), Pop())
''', True),
    # ... after a skippable layer without parameters: its output does not require grad.
    "after-skippable-without-parameters": ('''
@skippable(stash=["s"])
class Stash(nn.Module):
    def forward(self, x):
        h = x * 2
        yield stash("s", h)
        return h


@skippable(pop=["s"])
class Pop(nn.Module):
    def forward(self, x):
        s = yield pop("s")
        return x + s


ns = Namespace()
model = nn.Sequential(Stash().isolate(ns), Pop().isolate(ns), nn.Identity(), Stash(), nn.Tanh(), Pop())
''', False),
    # A stash of the layer's untouched input, nested after a sibling Linear in the same child: the
    # child's output keeps the Linear's history, which the stash holds too (oracle program p00340).
    "input-stash-after-sibling-linear": (NESTED_INPUT_STASH.format(sibling="nn.Linear(4, 4)", stashed="x"), True),
    # ... after a sibling without parameters, a frozen one, or stashing the input detached: no node
    # that saved tensors is shared.
    "input-stash-after-sibling-relu": (NESTED_INPUT_STASH.format(sibling="nn.ReLU()", stashed="x"), False),
    "input-stash-after-frozen-sibling": (NESTED_INPUT_STASH.format(
        sibling="nn.Linear(4, 4).requires_grad_(False)", stashed="x"), False),
    "detached-input-stash-after-sibling-linear": (NESTED_INPUT_STASH.format(
        sibling="nn.Linear(4, 4)", stashed="x.detach()"), False),
    # ... after a skippable sibling whose forward makes a node that saved tensors (a Linear), or
    # only makes its output require grad (adds a parameter: the sum saves nothing).
    "input-stash-after-skippable-sibling-linear": (SKIPPABLE_SIBLING + NESTED_INPUT_STASH.format(
        sibling="Linear()", stashed="x"), True),
    "input-stash-after-skippable-sibling-bias": (SKIPPABLE_SIBLING + NESTED_INPUT_STASH.format(
        sibling="Bias()", stashed="x"), False),
}

LAYOUT_HEADER = '''import torch
from torch import nn
from {root}.balance import balance_by_time
from {root}.skip import Namespace, pop, skippable, stash
'''


def layout_source(name: str, root: str = "torchgpipe") -> str:
    body, _fails = LAYOUTS[name]
    return (LAYOUT_HEADER.format(root=root) + body + 'balance = balance_by_time(2, model, torch.randn(8, 4), '
            'timeout=0.02, device=torch.device("cpu"))\n')


#: Functions of another module of the project (`ops.py` beside the model, a package), called inside
#: forward: their dataflow is followed as the module's own functions'.
IMPORTED_OPS = '''from {root}.skip import pop, stash


def encode(x, w):
    return x @ w


def first(a, b):
    return a


def merge(a, b):
    return a * 1 + b


def keep(t):
    yield stash("s", t)


def take(x):
    s = yield pop("s")
    return x + s
'''
IMPORTED_MODEL = '''import torch
from torch import nn
from {root}.balance import balance_by_time
from {root}.skip import pop, skippable, stash
from . import ops
from .ops import encode, merge


@skippable(stash=["s"])
class Stash(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
{stash}


@skippable(pop=["s"])
class Pop(nn.Module):
    def forward(self, x):
{pop}


model = nn.Sequential(Stash(), nn.ReLU(), Pop())
balance = balance_by_time(2, model, torch.randn(8, 4), timeout=0.02, device=torch.device("cpu"))
'''
#: (stashing forward, popping forward) -> whether profiling fails.
IMPORTED = {
    # the saving matmul happens inside the imported function
    ("h = encode(x, self.w)\nyield stash('s', h)\nreturn h", "s = yield pop('s')\nreturn x + s"): True,
    ("h = ops.encode(x, self.w)\nyield stash('s', h)\nreturn h", "s = yield pop('s')\nreturn merge(x, s)"): True,
    # the imported function drops the popped tensor
    ("h = x @ self.w\nyield stash('s', h)\nreturn h", "s = yield pop('s')\nreturn ops.first(x, s)"): False,
    ("h = ops.encode(x, self.w)\nyield stash('s', h)\nreturn h", "s = yield pop('s')\nreturn ops.first(x, s)"): False,
    ("h = x @ self.w\nyield stash('s', h)\nreturn h", "s = yield pop('s')\nreturn ops.merge(x, s)"): True,
    # the stash and the pop happen in generators of the other module (`yield from`)
    ("h = x @ self.w\nyield from ops.keep(h)\nreturn h", "return (yield from ops.take(x))"): True,
    ("h = x @ self.w\nyield from ops.keep(h.detach())\nreturn h", "s = yield pop('s')\nreturn x + s"): False,
}


def imported_package(directory: str, stash: str, pop: str, root: str = "torchgpipe") -> str:
    """Write the package `proj` (ops.py, model.py) under `directory`; the path of model.py."""
    import os

    package = os.path.join(directory, "proj")
    os.makedirs(package, exist_ok=True)
    sources = {"__init__.py": "", "ops.py": IMPORTED_OPS.format(root=root), "model.py": IMPORTED_MODEL.format(
        root=root, stash=textwrap.indent(stash, " " * 8), pop=textwrap.indent(pop, " " * 8))}
    for name, text in sources.items():
        with open(os.path.join(package, name), "w") as f:
            f.write(text)
    return os.path.join(package, "model.py")
