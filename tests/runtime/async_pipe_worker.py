"""One rank of fairscale's AsyncPipe on CPU (gloo and RPC through files), for
tests/runtime/test_oracle_conditions.py: `python async_pipe_worker.py CASE RANK WORLD DIR` writes what
its step raised, or "ok", to DIR/out.RANK."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any


def model(case: str) -> tuple[Any, list[int]]:
    from torch import nn
    from fairscale.nn.pipe import LazyModule
    from fairscale.nn.pipe.skip import pop, skippable, stash

    @skippable(stash=["s"])
    class Stash(nn.Module):
        def forward(self, x: Any) -> Any:
            yield stash("s", x * 2)
            return x

    @skippable(pop=["s"])
    class Pop(nn.Module):
        def forward(self, x: Any) -> Any:
            s = yield pop("s")
            return x + s

    if case == "lazy":
        return [LazyModule(lambda: Stash()), LazyModule(lambda: nn.Linear(4, 4)), LazyModule(lambda: Pop())], [2, 1]
    if case == "within":
        return nn.Sequential(nn.Linear(4, 4), Stash(), Pop()), [1, 2]
    if case == "across":
        return nn.Sequential(Stash(), nn.Linear(4, 4), Pop()), [2, 1]
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)), [2, 1]


def main(case: str, rank: int, world: int, directory: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed import rpc

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    step = "init"
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world, init_method=f"file://{directory}/init")
        rpc.init_rpc(f"w{rank}", rank=rank, world_size=world,
                     rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method=f"file://{directory}/rpc"))
        from fairscale.nn.model_parallel import initialize_model_parallel
        from fairscale.nn.pipe import AsyncPipe

        initialize_model_parallel(1, world)
        module, balance = model(case)
        step = "construct"
        pipe = AsyncPipe(module, balance, worker_map={r: f"w{r}" for r in range(world)}, chunks=2)
        step = "forward"
        output = pipe(torch.randn(4, 4, requires_grad=True))
        step = "backward"
        if rank == world - 1:
            output.sum().backward()
        else:
            pipe.back_helper(output)
        result = "ok"
    except Exception as error:
        lines = str(error).splitlines()
        result = f"{step}: {type(error).__name__}: {lines[0] if lines else ''}"
    with open(f"{directory}/out.{rank}", "w", encoding="utf-8") as handle:
        handle.write(result)
    os._exit(0)  # the other rank may be gone: no graceful shutdown to wait for


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
