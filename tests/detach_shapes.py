"""Programs that detach a popped tensor in place (`s.detach_()`), by what the stashing layer stashes,
the layers before it and how the model runs: the static verdict (SKP206, or SKP901 where whether
the stash is a view cannot be known) of each, which
tests/test_detach_views.py checks, and the run's outcome, which tests/runtime/test_detach_views.py
measures on torchgpipe and fairscale for the very same program."""

from __future__ import annotations

#: What the stashing layer stashes, whether skiplint knows it for a view ("yes": certainly; "input":
#: the layer's input itself; "item": an integer index of it; "may": it cannot be known; "no":
#: certainly not), and where detaching it in place fails at run time ("everywhere", in a "pipe"
#: where the input is a micro-batch, "nowhere").
STASHED: dict[str, tuple[str, str, str]] = {
    "slice": ("x[:, :2]", "yes", "everywhere"),
    "ellipsis": ("x[..., 0]", "yes", "everywhere"),
    "index-of-view": ("x.t()[0]", "yes", "everywhere"),
    "view": ("x.view(-1)", "yes", "everywhere"),
    "view-as": ("x.view_as(x)", "yes", "everywhere"),
    "t": ("x.t()", "yes", "everywhere"),
    "T": ("x.T", "yes", "everywhere"),
    "transpose": ("x.transpose(0, 1)", "yes", "everywhere"),
    "torch-transpose": ("torch.transpose(x, 0, 1)", "yes", "everywhere"),
    "permute": ("x.permute(1, 0)", "yes", "everywhere"),
    "narrow": ("x.narrow(1, 0, 2)", "yes", "everywhere"),
    "select": ("x.select(1, 0)", "yes", "everywhere"),
    "squeeze": ("x.squeeze()", "yes", "everywhere"),
    "unsqueeze": ("x.unsqueeze(0)", "yes", "everywhere"),
    "unflatten": ("x.unflatten(1, (2, 2))", "yes", "everywhere"),
    "expand-as": ("x.expand_as(x)", "yes", "everywhere"),
    "view-of-computed": ("torch.relu(x).view(-1)", "yes", "everywhere"),
    "bound-view": ("h", "yes", "everywhere"),  # h = x[:, :2] first
    "input": ("x", "input", "pipe"),
    "index-of-input": ("x[0]", "item", "everywhere"),  # a tensor's row: a view; statically maybe a tuple's item
    # Certain at run time, not known statically: SKP901 says so.
    "reshape": ("x.reshape(-1)", "may", "everywhere"),
    "flatten": ("x.flatten()", "may", "everywhere"),
    "chunk-item": ("x.chunk(2, 1)[0]", "may", "everywhere"),
    "contiguous": ("x.contiguous()", "may", "pipe"),
    "float": ("x.float()", "may", "pipe"),
    "hsplit-item": ("x.hsplit(2)[0]", "may", "everywhere"),
    # A call skiplint does not follow may return a view; so may an operation it does not know.
    "unfollowed-call": ("(lambda t: t[:, :2])(x)", "may", "everywhere"),
    "unknown-op": ("torch.nan_to_num(x)", "may", "nowhere"),
    # Never views.
    "computed": ("x * 2", "no", "nowhere"),
    "add-zero": ("x + 0", "no", "nowhere"),
    "clone": ("x.clone()", "no", "nowhere"),
    "cat": ("torch.cat([x, x])", "no", "nowhere"),
    "detach": ("x.detach()", "no", "nowhere"),
    "row-slice": ("x[:2]", "may", "everywhere"),  # one slice: a tuple would take it too
    "negative-index-and-slice": ("x[-1, 0:2]", "yes", "everywhere"),
    "torch-narrow": ("torch.narrow(x, 1, 0, 2)", "yes", "everywhere"),
    # Advanced indexing copies, even of a view.
    "mask-of-view": ("x.t()[x.t() > 0]", "no", "nowhere"),
    "list-index": ("x[:, [0, 1]]", "no", "nowhere"),
}

#: The layers before the stashing layer, the balance of a pipe of the model (its layers: these, the
#: stashing layer, nn.ReLU(), the popping one), and whether the stashing layer's input is a
#: micro-batch in that pipe.
BEFORE: dict[str, tuple[str, list[int], bool]] = {
    "first": ("", [3], True),
    "after-identity": ("nn.Identity(), ", [4], True),
    "after-relu": ("nn.ReLU(), ", [4], False),
    "first-of-second-partition": ("nn.Identity(), ", [1, 3], False),
}

MODES = ("plain", "profiled", "pipe", "pipe-one-chunk")

SOURCE = '''\
import torch
from torch import nn
from {root}.skip import pop, skippable, stash
from {root}.balance import balance_by_time
from {package} import {pipe}


@skippable(stash=["s"])
class Stash(nn.Module):
    def forward(self, x):
        h = x[:, :2]
        yield stash("s", {stashed})
        return x * 1


@skippable(pop=["s"])
class Pop(nn.Module):
    def forward(self, x):
        s = yield pop("s")
        s.detach_()
        return x + s.sum()


def run():
    model = nn.Sequential({before}Stash(), nn.ReLU(), Pop())
{run}
'''

RUNS = {
    "plain": "    model(torch.randn(8, 4, requires_grad=True)).sum().backward()",
    "profiled": '    balance_by_time(2, model, torch.randn(8, 4), timeout=0.02, device=torch.device("cpu"))',
    "pipe": "    piped = {pipe}(model, balance={balance}, devices={devices}, chunks=2)\n"
            "    piped(torch.randn(8, 4, requires_grad=True)).sum().backward()",
    "pipe-one-chunk": "    piped = {pipe}(model, balance={balance}, devices={devices}, chunks=1)\n"
                      "    piped(torch.randn(8, 4, requires_grad=True)).sum().backward()",
}

LIBRARIES = {"torchgpipe": ("torchgpipe", "torchgpipe", "GPipe"),
             "fairscale": ("fairscale.nn.pipe", "fairscale.nn", "Pipe")}

#: Where SKP206 (or SKP901) is reported: the `s.detach_()` line and column.
DETACH_AT = (20, 9)

CASES = [(stash, before, mode) for stash in sorted(STASHED) for mode in MODES
         for before in (sorted(BEFORE) if STASHED[stash][0] == "x" and mode.startswith("pipe") else ["first"])]


def source(stash: str, before: str, mode: str, lib: str = "torchgpipe") -> str:
    root, package, pipe = LIBRARIES[lib]
    prefix, balance, _ = BEFORE[before]
    run = RUNS[mode].format(pipe=pipe, balance=balance, devices=["cpu"] * len(balance))
    return SOURCE.format(root=root, package=package, pipe=pipe, stashed=STASHED[stash][0], before=prefix, run=run)


def reported(stash: str, before: str, mode: str) -> bool:
    """The static verdict: SKP206 where the stash is certainly a view, or the input (or an item of
    it) of the first layer of a piped composition."""
    known = STASHED[stash][1]
    return known == "yes" or (known in ("input", "item") and mode.startswith("pipe") and before == "first")


def abstains(stash: str, before: str, mode: str) -> bool:
    """The static verdict with SKP901 selected: SKP901 where whether the stash is a view cannot be
    known (an op that may return a view, an item of the input outside a pipe's first layer, the input
    of a layer after layers that return their input in a pipe)."""
    known = STASHED[stash][1]
    if reported(stash, before, mode):
        return False
    return known in ("may", "item") or (known == "input" and before == "after-identity" and mode.startswith("pipe"))


def fails(stash: str, before: str, mode: str) -> bool:
    """The run's outcome, as measured."""
    where = STASHED[stash][2]
    return where == "everywhere" or (where == "pipe" and mode.startswith("pipe") and BEFORE[before][2])
