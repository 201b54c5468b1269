"""One stage of the `pipelining` backend's run: `python -m skiplint.runtime.stage DIR RANK`.

Rebuilds the model from the target, loads the parent's weights, and runs its stage of a
torch.distributed.pipelining ScheduleGPipe; writes gradients (and the output on the last rank)."""

from __future__ import annotations

import datetime
import json
import os
import sys
import warnings


def main(folder: str, rank: int, torchrun: bool = False) -> int:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    with open(os.path.join(folder, "job.json")) as handle:
        job = json.load(handle)
    result_path = os.path.join(folder, f"rank{rank}.json")
    try:
        from torch.distributed.pipelining import ScheduleGPipe, SplitPoint, pipeline

        from skiplint.runtime import target

        shape = tuple(job["input_shape"]) if job["input_shape"] else None
        model = target.build(job["target"], job["sample"], shape).model
        data = torch.load(os.path.join(folder, "input.pt"))
        model.load_state_dict(data["state"])
        timeout = datetime.timedelta(seconds=job["timeout"])
        if torchrun:
            # torchrun (or any launcher) gives the rank and the rendezvous in the environment.
            local = int(os.environ.get("LOCAL_RANK", "0"))
            device = torch.device("cuda", local) if torch.cuda.is_available() else torch.device("cpu")
            if device.type == "cuda":
                torch.cuda.set_device(device)
            job["world"] = int(os.environ["WORLD_SIZE"])
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method="env://",
                                    timeout=timeout)
        else:
            device = torch.device(job["devices"][rank])
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank,
                                    world_size=job["world"], init_method=f"tcp://127.0.0.1:{job['port']}",
                                    timeout=timeout)
        sample, weights = data["sample"], data["weights"][0]
        chunks = job["chunks"]
        micro = sample.tensor_split(chunks)[0]
        pipe = pipeline(model, mb_args=(micro,), split_spec={name: SplitPoint.BEGINNING for name in job["split"]})
        stage = pipe.build_stage(rank, device)
        schedule = ScheduleGPipe(stage, n_microbatches=chunks,
                                 loss_fn=lambda output, w: (output.float() * w.to(output.device)).sum(),
                                 scale_grads=False)
        output = None
        if rank == 0 and job["world"] > 1:
            schedule.step(sample.to(device))
        elif rank == job["world"] - 1:
            args = (sample.to(device),) if job["world"] == 1 else ()
            output = schedule.step(*args, target=weights, losses=[])
        else:
            schedule.step()
        grads = {name: p.grad.detach().cpu() for name, p in stage.submod.named_parameters() if p.grad is not None}
        torch.save({"grads": grads, "output": output.detach().cpu() if output is not None else None},
                   os.path.join(folder, f"rank{rank}.pt"))
        dist.destroy_process_group()
        error = None
    except Exception as exc:  # reported by the parent as the step's one line
        cause = exc.__cause__ or exc
        lines = str(cause).strip().splitlines()
        error = f"{type(cause).__name__}: {lines[0] if lines else ''}"
    with open(result_path, "w") as handle:
        json.dump({"error": error}, handle)
    return 0 if error is None else 1


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == "--torchrun":
        sys.exit(main(sys.argv[1], int(os.environ["RANK"]), torchrun=True))
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
