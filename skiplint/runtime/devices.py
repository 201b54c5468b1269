"""The devices a run can use and how many partitions it makes when no option says."""

from __future__ import annotations

import torch

from skiplint.runtime.errors import CannotRun


def devices_here() -> list[str]:
    """The devices this torch can run a model on: the CPU, then each device of the accelerator."""
    found = ["cpu"]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        kind = accelerator.current_accelerator().type
        found.extend(f"{kind}:{i}" for i in range(accelerator.device_count()))
    elif torch.cuda.is_available():
        found.extend(f"cuda:{i}" for i in range(torch.cuda.device_count()))
    return found

def check_devices(names: tuple[str, ...]) -> None:
    """--devices names only devices that exist here, before any of the model's code runs:
    CannotRun (a usage error) with the one line that names the devices there are."""
    shown = ",".join(names)
    here = devices_here()
    listed = f"the devices here are: {', '.join(here)}"
    for name in names:
        try:
            device = torch.device(name)
        except (RuntimeError, ValueError):
            raise CannotRun(f"--devices {shown}: {name!r} is not a device name; {listed}") from None
        if device.type == "cpu":
            continue
        if device.type == "meta":
            raise CannotRun(f"--devices {shown}: a meta tensor holds no data, so no model runs on '{name}'; "
                            f"{listed}")
        full = f"{device.type}:{device.index if device.index is not None else 0}"
        if full not in here:
            raise CannotRun(f"--devices {shown}: there is no {full} here; {listed}")

def default_partitions() -> int:
    """How many partitions a run without --balance or --devices splits the model into: one per
    GPU, and never fewer than two, so that skips cross a partition boundary (on one GPU or on the
    CPU both partitions share the device)."""
    return max(int(torch.cuda.device_count()), 2)

def _even_balance(layers: int, partitions: int) -> tuple[int, ...]:
    partitions = max(1, min(partitions, layers))
    base, extra = divmod(layers, partitions)
    return tuple(base + (1 if i < extra else 0) for i in range(partitions))

def _here(name: str) -> bool:
    """Whether a device of this name exists here."""
    device = torch.device(name)
    if device.type == "cpu":
        return True
    return f"{device.type}:{device.index if device.index is not None else 0}" in devices_here()

def _default_devices(partitions: int) -> list[torch.device]:
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        return [torch.device("cuda", i % count) for i in range(partitions)]
    return [torch.device("cpu")] * partitions
