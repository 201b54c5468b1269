"""The torchrun script `skiplint port -o SCRIPT` writes: the model built by the user's factory, this
rank's stages, the schedule with one optimizer per stage, GPipe checkpoints loaded by the stages'
keys, and the two places only the user can fill in (the loss, the data) marked `TODO(port)`."""

from __future__ import annotations

import os
from typing import Any

_TEMPLATE = '''\
"""{model} on torch.distributed.pipelining, written by `skiplint port {target}`.

{stages} stages {balance} over {ranks} processes, schedule {schedule}, {chunks} micro-batches per batch.
{origin}
Run it with:

    torchrun --nproc-per-node {ranks} {script} [--steps N] [--lr LR] [--load CHECKPOINT] [--save PREFIX]

Each stage holds the model's own modules under their own names and returns its output followed
by the skips still in flight across its boundary (skiplint.port, the code `skiplint port --check`
proved equal to the GPipe run). Every rank builds the whole model, then keeps its stages.
Fill in the two places marked TODO(port): the loss and the data.
"""

import argparse
import os

import torch
import torch.distributed as dist

from skiplint import port

#: The factory that builds the model, as `skiplint port` was given it.
TARGET = {target_path!r}
BALANCE = {balance_tuple!r}
CHUNKS = {chunks!r}
SCHEDULE = {schedule!r}


def loss_fn(output, target):
    # TODO(port): your loss. It runs on the last stage, once per micro-batch; the schedule
    # averages the micro-batches' gradients (scale_grads=True), as a mean loss over the batch does.
    return torch.nn.functional.mse_loss(output, target)


def batches(sample, output_shape, steps):
    # TODO(port): your data. Every rank runs this loop; the first stage uses the inputs and the
    # last stage the targets. This stand-in repeats the factory's sample with a fixed random target.
    if sample is None:
        raise SystemExit("TODO(port): the factory gives no sample: load your data in batches()")
    target = torch.randn(output_shape, generator=torch.Generator().manual_seed(0))
    for _ in range(steps):
        yield sample, target


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--load", help="a checkpoint: the GPipe/Pipe's state_dict() or the Sequential's")
    parser.add_argument("--save", help="save each stage's state_dict() to PREFIX.stageN.pt (the Sequential's keys)")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    if ranks != {ranks}:
        raise SystemExit(f"run this script with torchrun --nproc-per-node {ranks}, not {{ranks}}")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")

    torch.manual_seed(0)  # every rank builds the same model (overwritten by --load)
    built = port.build(TARGET)
    model, sample = built.model, built.sample
    output_shape = None
    if sample is not None:
        with torch.no_grad():
            output_shape = model(sample).shape
    checkpoint = torch.load(args.load, map_location="cpu") if args.load else None
    stages = port.rank_stages(model, BALANCE, rank, ranks, device)
    for stage in stages:
        if checkpoint is not None:
            stage.load_state_dict(port.stage_state(checkpoint, stage))
    optimizers = [torch.optim.SGD(stage.parameters(), lr=args.lr) for stage in stages]  # one per stage
    schedule = port.schedule(SCHEDULE, stages, len(BALANCE), CHUNKS, loss_fn, device)
    first = any(stage.index == 0 for stage in stages)
    last = any(stage.index == len(BALANCE) - 1 for stage in stages)

    for step, (inputs, targets) in enumerate(batches(sample, output_shape, args.steps)):
        for optimizer in optimizers:
            optimizer.zero_grad()
        losses = []
        inputs_here = (inputs.to(device),) if first else ()
        if last:
            schedule.step(*inputs_here, target=targets.to(device), losses=losses)
            print(f"step {{step}} loss {{torch.stack(losses).mean().item():.9g}}", flush=True)
        else:
            schedule.step(*inputs_here)
        for optimizer in optimizers:
            optimizer.step()

    if args.save:
        for stage in stages:
            torch.save(stage.state_dict(), f"{{args.save}}.stage{{stage.index}}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


def render(settings: Any, script_path: str) -> str:
    """The script's text for these settings; TARGET names the factory's file by its absolute path."""
    from skiplint.runtime.options import is_file_target, split_target

    where, name = split_target(settings.target)
    target_path = f"{os.path.abspath(where)}:{name}" if is_file_target(where) else settings.target
    origin = "".join(f"The {key} is {source}. " for key, source in settings.origin).strip()
    return _TEMPLATE.format(
        model=name, target=settings.target, stages=len(settings.balance), balance=list(settings.balance),
        ranks=settings.ranks, schedule=settings.schedule, chunks=settings.chunks, origin=origin,
        script=os.path.basename(script_path), target_path=target_path, balance_tuple=tuple(settings.balance))
