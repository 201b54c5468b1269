"""What a model factory returned, read as one typed value: the Sequential, its sample, and the
settings of the pipe the user built.

A factory may return an `nn.Sequential`, a `(model, sample)` pair, or a pipe: torchgpipe's
`GPipe`, fairscale's `Pipe`, or `torch.distributed.pipeline.sync.Pipe` (torch before 2.4). A
pipe keeps its layers in `partitions`; the Sequential is rebuilt from them under the children's
own names. `failed_pipe` reads the same settings back from a pipe whose construction raised
(on a machine without the devices it names, for instance), from the constructor's frame.

Pipes are recognised by the module and name of their class, so that no pipe library is imported
here; torch itself is imported only by the functions that need it.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Optional

#: The pipe classes a factory may return: (the library's top-level package, the class name).
PIPE_CLASSES = (("torchgpipe", "GPipe"), ("fairscale", "Pipe"), ("torch", "Pipe"))


class NotAModel(ValueError):
    """The object is neither a Sequential, a pipe, nor a (model, sample) pair; str() says what it is."""


@dataclass(frozen=True)
class UserPipe:
    """A factory's model, and the pipe it was wrapped in (all None when it was a plain Sequential)."""

    #: The layers, in order, under the children's own names.
    model: Any
    #: The sample of a `(model, sample)` pair, else None.
    sample: Any = None
    #: The pipe's library ("torchgpipe", "fairscale" or "torch"); None when no pipe was given.
    library: Optional[str] = None
    #: Layers per partition.
    balance: Optional[tuple[int, ...]] = None
    #: Micro-batches per mini-batch.
    chunks: Optional[int] = None
    #: "always", "except_last" or "never".
    checkpoint: Optional[str] = None
    #: The device of each partition, as torch names it ("cpu", "cuda:1").
    devices: Optional[tuple[str, ...]] = None

    @property
    def is_pipe(self) -> bool:
        return self.library is not None


def pipe_library(obj: Any) -> Optional[str]:
    """The library of a pipe object (by its class or a base class); None when it is no pipe."""
    for cls in type(obj).__mro__:
        root = str(getattr(cls, "__module__", "")).split(".")[0]
        if (root, cls.__name__) in PIPE_CLASSES:
            return root
    return None


def _device_names(devices: Any) -> tuple[str, ...]:
    import torch

    return tuple(str(torch.device(d)) for d in devices)


def _of_pipe(pipe: Any, library: str, sample: Any) -> UserPipe:
    """The pipe's layers and settings, from its public attributes."""
    from torch import nn

    partitions = list(pipe.partitions)
    layers = [(name, layer) for partition in partitions for name, layer in partition.named_children()]
    balance = getattr(pipe, "balance", None)
    if balance is None:  # torch's Pipe: the partitions are its balance
        balance = [len(partition) for partition in partitions]
    devices = getattr(pipe, "devices", None)
    return UserPipe(nn.Sequential(OrderedDict(layers)), sample, library, tuple(int(n) for n in balance),
                    int(pipe.chunks), str(pipe.checkpoint),
                    _device_names(devices) if devices is not None else None)


def unpack(obj: Any) -> UserPipe:
    """The value a factory returned, typed; NotAModel when it is none of the accepted shapes."""
    from torch import nn

    sample = None
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], nn.Module):
        obj, sample = obj
    library = pipe_library(obj)
    if library is not None:
        return _of_pipe(obj, library, sample)
    if isinstance(obj, nn.Sequential):
        return UserPipe(obj, sample)
    raise NotAModel(f"{type(obj).__name__}, not an nn.Sequential, a pipe (GPipe, Pipe) "
                    "or a (model, sample) pair")


def failed_pipe(error: BaseException) -> Optional[UserPipe]:
    """The pipe whose constructor raised `error`, read from the constructor's frame: its Sequential
    and the settings it was given (devices as the constructor resolved them, which may be fewer
    than its partitions); None when the error was not raised inside a pipe's constructor or the
    frame holds no Sequential."""
    from torch import nn

    tb = error.__traceback__
    found: Optional[UserPipe] = None
    while tb is not None:
        frame = tb.tb_frame
        local = frame.f_locals
        if frame.f_code.co_name == "__init__" and found is None:
            library = pipe_library(local.get("self"))
            module = local.get("module")
            if library is not None and isinstance(module, nn.Sequential):
                balance = local.get("balance")
                devices = local.get("devices")
                found = UserPipe(
                    module, None, library,
                    tuple(int(n) for n in balance) if isinstance(balance, (list, tuple)) else None,
                    int(local["chunks"]) if isinstance(local.get("chunks"), int) else None,
                    str(local["checkpoint"]) if isinstance(local.get("checkpoint"), str) else None,
                    _device_names(devices) if isinstance(devices, (list, tuple)) else None)
        elif found is not None and frame.f_code.co_name == "split_module" and found.balance is None:
            balance = local.get("balance")  # the constructor's balance was an iterator: read it listed
            if isinstance(balance, list):
                found = replace(found, balance=tuple(int(n) for n in balance))
        tb = tb.tb_next
    return found
