"""The `pipelining` backend: the skippable Sequential cut at the balance into the stages of
skiplint.runtime.adapter (each returns its output and the skips in flight across its boundary, so
stages talk to neighbours only), run by torch.distributed.pipelining's ScheduleGPipe in one process
per stage (gloo on CPU, nccl on GPUs).

What the backend cannot run is decided before any stage process starts, from the model: a value
that a stage would send and that is not a tensor (torch.distributed.pipelining carries tensors
only). It is the backend's limit (exit 2 with the reason), never a finding.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any, Optional

import torch

from skiplint.runtime import adapter, backends, stage
from skiplint.runtime.errors import CannotRun
from skiplint.runtime.report import Crossing, Observation, Route

STEP_SPLIT = "stage plan"


@dataclass
class Split:
    """What the stage plan gave: whether the model could be cut at the balance, and the values
    that cross stage boundaries, beside the library's own skip layout at that balance."""

    balanced: bool
    #: One line for the step: why it failed, or what the plan made.
    detail: str
    observations: list[Observation] = field(default_factory=list)
    crossings: Optional[list[Crossing]] = None
    #: The skip routes as the library's inspect_skip_layout reads them.
    routes: Optional[list[Route]] = None


def split(model: torch.nn.Sequential, lib: Any, balance: tuple[int, ...]) -> Split:
    """The stage plan at the balance: the skips each boundary carries (from the model's
    structure), and the library's skip layout of the same partitions to compare them with."""
    children = [name for name, _ in model.named_children()]
    if sum(balance) != len(children):
        from skiplint.runtime import join as joining

        message = (f"module and sum of balance have different length "
                   f"(module: {len(children)}, sum of balance: {sum(balance)})")
        return Split(False, "balance does not fit the model",
                     [Observation(joining.BALANCE, STEP_SPLIT, None, None, None, message)])
    plan = adapter.plan(model, balance)
    crossings = [Crossing(f"output of stage {b}", b, b + 1) for b in range(plan.stages - 1)]
    for skip in plan.skips:
        if skip.pop_stage is not None and skip.pop_stage != skip.stash_stage:
            crossings.append(Crossing(f"layer {children[skip.stash_layer]} -> layer {children[skip.pop_layer or 0]}",
                                      skip.stash_stage, skip.pop_stage, skip.name))
    carried = sum(len(plan.carried(b)) for b in range(plan.stages - 1))
    detail = (f"{plan.stages} stages, {len(crossings) - (plan.stages - 1)} skip(s) cross stages, "
              f"{carried} carried value(s) at the boundaries")
    layers = list(model.named_children())
    partitions = [torch.nn.Sequential(OrderedDict(layers[sum(balance[:i]):sum(balance[:i + 1])]))
                  for i in range(len(balance))]
    return Split(True, detail, crossings=crossings, routes=backends.layout_routes(model, lib, partitions))


def micro_batches(sample: torch.Tensor, chunks: int) -> int:
    """How many micro-batches the library's pipe makes of the sample (torch.chunk: fewer than
    `chunks` when the batch is smaller), which the schedule is given."""
    return len(sample.chunk(chunks))


def check_carried(model: torch.nn.Sequential, balance: tuple[int, ...], sample: torch.Tensor, chunks: int) -> None:
    """CannotRun when a stage of this model would send a value that is not a tensor."""
    try:
        adapter.check_carried(model, balance, sample, chunks)
    except adapter.NotCarried as error:
        raise CannotRun(f"the pipelining backend cannot run this model: {error}; torch.distributed.pipelining "
                        "carries only tensors between stages") from None


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
        check_carried(runner.model, tuple(runner.balance), runner.sample, runner.options.chunks)
        torch.save({"state": runner.model.state_dict(), "sample": runner.sample,
                    "weights": runner.weights}, os.path.join(tmp, "input.pt"))
        opts = runner.options
        job = {"target": opts.target, "sample": opts.sample, "input_shape": opts.input_shape,
               "balance": list(runner.balance), "chunks": opts.chunks, "world": world, "port": _free_port(),
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
            _kind, rank, _step, error = culprit(failures)
            out["status"], out["detail"] = "failed", f"rank {rank}: {error}"
            return
        compare(runner, reference, [torch.load(os.path.join(tmp, f"rank{rank}.pt")) for rank in range(world)], out)


#: Which stage's error is the culprit, first to last: an error in a stage's own work, then a wait
#: on a peer that went away (the others' echo of the first).
_BLAME = (stage.RAISED, stage.LOST)


def culprit(failures: list[tuple[str, int, str, str]]) -> tuple[str, int, str, str]:
    """The failure to report of (kind, rank, step, error): a peer's lost connection only when no
    stage says why it went away."""
    return min(failures, key=lambda f: (_BLAME.index(f[0]) if f[0] in _BLAME else len(_BLAME), f[1]))


def compare(runner: Any, reference: Any, results: list[dict[str, Any]], out: dict[str, str]) -> None:
    """The stages' output and parameter gradients (`results`: every stage's) against the plain
    reference (the schedule exposes no input gradient)."""
    grads = {name: grad for result in results for name, grad in result["grads"].items()}
    output = next((r["output"] for r in reversed(results) if r.get("output") is not None), None)
    runner.reach.completed.update(runner.reach.layers.values())
    wanted = {k: v for k, v in reference.grads.items() if k != "<input>"}
    runner._compare("pipelining", output, grads, replace(reference, grads=wanted), out)
