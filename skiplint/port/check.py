"""`skiplint port ... --check`: the ported pipeline under torchrun (CPU, gloo) against the model
under GPipe, from the same weights and input, in float32 and in float64.

The parent (`run`) runs the reference in this process, GPipe (or fairscale's Pipe) over CPU
partitions with the port's balance and chunks, and starts `torchrun --standalone
--nproc-per-node R -m skiplint.port.check DIR`. Each rank (`worker`) builds the model from the
same factory, loads the parent's weights, takes its stages with the functions a ported script
uses (skiplint.port.rank_stages, skiplint.port.schedule), runs one step of the schedule with the
loss sum(output * W) (summed over micro-batches, so no scaling), and leaves its gradients (and
the last stage's output and loss) in DIR. Every tensor is compared by the user's names.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Optional

from skiplint.port import CannotPort, user_key
from skiplint.runtime.errors import one_line

#: (rtol, atol) per dtype: float32 as the issue sets it; float64 leaves room for the order of sums only.
TOLERANCES = {"float32": (1e-5, 1e-6), "float64": (1e-9, 1e-12)}
DTYPES = tuple(TOLERANCES)
#: Lines of a failed rank's output that the one-line reason keeps.
TAIL = 1


def _loss(output: Any, weights: Any) -> Any:
    return (output * weights).sum()


def reference(settings: Any, model: Any, sample: Any, weights: Any) -> dict[str, Any]:
    """GPipe's (or fairscale Pipe's) output, loss and gradients by the user's names, on the CPU."""
    import torch

    from skiplint.runtime import backends

    lib = backends.load(settings.library)
    pipe = lib.Pipe(model, balance=list(settings.balance), devices=["cpu"] * len(settings.balance),
                    chunks=settings.chunks, checkpoint=settings.checkpoint or "except_last")
    output = pipe(sample)
    if not isinstance(output, torch.Tensor):
        raise CannotPort(f"--check compares a model whose output is one tensor, not a {type(output).__name__}")
    loss = _loss(output, weights)
    loss.backward()
    grads = {user_key(name): p.grad.detach().clone() for name, p in pipe.named_parameters() if p.grad is not None}
    return {"output": output.detach(), "loss": loss.detach(), "grads": grads}


def compare(dtype: str, ported: dict[str, Any], expected: dict[str, Any]) -> Optional[str]:
    """The first of output, loss and each gradient (in the model's order) that differs, in one line
    (where, how far, both values), or None."""
    import torch

    rtol, atol = TOLERANCES[dtype]
    pairs = [("the output", ported.get("output"), expected["output"]),
             ("the loss", ported.get("loss"), expected["loss"])]
    pairs += [(f"the gradient of '{name}'", ported["grads"].get(name), grad)
              for name, grad in expected["grads"].items()]
    pairs += [(f"the gradient of '{name}'", grad, None) for name, grad in ported["grads"].items()
              if name not in expected["grads"]]
    for what, mine, theirs in pairs:
        if mine is None or theirs is None:
            what += f" (missing from {'the port' if mine is None else 'GPipe'})"
        elif mine.shape != theirs.shape:
            what += f" (shape {tuple(mine.shape)}, GPipe {tuple(theirs.shape)})"
        elif torch.allclose(mine, theirs, rtol=rtol, atol=atol, equal_nan=True):
            continue
        else:
            diff = (mine - theirs).abs()
            diff = torch.where(torch.isnan(diff), torch.full_like(diff, float("inf")), diff)
            flat = int(torch.argmax(diff))
            index = [int(i) for i in torch.unravel_index(torch.tensor(flat), mine.shape)] if mine.dim() else []
            where = f" at {index}" if index else ""
            return (f"{what} differs in {dtype}: max |diff| {float(diff.max()):.3g}{where} "
                    f"(ported {float(mine.reshape(-1)[flat]):.9g}, GPipe {float(theirs.reshape(-1)[flat]):.9g})")
        return f"{what} differs in {dtype}: max |diff| inf (ported nan, GPipe nan)"
    return None


def run(settings: Any, built: Any, timeout: float) -> int:
    """The check: 0 equal, 1 different (the line says which tensor and how far), 2 could not run."""
    import torch

    if built.sample is None:
        raise CannotPort("--check needs a sample input: return (model, sample) from the factory")
    sample = built.sample
    if not isinstance(sample, torch.Tensor):
        raise CannotPort(f"--check needs a tensor sample, not a {type(sample).__name__}")
    model = built.model.cpu()
    try:
        with torch.no_grad():
            shape = copy.deepcopy(model)(sample).shape
    except Exception as error:
        raise CannotPort(f"the model fails on its sample: {one_line(error)}") from error
    weights = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    if sample.dim() == 0 or sample.shape[0] % settings.chunks:
        raise CannotPort(f"--check splits the sample into {settings.chunks} equal micro-batches: its batch of "
                         f"{sample.shape[0] if sample.dim() else 0} does not divide into them")
    with tempfile.TemporaryDirectory(prefix="skiplint-port-") as folder:
        torch.save({"state": model.state_dict(), "sample": sample, "weights": weights},
                   os.path.join(folder, "input.pt"))
        job = {"target": settings.target, "balance": list(settings.balance), "chunks": settings.chunks,
               "schedule": settings.schedule}
        with open(os.path.join(folder, "job.json"), "w") as handle:
            json.dump(job, handle)
        expected = {}
        for dtype in DTYPES:
            kind = getattr(torch, dtype)
            twin = copy.deepcopy(model).to(kind)
            try:
                expected[dtype] = reference(settings, twin, sample.to(kind) if sample.is_floating_point() else sample,
                                            weights.to(kind))
            except CannotPort:
                raise
            except Exception as error:
                raise CannotPort(f"the model fails under {settings.library}'s pipe, so there is nothing to compare "
                                 f"the port with: {one_line(error)}") from error
        problem = _launch(settings, folder, timeout)
        if problem is not None:
            print(f"skiplint port: --check could not run the port: {problem}", file=sys.stderr)
            return 2
        ported: dict[str, dict[str, Any]] = {dtype: {"grads": {}} for dtype in DTYPES}
        for rank in range(settings.ranks):
            part = torch.load(os.path.join(folder, f"rank{rank}.pt"))
            for dtype in DTYPES:
                ported[dtype]["grads"].update(part[dtype]["grads"])
                for key in ("output", "loss"):
                    if part[dtype].get(key) is not None:
                        ported[dtype][key] = part[dtype][key]
    for dtype in DTYPES:
        difference = compare(dtype, ported[dtype], expected[dtype])
        if difference is not None:
            print(f"skiplint port: --check: {difference}")
            return 1
    count = len(expected["float32"]["grads"])
    print(f"skiplint port: --check: the {settings.schedule} port over {settings.ranks} processes equals "
          f"{settings.library} ({list(settings.balance)}, {settings.chunks} micro-batches): output, loss and "
          f"{count} gradients, in float32 (rtol {TOLERANCES['float32'][0]:g}, atol {TOLERANCES['float32'][1]:g}) "
          f"and float64")
    return 0


def _launch(settings: Any, folder: str, timeout: float) -> Optional[str]:
    """torchrun over the ranks; None when every rank left its result, else why not (one line)."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
               str(settings.ranks), "-m", "skiplint.port.check", folder]
    with open(os.path.join(folder, "torchrun.log"), "w") as log:
        try:
            proc = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"torchrun did not end within {timeout:g}s"
    for rank in range(settings.ranks):
        error_path = os.path.join(folder, f"rank{rank}.json")
        if os.path.exists(error_path):
            with open(error_path) as handle:
                return f"rank {rank} raised {json.load(handle)['error']}"
    if proc.returncode != 0 or not all(os.path.exists(os.path.join(folder, f"rank{r}.pt"))
                                       for r in range(settings.ranks)):
        with open(os.path.join(folder, "torchrun.log")) as handle:
            tail = [line.strip() for line in handle.read().splitlines() if line.strip()][-TAIL:]
        return f"torchrun exited {proc.returncode}: {' '.join(tail)}"
    return None


def worker(folder: str) -> int:
    """One rank of the check (under torchrun): both dtypes, one schedule step each."""
    import torch
    import torch.distributed as dist

    from skiplint import port

    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    try:
        with open(os.path.join(folder, "job.json")) as handle:
            job = json.load(handle)
        data = torch.load(os.path.join(folder, "input.pt"))
        dist.init_process_group("gloo")
        ranks = dist.get_world_size()
        model = port.build(job["target"]).model.cpu()
        balance = tuple(job["balance"])
        device = torch.device("cpu")
        result: dict[str, Any] = {}
        for dtype in DTYPES:
            kind = getattr(torch, dtype)
            twin = copy.deepcopy(model).to(kind)
            twin.load_state_dict(data["state"])
            stages = port.rank_stages(twin, balance, rank, ranks, device)
            schedule = port.schedule(job["schedule"], stages, len(balance), job["chunks"], _loss, device,
                                     scale_grads=False)
            indices = [stage.index for stage in stages]
            sample = data["sample"].to(kind) if data["sample"].is_floating_point() else data["sample"]
            args = (sample,) if 0 in indices else ()
            losses: list[Any] = []
            if len(balance) - 1 in indices:
                output = schedule.step(*args, target=data["weights"].to(kind), losses=losses)
            else:
                output = None
                schedule.step(*args)
            grads = {name: p.grad.detach().clone() for stage in stages for name, p in stage.named_parameters()
                     if p.grad is not None}
            result[dtype] = {"grads": grads,
                             "output": output.detach() if output is not None else None,
                             "loss": torch.stack([loss.detach() for loss in losses]).sum() if losses else None}
        torch.save(result, os.path.join(folder, f"rank{rank}.pt"))
        dist.destroy_process_group()
        return 0
    except Exception as error:  # the parent reports it: the rank's own error, in one line
        with open(os.path.join(folder, f"rank{rank}.json"), "w") as handle:
            json.dump({"error": one_line(error)}, handle)
        return 1


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1]))
