"""The cost of carrying skips through the stages: one ScheduleGPipe step of a U-Net over three
processes (CPU, gloo), with the stage adapter's stages (skiplint.port: each skip travels stage to
stage) against torch.distributed.pipelining's traced front end (`pipeline()`, which sends a skip
straight from the stage that stashes it to the one that pops it; ScheduleGPipe only).

    torchrun --standalone --nproc-per-node 3 benchmarks/port_carry.py carry|traced [STEPS]

The last rank prints the median step time, and rank 0 the bytes each boundary carries per
micro-batch (the adapter's plan). Run the two modes in turn, several times, and compare medians.
"""

import os
import runpy
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torchgpipe.skip import Namespace

from skiplint import port
from skiplint.runtime import adapter

BALANCE = (2, 3, 2)
CHUNKS = 4


# The bundled U-Net's own blocks (fixtures/runtime/unet.py), arranged here with one more layer.
_FIXTURE = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fixtures", "runtime",
                                       "unet.py"))
Down, Up = _FIXTURE["Down"], _FIXTURE["Up"]


def unet():
    outer, inner = Namespace(), Namespace()
    return nn.Sequential(Down(3, 16).isolate(outer), Down(16, 32).isolate(inner), nn.Conv2d(32, 32, 3, padding=1),
                         nn.ReLU(), Up(32, 32, 16).isolate(inner), Up(16, 16, 8).isolate(outer),
                         nn.Conv2d(8, 3, 1))


def main():
    mode = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, ranks = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = unet()
    sample = torch.randn(16, 3, 32, 32)
    target = torch.randn(16, 3, 32, 32)
    device = torch.device("cpu")

    def loss_fn(output, t):
        return ((output - t) ** 2).mean()

    if mode == "carry":
        schedule = port.schedule("gpipe", port.rank_stages(model, BALANCE, rank, ranks, device), len(BALANCE),
                                 CHUNKS, loss_fn, device)
    else:
        from torch.distributed.pipelining import ScheduleGPipe, SplitPoint, pipeline

        names = [name for name, _ in model.named_children()]
        starts = [names[sum(BALANCE[:i])] for i in range(1, len(BALANCE))]
        pipe = pipeline(model, mb_args=(sample.chunk(CHUNKS)[0],),
                        split_spec={name: SplitPoint.BEGINNING for name in starts})
        schedule = ScheduleGPipe(pipe.build_stage(rank, device), n_microbatches=CHUNKS, loss_fn=loss_fn)
    if rank == 0:
        plan = adapter.plan(model, BALANCE)
        with torch.no_grad():
            sent = list(adapter.run_in_sequence(adapter.stages(model, plan), sample.chunk(CHUNKS)[0]))
        for index, value in sent[:-1]:
            values = value if isinstance(value, tuple) else (value,)
            sizes = [v.numel() * v.element_size() for v in values]
            print(f"boundary {index}->{index + 1}: output {sizes[0]} bytes, {len(sizes) - 1} skip(s) "
                  f"{sum(sizes[1:])} bytes per micro-batch", flush=True)
    times = []
    for _ in range(steps + 1):
        dist.barrier()
        start = time.perf_counter()
        if rank == 0:
            schedule.step(sample)
        elif rank == ranks - 1:
            schedule.step(target=target, losses=[])
        else:
            schedule.step()
        dist.barrier()
        times.append(time.perf_counter() - start)
    if rank == ranks - 1:
        print(f"{mode}: median step {statistics.median(times[1:]) * 1000:.1f} ms over {steps} steps "
              f"(min {min(times[1:]) * 1000:.1f}, max {max(times[1:]) * 1000:.1f})", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
