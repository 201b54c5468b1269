"""One pipeline stage of the `pipelining` backend.

`run_stage` builds this rank's stage of a torch.distributed.pipelining ScheduleGPipe and runs one
forward and backward; the process group is already set up by the caller. `python -m
skiplint.runtime.stage DIR RANK` is the stage process a single-machine verify starts: it reads the
job its parent left in DIR, and writes back an error line, its gradients and (last rank) the output.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import warnings
from typing import Any, Callable, Optional

#: Called with (step, busy) as the stage starts and ends its own work; busy=False is a wait on a peer.
StepNote = Callable[[str, bool], None]

STAGE_BUILD = "stage build"
STAGE_FORWARD = "stage forward"
STAGE_BACKWARD = "stage backward"


#: How a stage's part of the run ended early: an error in its own work (raised), or a wait on a
#: peer that failed because the peer went away (lost). What the backend cannot run never gets this
#: far: it is decided from the model before the stage processes start (skiplint.runtime.pipelining).
RAISED, LOST = "raised", "lost"


def root_cause(error: BaseException) -> BaseException:
    """The error the schedule or the stage wrapped, innermost first."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def ending(busy: bool) -> str:
    """RAISED or LOST for a stage's error; `busy`: it came from the stage's own work."""
    return RAISED if busy else LOST


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

    from skiplint.runtime import adapter

    def noop(step: str, busy: bool) -> None:
        return None

    note = note or noop
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


def main(folder: str, rank: int) -> int:
    import torch
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
                  "kind": ending(bool(where["busy"]))}
    with open(result_path, "w") as handle:
        json.dump(result, handle)
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
