"""`skip.detach_()` on a popped tensor that is a view fails at run time ("Can't detach views
in-place"), on torchgpipe and fairscale alike. Measured here:

- a stash made by a view operation (slicing, indexing, `view`, `view_as`, `reshape` and `flatten`
  of a contiguous tensor, `t`, `transpose`, `permute`, `narrow`, `select`, `squeeze`, `unsqueeze`,
  `expand_as`, an item of `chunk`) fails run plainly, profiled and in a pipe;
- a stash of the layer's input, or of an operation that returns its operand when there is nothing
  to do (`contiguous()`, `float()`, `to(device)` of a tensor already so), fails only in a pipe, and
  only where the stashing layer's input is a micro-batch: each micro-batch is a chunk (a view) of
  the batch, `chunks=1` included. That is the pipe's first layer, or a layer after ones that return
  their input (`nn.Identity`, a module returning `x`); not after a layer that computes (`nn.ReLU`),
  nor first in a later partition (its input crossed the partition boundary);
- a computed tensor (`x * 2`, `x + 0`, `clone`, `cat`, `detach`) never fails;
- with the stash and the pop in different partitions the pop gets a portal's copy, and backward
  raises the bare AssertionError of skip/portal.py instead (SKP305's failure), whatever is stashed.

SKP206 predicts the first two where the view is certain statically (tests/detach_shapes.py).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchgpipe")
pytest.importorskip("fairscale")
from torch import nn  # noqa: E402

from tests import detach_shapes  # noqa: E402

LIBRARIES = {"torchgpipe": ("torchgpipe", "torchgpipe", "GPipe"),
             "fairscale": ("fairscale.nn.pipe", "fairscale.nn", "Pipe")}
VIEW = "^Can't detach views in-place"
MODES = ("plain", "profiled", "pipe", "pipe-one-chunk")
#: What the stashing layer stashes, and whether detaching its pop in place fails: everywhere
#: (a view), only in a pipe (the input itself, a micro-batch), or nowhere.
STASHED: dict[str, tuple[Callable[[Any], Any], str]] = {
    "slice": (lambda x: x[:, :2], "everywhere"),
    "index": (lambda x: x[0], "everywhere"),
    "view": (lambda x: x.view(-1), "everywhere"),
    "view-as": (lambda x: x.view_as(x), "everywhere"),
    "reshape": (lambda x: x.reshape(-1), "everywhere"),
    "flatten": (lambda x: x.flatten(), "everywhere"),
    "t": (lambda x: x.t(), "everywhere"),
    "transpose": (lambda x: x.transpose(0, 1), "everywhere"),
    "permute": (lambda x: x.permute(1, 0), "everywhere"),
    "narrow": (lambda x: x.narrow(1, 0, 2), "everywhere"),
    "select": (lambda x: x.select(1, 0), "everywhere"),
    "squeeze": (lambda x: x.squeeze(), "everywhere"),
    "unsqueeze": (lambda x: x.unsqueeze(0), "everywhere"),
    "expand-as": (lambda x: x.expand_as(x), "everywhere"),
    "chunk-item": (lambda x: x.chunk(2, 1)[0], "everywhere"),
    "view-of-computed": (lambda x: torch.relu(x).view(-1), "everywhere"),
    "input": (lambda x: x, "pipe"),
    "contiguous": (lambda x: x.contiguous(), "pipe"),
    "float": (lambda x: x.float(), "pipe"),
    "to": (lambda x: x.to("cpu"), "pipe"),
    "computed": (lambda x: x * 2, "nowhere"),
    "add-zero": (lambda x: x + 0, "nowhere"),
    "clone": (lambda x: x.clone(), "nowhere"),
    "cat": (lambda x: torch.cat([x, x]), "nowhere"),
    "detach": (lambda x: x.detach(), "nowhere"),
}


class ReturnsInput(nn.Module):
    def forward(self, x: Any) -> Any:
        return x


#: Layers before the stashing layer, the partition it starts (0: with them), and whether its input
#: is a micro-batch in a pipe.
BEFORE: dict[str, tuple[Callable[[], list[nn.Module]], int, bool]] = {
    "first": (lambda: [], 0, True),
    "after-identity": (lambda: [nn.Identity()], 0, True),
    "after-module-returning-input": (lambda: [ReturnsInput()], 0, True),
    "after-relu": (lambda: [nn.ReLU()], 0, False),
    "after-linear": (lambda: [nn.Linear(4, 4)], 0, False),
    "first-of-second-partition": (lambda: [nn.Identity()], 1, False),
}


def model(root: str, stashed: Callable[[Any], Any], before: list[nn.Module] | None = None) -> nn.Sequential:
    skip = importlib.import_module(root + ".skip")

    @skip.skippable(stash=["s"])
    class Stash(nn.Module):
        def forward(self, x: Any) -> Any:
            yield skip.stash("s", stashed(x))
            return x * 1

    @skip.skippable(pop=["s"])
    class Pop(nn.Module):
        def forward(self, x: Any) -> Any:
            s = yield skip.pop("s")
            s.detach_()
            return x + s.sum()

    return nn.Sequential(*(before or []), Stash(), nn.ReLU(), Pop())


def piped(lib: str, layers: nn.Sequential, balance: list[int], chunks: int) -> Any:
    _, package, pipe = LIBRARIES[lib]
    devices = ["cpu"] * len(balance)
    return getattr(importlib.import_module(package), pipe)(layers, balance=balance, devices=devices, chunks=chunks)


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("stash", sorted(STASHED))
@pytest.mark.parametrize("mode", MODES)
def test_detach_in_place_of_a_popped_view_fails(lib: str, stash: str, mode: str) -> None:
    root = LIBRARIES[lib][0]
    stashed, where = STASHED[stash]
    layers = model(root, stashed)

    def run() -> None:
        if mode == "plain":
            layers(torch.randn(8, 4, requires_grad=True)).sum().backward()
        elif mode == "profiled":
            balance_by_time = importlib.import_module(root + ".balance").balance_by_time
            balance_by_time(2, layers, torch.randn(8, 4), timeout=0.02, device=torch.device("cpu"))
        else:
            chunks = 1 if mode == "pipe-one-chunk" else 2
            piped(lib, layers, [3], chunks)(torch.randn(8, 4, requires_grad=True)).sum().backward()

    if where == "everywhere" or (where == "pipe" and mode.startswith("pipe")):
        with pytest.raises(RuntimeError, match=VIEW):
            run()
    else:
        run()


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("before", sorted(BEFORE))
@pytest.mark.parametrize("stash", ["input", "slice", "computed"])
def test_a_stash_of_the_input_is_a_view_where_the_input_is_a_micro_batch(lib: str, before: str, stash: str) -> None:
    make, partition, micro_batch = BEFORE[before]
    stashed, where = STASHED[stash]
    prefix = make()
    layers = model(LIBRARIES[lib][0], stashed, prefix)
    balance = [len(layers)] if partition == 0 else [len(prefix), len(layers) - len(prefix)]
    run = piped(lib, layers, balance, 2)
    if where == "everywhere" or (where == "pipe" and micro_batch):
        with pytest.raises(RuntimeError, match=VIEW):
            run(torch.randn(8, 4, requires_grad=True)).sum().backward()
    else:
        run(torch.randn(8, 4, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("stash", ["input", "slice", "computed"])
def test_across_partitions_the_pop_is_a_portal_copy(lib: str, stash: str) -> None:
    layers = model(LIBRARIES[lib][0], STASHED[stash][0])
    with pytest.raises(AssertionError):
        piped(lib, layers, [2, 1], 2)(torch.randn(8, 4, requires_grad=True)).sum().backward()


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("stash, before, mode", detach_shapes.CASES)
def test_skp206_is_reported_only_where_the_run_fails(lib: str, stash: str, before: str, mode: str) -> None:
    """The programs of tests/test_detach_views.py run: each fails as measured, and SKP206 (static,
    on that program) only where it does."""
    namespace: dict[str, Any] = {}
    exec(compile(detach_shapes.source(stash, before, mode, lib), f"<{stash}-{before}-{mode}>", "exec"), namespace)
    fails = detach_shapes.fails(stash, before, mode)
    assert fails or not detach_shapes.reported(stash, before, mode)
    if fails:
        with pytest.raises(RuntimeError, match=VIEW):
            namespace["run"]()
    else:
        namespace["run"]()


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("stash", ["slice", "input"])
def test_skiplint_verify_confirms_skp206(tmp_path: Any, lib: str, stash: str) -> None:
    """`skiplint verify` joins the run's failure to the static finding, at the popping layer's class."""
    from skiplint.runtime import verify

    text = detach_shapes.source(stash, "first", "pipe", lib).replace("def run():", "def build():")
    text = text.replace("    piped(torch.randn(8, 4, requires_grad=True)).sum().backward()",
                        "    return model, torch.randn(8, 4, requires_grad=True)")
    path = tmp_path / "model.py"
    path.write_text(text)
    report = verify(f"{path}:build", backend=lib, balance=(3,), chunks=2, checkpoint=("never",))
    assert [(s.line, s.code, s.verdict) for s in report.static] == [(20, "SKP206", "confirmed")], report.to_text()
    assert report.observations and all(o.predicted for o in report.observations), report.to_text()
