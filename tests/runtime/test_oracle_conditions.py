"""The run-time conditions behind SKP305, SKP306 and SKP303, measured against the real torchgpipe 0.0.7 and
fairscale 0.4.13 on CPU (issue 14 items 2 and 3).

SKP305: a `yield pop(name)` whose tensor is discarded runs forward (and eval) fine, but backward()
raises a bare AssertionError in skip/portal.py (PortalCopy.backward: `assert portal.grad is not
None`) whenever the pop is in another partition than its stash, in every checkpoint mode; in the
same partition it is fine, and so is a discarded pop of a stashed None (no portal is copied).

SKP306: SkipLayout sorts each destination partition's routes as (source partition, namespace,
name) tuples. Two routes with the same source and the same destination partition compare their
namespaces; when one is the default namespace (None) and the other a Namespace, Namespace.__eq__/
__lt__ read `None.id` (None is registered as a virtual Namespace subclass), so the pipe constructor
raises AttributeError. The exact condition: two routes with equal (source partition, destination
partition), one in the default namespace and one isolated; source == destination counts (also a
one-partition pipe). Routes that share only the source or only the destination are fine, and so
are routes of two different Namespaces. verify_skippables and a plain run pass in every case.

SKP303: balance_by_time over skippable layers fails only when a stashed tensor shares autograd
history with its layer's output ('Trying to backward through the graph a second time'), not with
"has not been stashed"; a stash of the layer's input profiles fine. The shapes of
tests/profiling_shapes.py pin the condition, which skiplint decides by autograd dataflow.

SKP205: a skip between child Sequentials travels in its micro-batch's skip tracker; backward fails
when checkpointing recomputes the popping partition across partitions.

SKP304: fairscale's AsyncPipe refuses skippable layers in LazyModule lists and carries no skip
between its processes (two processes on CPU, gloo and RPC).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from typing import Any, Callable

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchgpipe")
pytest.importorskip("fairscale")
from torch import nn  # noqa: E402

from tests import profiling_shapes  # noqa: E402

LIBRARIES = {"torchgpipe": ("torchgpipe.skip", "torchgpipe", "GPipe"),
             "fairscale": ("fairscale.nn.pipe.skip", "fairscale.nn", "Pipe")}
CHECKPOINTS = ("never", "except_last", "always")


def library(name: str) -> tuple[Any, Any]:
    root, package, pipe = LIBRARIES[name]
    return importlib.import_module(root), getattr(importlib.import_module(package), pipe)


def stasher(skip: Any, name: str, value: Callable[[Any], Any] = lambda x: x * 2) -> nn.Module:
    @skip.skippable(stash=[name])
    class Stash(nn.Module):
        def forward(self, x: Any) -> Any:
            yield skip.stash(name, value(x))
            return x

    return Stash()


def popper(skip: Any, name: str, discard: bool = False) -> nn.Module:
    @skip.skippable(pop=[name])
    class Pop(nn.Module):
        def forward(self, x: Any) -> Any:
            if discard:
                yield skip.pop(name)
                return x + 1
            skip_value = yield skip.pop(name)
            return x + skip_value

    return Pop()


def run_steps(pipe_cls: Any, model: nn.Sequential, balance: list[int], checkpoint: str = "except_last") -> str:
    """'ok', or the step that failed and the exception: 'construct: ...', 'forward: ...', ..."""
    step = "construct"
    try:
        pipe = pipe_cls(model, balance=balance, devices=["cpu"] * len(balance), chunks=2, checkpoint=checkpoint)
        x = torch.randn(4, 3, requires_grad=True)
        step = "forward"
        output = pipe(x)
        step = "backward"
        output.sum().backward()
        step = "eval"
        pipe.eval()
        with torch.no_grad():
            pipe(x)
    except Exception as error:
        return f"{step}: {type(error).__name__}: {error}"
    return "ok"


def failing_file(error: BaseException) -> str:
    frame = error.__traceback__
    last = None
    while frame is not None:
        last = frame
        frame = frame.tb_next
    assert last is not None
    path = last.tb_frame.f_code.co_filename
    return os.path.join(*path.split(os.sep)[-2:])


# -- SKP305 ------------------------------------------------------------------------------------------

def discarded_model(skip: Any, value: Callable[[Any], Any] = lambda x: x * 2) -> nn.Sequential:
    return nn.Sequential(stasher(skip, "a", value), nn.Linear(3, 3), popper(skip, "a", discard=True))


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
@pytest.mark.parametrize("balance", [[1, 2], [2, 1], [1, 1, 1]])
def test_discarded_pop_across_partitions_fails_in_backward(lib: str, checkpoint: str, balance: list[int]) -> None:
    skip, pipe_cls = library(lib)
    torch.manual_seed(0)
    pipe = pipe_cls(discarded_model(skip), balance=balance, devices=["cpu"] * len(balance), chunks=2,
                    checkpoint=checkpoint)
    output = pipe(torch.randn(4, 3, requires_grad=True))  # forward runs
    with pytest.raises(AssertionError) as raised:
        output.sum().backward()
    assert str(raised.value) == ""  # a bare assert
    assert failing_file(raised.value) == "skip/portal.py"


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
def test_discarded_pop_in_the_stash_partition_runs(lib: str, checkpoint: str) -> None:
    skip, pipe_cls = library(lib)
    torch.manual_seed(0)
    assert run_steps(pipe_cls, discarded_model(skip), [3], checkpoint) == "ok"
    model = nn.Sequential(nn.Linear(3, 3), stasher(skip, "a"), popper(skip, "a", discard=True), nn.Linear(3, 3))
    assert run_steps(pipe_cls, model, [1, 2, 1], checkpoint) == "ok"


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_discarded_pop_across_partitions_fails_only_in_backward(lib: str) -> None:
    skip, pipe_cls = library(lib)
    torch.manual_seed(0)
    pipe = pipe_cls(discarded_model(skip), balance=[1, 2], devices=["cpu", "cpu"], chunks=2)
    pipe.eval()
    with torch.no_grad():
        assert pipe(torch.randn(4, 3)).shape == (4, 3)
    assert run_steps(pipe_cls, discarded_model(skip), [2, 1]) == "backward: AssertionError: "


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("value", [lambda x: x, lambda x: x.detach()], ids=["input", "detached"])
def test_discarded_pop_fails_whatever_tensor_was_stashed(lib: str, value: Callable[[Any], Any]) -> None:
    skip, pipe_cls = library(lib)
    assert run_steps(pipe_cls, discarded_model(skip, value), [1, 2]) == "backward: AssertionError: "


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_discarded_pop_of_a_stashed_none_runs(lib: str) -> None:
    skip, pipe_cls = library(lib)
    assert run_steps(pipe_cls, discarded_model(skip, lambda x: None), [1, 2]) == "ok"


# -- SKP306 ------------------------------------------------------------------------------------------

NONE_ID = "construct: AttributeError: 'NoneType' object has no attribute 'id'"


def routes_model(skip: Any, ns: Any, layout: str) -> nn.Sequential:
    """Layers from a layout string: 'a'/'A' stash/pop the default skip 'a'; 'b'/'B' stash/pop
    skip 'b' isolated in `ns`; 'c'/'C' stash/pop 'c' in a second namespace; '.' a plain layer."""
    other = skip.Namespace()
    makers: dict[str, Callable[[], nn.Module]] = {
        "a": lambda: stasher(skip, "a"), "A": lambda: popper(skip, "a"),
        "b": lambda: stasher(skip, "b").isolate(ns), "B": lambda: popper(skip, "b").isolate(ns),
        "c": lambda: stasher(skip, "c").isolate(other), "C": lambda: popper(skip, "c").isolate(other),
        ".": lambda: nn.Linear(3, 3),
    }
    return nn.Sequential(*(makers[ch]() for ch in layout))


#: (layout, balance, expected): the routes are (stash partition, pop partition).
CASES = [
    ("abAB", [4], NONE_ID),              # both 0->0 in a one-partition pipe
    ("abAB", [2, 2], NONE_ID),           # both 0->1
    ("abAB.", [4, 1], NONE_ID),          # both 0->0, then a second partition
    ("a.b.AB", [3, 3], NONE_ID),         # both 0->1, a plain layer between
    ("a.bAB.", [1, 4, 1], "ok"),         # a 0->1, b 1->1: different sources
    ("abA.B", [2, 1, 2], "ok"),          # same source: 0->1 and 0->2
    ("a.bAB", [2, 1, 2], "ok"),          # same destination: 0->2 and 1->2
    ("acAC", [2, 2], NONE_ID),           # any isolated namespace, not only the first
    ("bcBC", [2, 2], "ok"),              # two different Namespaces on one route
    ("aA.bB", [2, 3], "ok"),             # default 0->0, isolated 1->1
]


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("layout, balance, expected", CASES)
def test_mixed_namespaces_on_one_route(lib: str, layout: str, balance: list[int], expected: str) -> None:
    skip, pipe_cls = library(lib)
    ns = skip.Namespace()
    skip.verify_skippables(routes_model(skip, ns, layout))  # passes in every case
    plain = routes_model(skip, ns, layout)
    assert plain(torch.randn(4, 3)).shape == (4, 3)  # and so does a plain run
    assert run_steps(pipe_cls, routes_model(skip, ns, layout), balance) == expected


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_isolate_only_some_names_mixes_namespaces_in_one_layer(lib: str) -> None:
    skip, pipe_cls = library(lib)
    ns = skip.Namespace()

    @skip.skippable(stash=["a", "b"])
    class Both(nn.Module):
        def forward(self, x: Any) -> Any:
            yield skip.stash("a", x)
            yield skip.stash("b", x)
            return x

    model = nn.Sequential(Both().isolate(ns, only=["b"]), popper(skip, "a"), popper(skip, "b").isolate(ns))
    assert run_steps(pipe_cls, model, [1, 2]) == NONE_ID


# -- SKP303 ------------------------------------------------------------------------------------------
# What the balancers do with skippable layers on CPU: balance_by_time profiles each layer alone but
# on one thread, whose skip tracker carries the stashed tensor from layer to layer, so it does not
# fail with "has not been stashed". It fails when the stashed tensor shares autograd history with the
# stash layer's output (typically: the layer stashes what it returns, computed inside it): the stash
# layer's own backward frees that graph, then the pop layer's backward reaches it again.

BALANCERS = {"torchgpipe": "torchgpipe.balance", "fairscale": "fairscale.nn.pipe.balance"}


def profile(lib: str, model: nn.Sequential) -> Any:
    balance_by_time = importlib.import_module(BALANCERS[lib]).balance_by_time
    return balance_by_time(2, model, torch.randn(4, 3), timeout=0.02, device=torch.device("cpu"))


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_profiling_a_stash_of_the_layer_input_runs(lib: str) -> None:
    skip, _pipe = library(lib)
    model = nn.Sequential(nn.Linear(3, 3), stasher(skip, "a", lambda x: x), nn.Linear(3, 3), popper(skip, "a"))
    assert sorted(profile(lib, model)) in ([1, 3], [2, 2])


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_profiling_a_stash_computed_apart_from_the_output_runs(lib: str) -> None:
    skip, _pipe = library(lib)
    model = nn.Sequential(nn.Linear(3, 3), stasher(skip, "a", lambda x: x * 2), nn.Linear(3, 3), popper(skip, "a"))
    assert sorted(profile(lib, model)) in ([1, 3], [2, 2])


def output_stasher(skip: Any) -> nn.Module:
    @skip.skippable(stash=["a"])
    class StashOutput(nn.Module):
        def forward(self, x: Any) -> Any:
            y = x * 2
            yield skip.stash("a", y)
            return y

    return StashOutput()


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_profiling_a_discarded_pop_of_the_computed_output_runs(lib: str) -> None:
    skip, _pipe = library(lib)
    model = nn.Sequential(nn.Linear(3, 3), output_stasher(skip), nn.Linear(3, 3), popper(skip, "a", discard=True))
    assert sorted(profile(lib, model)) in ([1, 3], [2, 2])


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_profiling_a_stash_of_the_computed_output_fails_in_backward(lib: str) -> None:
    skip, _pipe = library(lib)

    @skip.skippable(stash=["a"])
    class StashOutput(nn.Module):
        def forward(self, x: Any) -> Any:
            y = x * 2
            yield skip.stash("a", y)
            return y

    model = nn.Sequential(nn.Linear(3, 3), StashOutput(), nn.Linear(3, 3), popper(skip, "a"))
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        profile(lib, model)
    pipe_cls = library(lib)[1]
    assert run_steps(pipe_cls, model, [2, 2]) == "ok"  # the same model runs in a pipe


# -- SKP205 between child Sequentials ----------------------------------------------------------------
# verify_skippables and inspect_skip_layout see direct children only, so a skip stashed inside one
# child Sequential and popped inside a later one has no portal: it travels in the skip tracker of
# its micro-batch, which every partition shares. It runs, equal to the plain model, in one
# partition and across partitions without recomputation; across partitions, backward raises
# "'a' has not been stashed" when the popping partition is recomputed (checkpoint='always', or
# 'except_last' with more than one micro-batch): the recomputation pops what forward took out.

def children_model(skip: Any, layout: str) -> nn.Sequential:
    """'s'/'p': a child Sequential holding a stash/pop of 'a'; 'x': one holding a pop, then a stash;
    'S'/'P': the layer itself as a direct child; '.': a plain layer."""
    makers: dict[str, Callable[[], nn.Module]] = {
        "s": lambda: nn.Sequential(stasher(skip, "a"), nn.Linear(3, 3)),
        "p": lambda: nn.Sequential(nn.Linear(3, 3), popper(skip, "a")),
        "x": lambda: nn.Sequential(popper(skip, "a"), stasher(skip, "a")),
        "S": lambda: stasher(skip, "a"), "P": lambda: popper(skip, "a"), ".": lambda: nn.Linear(3, 3),
    }
    return nn.Sequential(*(makers[ch]() for ch in layout))


def pipe_steps(pipe_cls: Any, model: nn.Sequential, balance: list[int], chunks: int, checkpoint: str) -> str:
    reference = nn.Sequential(*model.children())
    x = torch.randn(4, 3, requires_grad=True)
    step = "construct"
    try:
        pipe = pipe_cls(model, balance=balance, devices=["cpu"] * len(balance), chunks=chunks, checkpoint=checkpoint)
        step = "forward"
        output = pipe(x)
        step = "backward"
        output.sum().backward()
    except Exception as error:
        return f"{step}: {type(error).__name__}: {str(error).splitlines()[0]}"
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    expected = reference(x)
    expected.sum().backward()
    assert torch.allclose(output, expected, atol=1e-6)
    assert all(torch.allclose(g, p.grad, atol=1e-6) for g, p in zip(grads, reference.parameters()))
    return "ok"


NOT_STASHED = "backward: RuntimeError: 'a' has not been stashed"
SPLIT_CASES = [
    ("sp", [2], 4, "always", "ok"),             # one partition: recomputing it stashes again first
    ("s.p", [3], 4, "except_last", "ok"),
    ("sp", [1, 1], 4, "never", "ok"),           # across partitions, no recomputation
    ("sp", [1, 1], 1, "except_last", "ok"),     # one micro-batch: the last is not checkpointed
    ("sp", [1, 1], 2, "except_last", NOT_STASHED),
    ("sp", [1, 1], 1, "always", NOT_STASHED),
    ("s.p", [2, 1], 2, "except_last", NOT_STASHED),
    ("s.p", [1, 2], 4, "always", NOT_STASHED),
    ("ps", [2], 1, "never", "forward: RuntimeError: 'a' has not been stashed"),  # the pop's child first
    ("x.", [1, 1], 1, "never", "forward: RuntimeError: 'a' has not been stashed"),  # a pop first in one child
    ("ssp", [3], 2, "except_last", "ok"),      # stashed again: the second stash is popped
    ("ssp", [1, 1, 1], 1, "never", "ok"),
    ("ssp", [2, 1], 2, "except_last", NOT_STASHED),
    ("spp", [3], 1, "never", "forward: RuntimeError: 'a' has not been stashed"),  # popped twice
    ("Sp", [2], 1, "never", "construct: TypeError: one or more pairs of stash and pop do not match:"),
    ("sP", [1, 1], 1, "never", "construct: TypeError: one or more pairs of stash and pop do not match:"),
]


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("layout, balance, chunks, checkpoint, expected", SPLIT_CASES)
def test_skips_between_child_sequentials(lib: str, layout: str, balance: list[int], chunks: int, checkpoint: str,
                                         expected: str) -> None:
    skip, pipe_cls = library(lib)
    torch.manual_seed(0)
    assert pipe_steps(pipe_cls, children_model(skip, layout), balance, chunks, checkpoint) == expected


# -- SKP303 by autograd dataflow: the sources that tests/test_compositions.py checks statically ------

ROOTS = {"torchgpipe": "torchgpipe", "fairscale": "fairscale.nn.pipe"}


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("stash, pop, before", profiling_shapes.CASES)
def test_profiling_fails_when_the_popped_skip_shares_saved_history(lib: str, stash: str, pop: str,
                                                                   before: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    code = compile(profiling_shapes.source(stash, pop, before, ROOTS[lib]), f"<{stash}-{pop}>", "exec")
    if profiling_shapes.fails(stash, pop, before):
        with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
            exec(code, {"__name__": "profiled"})
    else:
        namespace: dict[str, Any] = {"__name__": "profiled"}
        exec(code, namespace)
        assert sum(namespace["balance"]) == len(namespace["model"])


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_balance_by_size_refuses_a_cpu_device(lib: str) -> None:
    # It profiles CUDA memory only; on CUDA it runs forward passes alone (profile_sizes calls no
    # backward), so a shared autograd history cannot fail there.
    balance_by_size = importlib.import_module(BALANCERS[lib]).balance_by_size
    with pytest.raises(ValueError, match="^size profiler supports only CUDA device$"):
        balance_by_size(2, nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3)), torch.randn(4, 3),
                        device=torch.device("cpu"))


# -- SKP304: fairscale's AsyncPipe (its multi-process pipe in 0.4.13), two processes on CPU ---------

def async_pipe(case: str, directory: str, timeout: float = 90.0) -> list[str]:
    """What each of two ranks reports ('no result' for a rank that waits on a peer that failed)."""
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "async_pipe_worker.py")
    processes = [subprocess.Popen([sys.executable, worker, case, str(rank), "2", directory],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for rank in range(2)]
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    out = []
    for rank in range(2):
        path = os.path.join(directory, f"out.{rank}")
        out.append(open(path, encoding="utf-8").read() if os.path.exists(path) else "no result")
    return out


@pytest.mark.parametrize("case, expected", [
    ("plain", ["ok", "ok"]),
    ("within", ["ok", "ok"]),  # the skip inside rank 1's partition
    ("lazy", ["construct: ValueError: Can't use Skippable layers with multi-process pipe and lazy construction"] * 2),
])
def test_async_pipe_runs_skips_inside_one_process_only(case: str, expected: list[str], tmp_path: Any) -> None:
    assert async_pipe(case, str(tmp_path)) == expected


def test_async_pipe_does_not_carry_a_skip_between_processes(tmp_path: Any) -> None:
    # Construction passes (no verify_skippables, an empty skip layout); the popping rank finds
    # nothing in its own tracker, and its peer loses the connection.
    first, second = async_pipe("across", str(tmp_path))
    assert second == "forward: RuntimeError: 's' has not been stashed"
    assert first.startswith("forward: RuntimeError") or first == "no result"


# -- SKP305 for a pop used only detached ---------------------------------------------------------------

def detached_popper(skip: Any, how: str) -> nn.Module:
    @skip.skippable(pop=["a"])
    class Detached(nn.Module):
        def forward(self, x: Any) -> Any:
            a = yield skip.pop("a")
            if how == "detach":
                return x + a.detach()
            if how == "detach_":
                a.detach_()
                return x + a
            if how == "rebound":
                a = a.detach()
                return x + a
            if how == "rebound-in-training":
                if self.training:
                    a = a.detach()
                return x + a
            if how == "history-in-eval":
                if not self.training:
                    return x + a
                return x + a.detach()
            with torch.no_grad():
                b = a * 2
            return x + b

    return Detached()


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("how", ["detach", "detach_", "no_grad", "rebound", "rebound-in-training",
                                 "history-in-eval"])
@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
def test_a_pop_used_only_detached_fails_backward_across_partitions(lib: str, how: str, checkpoint: str) -> None:
    skip, pipe_cls = library(lib)
    model = nn.Sequential(stasher(skip, "a"), nn.Linear(3, 3), detached_popper(skip, how))
    assert run_steps(pipe_cls, model, [2, 1], checkpoint) == "backward: AssertionError: "
    model = nn.Sequential(stasher(skip, "a"), nn.Linear(3, 3), detached_popper(skip, how))
    assert run_steps(pipe_cls, model, [3], checkpoint) == "ok"


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
def test_profiling_takes_each_direct_child_whole(lib: str) -> None:
    skip, _pipe = library(lib)
    inside = nn.Sequential(nn.Sequential(nn.Linear(3, 3), output_stasher(skip), nn.ReLU(), popper(skip, "a")),
                           nn.Linear(3, 3))
    assert sorted(profile(lib, inside)) == [1, 1]
    across = nn.Sequential(nn.Sequential(nn.Linear(3, 3), output_stasher(skip), nn.ReLU()),
                           nn.Sequential(nn.Linear(3, 3), popper(skip, "a"), nn.Tanh()))
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        profile(lib, across)


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("name", sorted(profiling_shapes.LAYOUTS))
def test_profiling_follows_the_layout(lib: str, name: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    code = compile(profiling_shapes.layout_source(name, ROOTS[lib]), f"<{name}>", "exec")
    if profiling_shapes.LAYOUTS[name][1]:
        with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
            exec(code, {"__name__": "profiled"})
    else:
        namespace: dict[str, Any] = {"__name__": "profiled"}
        exec(code, namespace)
        assert sum(namespace["balance"]) == len(namespace["model"])


# -- partitions held as attributes, run in turn by forward (one route) ------------------------------

@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("order", ["s0-s1", "s1-s0", "s1"])
def test_partitions_held_as_attributes_run_in_turn_share_one_tracker(lib: str, order: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    skip, _pipe = library(lib)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.s0 = nn.Sequential(stasher(skip, "skip"), nn.Linear(3, 3))
            self.s1 = nn.Sequential(nn.Linear(3, 3), popper(skip, "skip"))

        def forward(self, x: Any) -> Any:
            for name in order.split("-"):
                x = getattr(self, name)(x)
            return x

    x = torch.randn(2, 3)
    if order == "s0-s1":
        Model()(x).sum().backward()
    else:
        with pytest.raises(RuntimeError, match="'skip' has not been stashed"):
            Model()(x)


@pytest.mark.parametrize("lib", sorted(LIBRARIES))
@pytest.mark.parametrize("case", ["plain", "other-namespace", "same-namespace", "second-pop"])
def test_direct_calls_share_the_thread_tracker_by_namespace(lib: str, case: str) -> None:
    skip, _pipe = library(lib)
    tracker = importlib.import_module(LIBRARIES[lib][0] + ".tracker")
    with tracker.use_skip_tracker(tracker.SkipTracker()):  # empty, whatever ran before
        direct_calls(skip, case)


def direct_calls(skip: Any, case: str) -> None:
    x = torch.randn(2, 3)
    ns = skip.Namespace()
    stash_layer = stasher(skip, "skip")
    pop_layer = popper(skip, "skip")
    if case in ("other-namespace", "same-namespace"):
        stash_layer = stash_layer.isolate(ns)
    if case == "same-namespace":
        pop_layer = pop_layer.isolate(ns)
    stashed = stash_layer(x)
    if case == "other-namespace":
        with pytest.raises(RuntimeError, match="'skip' has not been stashed"):
            pop_layer(stashed)
        return
    y = pop_layer(stashed)
    if case in ("plain", "same-namespace"):
        assert y.shape == x.shape
    elif case == "second-pop":
        with pytest.raises(RuntimeError, match="'skip' has not been stashed"):
            popper(skip, "skip")(y)
