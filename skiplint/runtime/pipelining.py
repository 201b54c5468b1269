"""The `pipelining` backend: the skippable Sequential cut at the balance into the stages of
skiplint.runtime.adapter (each returns its output and the skips in flight across its boundary, so
stages talk to neighbours only), run by torch.distributed.pipelining's ScheduleGPipe in one process
per stage (gloo on CPU, nccl on GPUs). `run_stage` is one stage's forward and backward, also what
each rank of a torchrun verify (skiplint.runtime.distributed) runs.

What the backend cannot run is decided before any stage process starts, from the model: a value
that a stage would send and that is not a tensor (torch.distributed.pipelining carries tensors
only). It is the backend's limit (exit 2 with the reason), never a finding.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from typing import Any, Callable, Optional

import torch

from skiplint.runtime import adapter
from skiplint.runtime.errors import CannotRun

STEP_SPLIT = "stage plan"
#: Called with (step, busy) as the stage starts and ends its own work; busy=False is a wait on a peer.
StepNote = Callable[[str, bool], None]
STAGE_BUILD, STAGE_FORWARD, STAGE_BACKWARD = "stage build", "stage forward", "stage backward"
#: How a stage's part of the run ended early: an error in its own work (raised), or a wait on a
#: peer that failed because the peer went away (lost). What the backend cannot run never gets this
#: far: it is decided from the model before the stage processes start (`check_carried`).
RAISED, LOST = "raised", "lost"


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
            procs.append((subprocess.Popen([sys.executable, "-m", "skiplint.runtime.pipelining", tmp, str(rank)],
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
                    failures.append((result.get("kind", RAISED), rank, result.get("step", ""),
                                     result["error"]))
            elif proc.returncode != 0:
                with open(os.path.join(tmp, f"rank{rank}.log")) as handle:
                    tail = [line for line in handle.read().splitlines() if line.strip()][-1:]
                failures.append((RAISED, rank, "", f"exited {proc.returncode}: {' '.join(tail)}"))
        if failures:
            _kind, rank, _step, error = culprit(failures)
            out["status"], out["detail"] = "failed", f"rank {rank}: {error}"
            return
        compare(runner, reference, [torch.load(os.path.join(tmp, f"rank{rank}.pt")) for rank in range(world)], out)


#: Which stage's error is the culprit, first to last: an error in a stage's own work, then a wait
#: on a peer that went away (the others' echo of the first).
_BLAME = (RAISED, LOST)


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


def root_cause(error: BaseException) -> BaseException:
    """The error the schedule or the stage wrapped, innermost first."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def _noted(method: Callable[..., Any], step: str, note: StepNote) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        note(step, True)
        result = method(*args, **kwargs)
        note(step, False)
        return result
    return call


def run_stage(model: Any, sample: Any, weights: Any, balance: list[int], chunks: int, rank: int, world: int,
              device: Any, note: Optional[StepNote] = None) -> tuple[dict[str, Any], Any]:
    """This rank's stage of `model` cut at `balance` (skiplint.runtime.adapter), one ScheduleGPipe
    forward and backward: (gradients by the model's parameter names, output or None)."""
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    note = note or (lambda step, busy: None)
    note(STAGE_BUILD, True)
    module = adapter.Stage(model, adapter.plan(model, tuple(balance)), rank).to(device)
    stage = PipelineStage(module, rank, world, device)
    # The stage's own forward work, wherever the library calls it (its shape inference included).
    module.forward = _noted(module.forward, STAGE_FORWARD, note)  # type: ignore[method-assign]
    stage.backward_one_chunk = _noted(stage.backward_one_chunk, STAGE_BACKWARD, note)  # type: ignore[method-assign]
    # As many micro-batches as the library's pipe makes of this sample (fewer when it is small).
    schedule = ScheduleGPipe(stage, n_microbatches=len(sample.chunk(chunks)),
                             loss_fn=lambda output, w: (output.float() * w.to(output.device)).sum(),
                             scale_grads=False)
    note(STAGE_FORWARD, False)
    output = None
    if rank == 0 and world > 1:
        schedule.step(sample.to(device))
    elif rank == world - 1:
        args = (sample.to(device),) if world == 1 else ()
        output = schedule.step(*args, target=weights, losses=[])
    else:
        schedule.step()
    grads = {name: p.grad.detach().cpu() for name, p in module.named_parameters() if p.grad is not None}
    return grads, output.detach().cpu() if output is not None else None


def stage_process(folder: str, rank: int) -> int:
    """`python -m skiplint.runtime.pipelining DIR RANK`: one stage process of a single-machine run. It
    reads the job its parent left in DIR, and writes back an error line, its gradients and (last
    rank) the output."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    with open(os.path.join(folder, "job.json")) as handle:
        job = json.load(handle)
    result_path = os.path.join(folder, f"rank{rank}.json")
    where = {"step": STAGE_BUILD, "busy": True}

    def note(step: str, busy: bool) -> None:
        where["step"], where["busy"] = step, busy

    try:
        from skiplint.runtime import target

        shape = tuple(job["input_shape"]) if job["input_shape"] else None
        model = target.build(job["target"], job["sample"], shape).model
        data = torch.load(os.path.join(folder, "input.pt"))
        model.load_state_dict(data["state"])
        timeout = datetime.timedelta(seconds=job["timeout"])
        device = torch.device(job["devices"][rank])
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank,
                                world_size=job["world"], init_method=f"tcp://127.0.0.1:{job['port']}",
                                timeout=timeout)
        grads, output = run_stage(model, data["sample"], data["weights"][0], job["balance"], job["chunks"], rank,
                                  job["world"], device, note)
        torch.save({"grads": grads, "output": output}, os.path.join(folder, f"rank{rank}.pt"))
        dist.destroy_process_group()
        result: dict[str, Any] = {"error": None}
    except Exception as exc:  # reported by the parent: the culprit's own error, in one line
        cause = root_cause(exc)
        lines = str(cause).strip().splitlines()
        result = {"error": f"{type(cause).__name__}: {lines[0] if lines else ''}", "step": where["step"],
                  "kind": RAISED if where["busy"] else LOST}
    with open(result_path, "w") as handle:
        json.dump(result, handle)
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(stage_process(sys.argv[1], int(sys.argv[2])))
