"""The `pipelining` backend: the skippable Sequential traced by torch.fx and split with
split_module at the balance (every value that crosses a partition is listed), then run by
torch.distributed.pipelining's ScheduleGPipe in one process per stage (gloo on CPU, nccl on GPUs)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch
import torch.fx as fx

from skiplint.runtime import stage
from skiplint.runtime.errors import CannotRun
from skiplint.runtime.report import Crossing, Observation, Route
from skiplint.runtime.result import RunResult

STEP_SPLIT = "fx trace and split_module"


class _LabellingTracer(fx.Tracer):  # type: ignore[misc, unused-ignore]  # Any without torch installed
    """symbolic_trace's tracer that tags an exception with the top-level child it came from."""

    def call_module(self, m: torch.nn.Module, forward: Any, args: Any, kwargs: Any) -> Any:
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception as error:
            if not hasattr(error, "_skiplint_layer"):
                try:
                    error._skiplint_layer = self.path_of_module(m).split(".")[0]  # type: ignore[attr-defined]
                except (NameError, AttributeError):
                    pass
            raise


def _layer_of(node: Any, children: list[str]) -> int | None:
    stack = node.meta.get("nn_module_stack") or {}
    for value in stack.values():
        path = value[0] if isinstance(value, tuple) else str(value)
        head = path.split(".")[0]
        if head in children:
            return children.index(head)
    return None


def _error_layer(error: BaseException) -> str | None:
    layer = getattr(error, "_skiplint_layer", None)
    return layer if isinstance(layer, str) else None


def _causes(error: BaseException) -> list[BaseException]:
    """The error and what it wraps (torch re-raises some tracing failures from the model's own)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


#: What a failure of the model's code is read as: (error, the child it came from) -> observations
#: of the split step ([] when the error is no skip failure).
Observe = Callable[[BaseException, Optional[str]], list[Observation]]


@dataclass
class Split:
    """What the fx trace and split gave: whether the model could be partitioned at the balance,
    the skip failures met on the way, and the values and skips that cross partitions."""

    balanced: bool
    #: One line for the step: why it failed, or what the split made.
    detail: str
    observations: list[Observation] = field(default_factory=list)
    #: The child whose forward failed while tracing, when one did.
    failed_layer: Optional[str] = None
    crossings: Optional[list[Crossing]] = None
    routes: Optional[list[Route]] = None
    #: The traced graph's placeholders: the pipeline's own inputs.
    inputs: frozenset[str] = frozenset()


def _observe_trace(observe: Observe, error: BaseException) -> tuple[list[Observation], Optional[str]]:
    """The model's skip failures met while tracing, with the child they came from; a failure that
    is not one of them means the model cannot be traced, which ends the run (exit 2)."""
    for candidate in _causes(error):
        layer = _error_layer(candidate) or _error_layer(error)
        found = observe(candidate, layer)
        if found:
            return found, layer
    layer = _error_layer(error)
    where = f"layer '{layer}' raised " if layer is not None else "raised "
    lines = str(error).strip().splitlines()
    what = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    raise CannotRun(f"torch.fx cannot trace the model: {where}{what}") from error


def split(model: torch.nn.Sequential, lib: Any, balance: tuple[int, ...], observe: Observe) -> Split:
    """Trace the model (with `lib`'s skip tracker recording each stash), split it at the balance,
    and list the crossing values and the skip routes they carry."""
    from torch.fx.passes.split_module import split_module

    children = [name for name, _ in model.named_children()]
    part_of_layer = [p for p, size in enumerate(balance) for _ in range(size)]
    if len(part_of_layer) != len(children):
        from skiplint.runtime import join as joining

        message = (f"module and sum of balance have different length "
                   f"(module: {len(children)}, sum of balance: {sum(balance)})")
        return Split(False, "balance does not fit the model",
                     [Observation(joining.BALANCE, STEP_SPLIT, None, None, None, message)])
    saved: dict[Any, Any] = {}

    class Recorder(lib.SkipTracker):  # type: ignore[misc, unused-ignore]  # a class of the library (Any)
        def save(self, batch: Any, ns: Any, name: str, tensor: Any) -> None:
            saved[(ns, name)] = getattr(tensor, "node", None)
            super().save(batch, ns, name, tensor)

    try:
        with lib.use_skip_tracker(Recorder()):
            graph = _LabellingTracer().trace(model)
    except (torch.cuda.OutOfMemoryError, CannotRun):
        raise
    except Exception as error:
        found, layer = _observe_trace(observe, error)
        # The fx split is this backend's partitioning: no stage can be built without it.
        first = found[0]
        where = f"layer '{first.layer}' ({first.cls}): " if first.layer is not None else ""
        return Split(False, f"{where}{first.message}", found, failed_layer=layer)
    traced = fx.GraphModule(model, graph)
    inputs = frozenset(node.name for node in traced.graph.nodes if node.op == "placeholder")
    partition: dict[str, int] = {}
    last = 0
    for node in traced.graph.nodes:
        child = _layer_of(node, children)
        if child is not None:
            last = part_of_layer[child]
        partition[node.name] = last
    split_gm = split_module(traced, model, lambda node: partition[node.name])
    skip_of = {node.name: name for (_ns, name), node in saved.items() if node is not None}
    crossings = []
    for sub_name, sub in split_gm.named_children():
        dst = int(sub_name.rsplit("_", 1)[-1])
        for node in sub.graph.nodes:  # type: ignore[union-attr, unused-ignore]
            if node.op != "placeholder":
                continue
            src = partition.get(node.name, 0)
            if src != dst:
                crossings.append(Crossing(node.name, src, dst, skip_of.get(node.name)))
    skips = sum(c.skip is not None for c in crossings)
    detail = (f"{len(list(split_gm.named_children()))} submodules, {len(crossings)} value(s) cross "
              f"partitions, {skips} of them skips")
    return Split(True, detail, crossings=crossings, routes=_routes(model, lib, children, part_of_layer),
                 inputs=inputs)


def _routes(model: torch.nn.Sequential, lib: Any, children: list[str], part_of_layer: list[int]) -> list[Route]:
    """The skip routes at this balance, stash layer to pop layer, as inspect_skip_layout pairs them."""
    stashed_at: dict[Any, int] = {}
    routes = []
    for index, (name, layer) in enumerate(model.named_children()):
        if not isinstance(layer, lib.Skippable):
            continue
        for key in layer.stashable():
            stashed_at[key] = index
        for key in layer.poppable():
            src = stashed_at.pop(key)
            routes.append(Route(key[1], children[src], name, part_of_layer[src], part_of_layer[index]))
    return routes


def stage_devices(devices: list[torch.device]) -> list[str]:
    """The device of each stage process. nccl, which carries CUDA tensors between the stages,
    refuses two processes on one GPU; gloo carries only CPU tensors. Stages that would share a GPU
    (more stages than GPUs) therefore all run on the CPU, over gloo."""
    cuda = [d for d in devices if d.type == "cuda"]
    if len({(d.index or 0) for d in cuda}) < len(cuda):
        return ["cpu"] * len(devices)
    return [str(d) for d in devices]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def distributed(runner: Any, reference: Any) -> None:
    """ScheduleGPipe over one process per stage; compares output and parameter gradients."""
    world = len(runner.balance)
    name = f"pipelining ScheduleGPipe ({world} processes)"
    with runner.steps.timed(name) as out, tempfile.TemporaryDirectory(prefix="skiplint-pp-") as tmp:
        children = [child for child, _ in runner.model.named_children()]
        starts, index = [], 0
        for size in runner.balance[:-1]:
            index += size
            starts.append(children[index])
        torch.save({"state": runner.model.state_dict(), "sample": runner.sample,
                    "weights": runner.weights}, os.path.join(tmp, "input.pt"))
        opts = runner.options
        job = {"target": opts.target, "sample": opts.sample, "input_shape": opts.input_shape,
               "split": starts, "chunks": opts.chunks, "world": world, "port": _free_port(),
               "devices": stage_devices(runner.devices), "dir": tmp, "timeout": opts.timeout}
        with open(os.path.join(tmp, "job.json"), "w") as handle:
            json.dump(job, handle)
        procs = []
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        for rank in range(world):
            log = open(os.path.join(tmp, f"rank{rank}.log"), "w")
            procs.append((subprocess.Popen([sys.executable, "-m", "skiplint.runtime.stage", tmp, str(rank)],
                                           stdout=log, stderr=subprocess.STDOUT, env=env), log))
        deadline = time.monotonic() + opts.timeout
        timed_out = False
        for proc, log in procs:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                timed_out = True
        for proc, log in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
        if timed_out:
            out["status"], out["detail"] = "failed", f"timed out after {opts.timeout:g}s"
            return
        failures = []
        for rank, (proc, _log) in enumerate(procs):
            result_path = os.path.join(tmp, f"rank{rank}.json")
            if os.path.exists(result_path):
                with open(result_path) as handle:
                    result = json.load(handle)
                if result.get("error"):
                    failures.append((result.get("kind", stage.RAISED), rank, result.get("step", ""),
                                     result["error"]))
            elif proc.returncode != 0:
                with open(os.path.join(tmp, f"rank{rank}.log")) as handle:
                    tail = [line for line in handle.read().splitlines() if line.strip()][-1:]
                failures.append((stage.RAISED, rank, "", f"exited {proc.returncode}: {' '.join(tail)}"))
        if failures:
            kind, rank, step, error = culprit(failures)
            if kind == stage.UNSUPPORTED:
                what, _, message = error.partition(": ")
                raise CannotRun(f"the pipelining backend cannot run this model: rank {rank} raised {what} during "
                                f"{step}: {message}{_input_note(runner, rank)}")
            out["status"], out["detail"] = "failed", f"rank {rank}: {error}"
            return
        grads: dict[str, torch.Tensor] = {}
        output = None
        for rank in range(world):
            result = torch.load(os.path.join(tmp, f"rank{rank}.pt"))
            grads.update(result["grads"])
            if result.get("output") is not None:
                output = result["output"]
        compare(runner, reference, output, grads, out)


#: Which stage's error is the culprit, first to last: a restriction of the library, an error in a
#: stage's own work, then a wait on a peer that went away (the others' echo of the first two).
_BLAME = (stage.UNSUPPORTED, stage.RAISED, stage.LOST)


def culprit(failures: list[tuple[str, int, str, str]]) -> tuple[str, int, str, str]:
    """The failure to report of (kind, rank, step, error): a peer's lost connection ("Connection
    closed by peer") only when no stage says why it went away."""
    return min(failures, key=lambda f: (_BLAME.index(f[0]) if f[0] in _BLAME else len(_BLAME), f[1]))


def _input_note(runner: Any, rank: int) -> str:
    """Why the library refuses this split, when a skip carries the pipeline's own input past the
    first stage: it gives that input to the first stage only."""
    skips = sorted({x.skip for x in runner.report.crossings or () if x.skip and x.dst_partition == rank
                    and x.value in runner.pipeline_inputs})
    if not skips:
        return ""
    named = ", ".join(f"'{name}'" for name in skips)
    return (f" (skip {named} carries the pipeline's own input to stage {rank}; torch.distributed.pipelining "
            "gives that input to the first stage only)")


def compare(runner: Any, reference: Any, output: Any, grads: dict[str, torch.Tensor], out: dict[str, str]) -> None:
    """The stages' output and parameter gradients against the plain reference (the schedule
    exposes no input gradient)."""
    runner.reach.completed.update(runner.reach.layers.values())
    wanted = {k: v for k, v in reference.grads.items() if k != "<input>"}
    runner._compare("pipelining", output, grads, RunResult(reference.output, wanted), out)
