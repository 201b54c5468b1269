"""`skiplint port`: a skippable model on torch.distributed.pipelining, proven equal to its GPipe run.

This package needs torch (the runtime extra). Its functions are what a script written by
`skiplint port -o SCRIPT` calls, so the script and `--check` run the same code:

- `build(TARGET)`: the factory's model, sample and pipe settings (a Sequential, a `(model, sample)`
  pair, or the pipe itself, unwrapped by skiplint.runtime.userpipe);
- `rank_stages(model, balance, rank, ranks, device)`: this rank's stages (skiplint.runtime.adapter:
  the user's own modules, each stage returning its output and the skips in flight);
- `schedule(kind, stages, stage_count, chunks, loss_fn, device)`: the torch.distributed.pipelining
  schedule over them (gpipe, 1f1b, interleaved);
- `stage_state(state, stage)`: a GPipe/Pipe or Sequential state dict, keyed for one stage.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

#: The schedules `--schedule` names, with torch.distributed.pipelining's class for each.
SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B", "interleaved": "ScheduleInterleaved1F1B"}


class CannotPort(Exception):
    """The model cannot be ported as asked (exit status 2); str() says why in one line."""


def build(target: str) -> Any:
    """What `FILE:FACTORY` (or `module:NAME`) gives, as skiplint.runtime.userpipe.UserPipe: the
    Sequential (`.model`), the sample of a (model, sample) pair (`.sample`), and the settings of
    the pipe when the factory returned one (`.balance`, `.chunks`, `.checkpoint`, `.library`)."""
    from skiplint.runtime import target as targets, userpipe
    from skiplint.runtime.errors import CannotRun, whole

    try:
        _module, origin = targets.load(target)
    except CannotRun as error:
        raise CannotPort(str(error)) from error
    obj = origin
    import torch
    from torch import nn

    if callable(origin) and not isinstance(origin, nn.Module):
        torch.manual_seed(0)
        try:
            with targets.as_script(targets.split_target(target)[0]):
                obj = origin()
        except Exception as error:
            failed = userpipe.failed_pipe(error)
            if failed is None:
                raise CannotPort(f"{target} raised {whole(error)}") from error
            return failed
    try:
        return userpipe.unpack(obj)
    except userpipe.NotAModel as error:
        raise CannotPort(f"{target} gave {error}") from None


def rank_stages(model: Any, balance: tuple[int, ...], rank: int, ranks: int, device: Any) -> list[Any]:
    """This rank's stages of `model` at `balance`, on `device`: rank, rank + ranks, ... (the
    interleaved schedules' layout; one stage per rank otherwise)."""
    from skiplint.runtime import adapter

    plan = adapter.plan(model, tuple(balance))
    return [stage.to(device) for stage in adapter.stages(model, plan, list(range(rank, plan.stages, ranks)))]


def schedule(kind: str, stages: list[Any], stage_count: int, chunks: int, loss_fn: Callable[..., Any],
             device: Any, scale_grads: bool = True, group: Optional[Any] = None) -> Any:
    """The torch.distributed.pipelining schedule `kind` over this rank's stages."""
    from torch.distributed import pipelining

    wrapped = [pipelining.PipelineStage(stage, stage.index, stage_count, device, group=group) for stage in stages]
    cls = getattr(pipelining, SCHEDULES[kind])
    if kind == "interleaved":
        return cls(wrapped, n_microbatches=chunks, loss_fn=loss_fn, scale_grads=scale_grads)
    return cls(wrapped[0], n_microbatches=chunks, loss_fn=loss_fn, scale_grads=scale_grads)


def user_key(key: str) -> str:
    """A GPipe/Pipe state-dict or parameter key (`partitions.J.CHILD.rest`) as the Sequential's."""
    parts = key.split(".")
    if len(parts) > 2 and parts[0] == "partitions" and parts[1].isdigit():
        return ".".join(parts[2:])
    return key


def stage_state(state: dict[str, Any], stage: Any) -> dict[str, Any]:
    """The entries of a checkpoint (a GPipe or Pipe's state dict, or the Sequential's) that belong
    to `stage`, under the stage's keys (which are the Sequential's own)."""
    mine = set(stage.state_dict())
    return {user_key(key): value for key, value in state.items() if user_key(key) in mine}
