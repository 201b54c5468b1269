"""Skippable models given to balance_by_time, and whether profiling them fails ('Trying to backward
through the graph a second time'), as measured on torchgpipe 0.0.7 and fairscale 0.4.13 (CPU). The
static tests check what skiplint says of each source (SKP303); the runtime tests run each source."""

from __future__ import annotations

import textwrap

SOURCE = '''import torch
from torch import nn
from {root}.balance import balance_by_time
from {root}.skip import pop, skippable, stash


@skippable(stash=["s"])
class Stash(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def helper(self, t):
        yield stash("s", t)

    def forward(self, x):
{stash}


@skippable(pop=["s"])
class Pop(nn.Module):
    def forward(self, x):
{pop}


model = nn.Sequential({layers})
balance = balance_by_time(2, model, torch.randn(8, 4), timeout=0.02, device=torch.device("cpu"))
'''

#: Stashing forwards (the stash and the output share a Linear: profiling fails wherever the layer is).
SHARING = {
    "encoder": "h = self.lin(x)\nyield stash('s', h)\nout = torch.relu(h)\nreturn out",
    "view": "out = self.lin(x)\nv = out[:, :2]\nyield stash('s', v)\nreturn out",
    "attribute": "self.h = self.lin(x)\nyield stash('s', self.h)\nreturn self.h",
    "yield-from": "out = self.lin(x)\nyield from self.helper(out)\nreturn out",
    "same-tensor": "h = self.lin(x)\nyield stash('s', h)\nreturn h",
    "view-method": "h = self.lin(x)\nyield stash('s', h.view(-1))\nreturn h",
    "relu-of-output": "h = self.lin(x)\nyield stash('s', torch.relu(h))\nreturn h",
}
#: ... that share a node only when the layer's input requires grad (after a Linear, not first).
INPUT_SHARING = {
    "mul": "h = x * 2\nyield stash('s', h)\nreturn h",
}
#: ... that never share a node that saved tensors.
APART = {
    "detached": "h = self.lin(x)\nyield stash('s', h.detach())\nreturn h",
    "input": "yield stash('s', x)\nreturn self.lin(x)",
    "computed-apart": "yield stash('s', x * 2)\nreturn self.lin(x)",
    "add-only": "h = x + 1\nyield stash('s', h)\nreturn h - 1",
    "no-grad": "with torch.no_grad():\n    h = self.lin(x)\nyield stash('s', h)\nreturn h",
    "constant": "h = torch.zeros_like(x)\nyield stash('s', h)\nreturn h + x",
}
#: Popping forwards: only a popped tensor the output depends on leads backward into the stash's graph.
POPS = {
    "used": "s = yield pop('s')\nreturn x + s.sum()",
    "detached": "s = yield pop('s')\nreturn x + s.detach().sum()",
    "discarded": "yield pop('s')\nreturn x * 2",
    "no-grad": "s = yield pop('s')\nwith torch.no_grad():\n    t = s * 2\nreturn x + t.sum()",
}

CASES = [(stash, pop, first) for stash in (*SHARING, *INPUT_SHARING, *APART) for pop in POPS
         for first in (True, False)]


def source(stash: str, pop: str, first: bool, root: str = "torchgpipe") -> str:
    body = {**SHARING, **INPUT_SHARING, **APART}[stash]
    layers = ("" if first else "nn.Linear(4, 4), ") + "Stash(), nn.ReLU(), Pop()"
    return SOURCE.format(root=root, stash=textwrap.indent(body, " " * 8), pop=textwrap.indent(POPS[pop], " " * 8),
                         layers=layers)


def fails(stash: str, pop: str, first: bool) -> bool:
    """The measured outcome: profiling fails."""
    return pop == "used" and (stash in SHARING or (stash in INPUT_SHARING and not first))
