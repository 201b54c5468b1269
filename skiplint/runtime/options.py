"""The options of a run and their checks: every usage error is found here, before any of the
model's code runs (no torch)."""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any, Optional, Sequence

BACKENDS = ("torchgpipe", "fairscale", "pipelining")
CHECKPOINTS = ("never", "except_last", "always")
#: Seconds each step may take (`--timeout`).
DEFAULT_TIMEOUT = 300.0
#: Micro-batches when neither --chunks nor the user's pipe says (`--chunks`).
DEFAULT_CHUNKS = 2


@dataclass(frozen=True)
class Options:
    target: str
    sample: Optional[str] = None
    input_shape: Optional[tuple[int, ...]] = None
    backend: str = "auto"
    balance: Optional[tuple[int, ...]] = None
    #: None (and checkpoints None): not given; the run takes the user's pipe's, or the default.
    chunks: Optional[int] = None
    checkpoints: Optional[tuple[str, ...]] = None
    devices: Optional[tuple[str, ...]] = None
    #: Seconds each step may take before the run is stopped.
    timeout: float = DEFAULT_TIMEOUT

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Options":
        tuples = ("input_shape", "balance", "checkpoints", "devices")
        values: dict[str, Any] = {k: tuple(v) if k in tuples and v is not None else v for k, v in data.items()}
        return cls(**values)


def split_target(spec: str) -> tuple[str, str]:
    """(module or file, attribute) of `path/to/file.py:NAME` or `package.module:NAME`."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"target {spec!r} is not path/to/file.py:NAME or package.module:NAME")
    return where, name


def is_file_target(where: str) -> bool:
    return where.endswith(".py") or os.sep in where or "/" in where


def _ints(option: str, values: Optional[Sequence[int]]) -> Optional[tuple[int, ...]]:
    if values is None:
        return None
    items = tuple(values)
    shown = ",".join(map(str, items))
    if not items:
        raise ValueError(f"{option} is empty: give positive integers, e.g. {option} 3,3")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in items):
        raise ValueError(f"{option} {shown}: expected integers")
    bad = [v for v in items if v < 1]
    if bad:
        raise ValueError(f"{option} {shown}: every entry must be at least 1, not {bad[0]}")
    return items


def _target(option: str, spec: str) -> None:
    where, _ = split_target(spec)
    if is_file_target(where) and not os.path.isfile(where):
        raise ValueError(f"{option}: no such file: {where}" if option else f"no such file: {where}")


def check(target: str, *, sample: Optional[str] = None, input_shape: Optional[Sequence[int]] = None,
          backend: str = "auto", balance: Optional[Sequence[int]] = None, chunks: Optional[int] = None,
          checkpoint: Optional[Sequence[str] | str] = None, devices: Optional[Sequence[str]] = None,
          timeout: float = DEFAULT_TIMEOUT) -> Options:
    """The options of a run, or ValueError with the one line that says what is wrong."""
    _target("", target)
    if sample is not None:
        _target("--sample", sample)
    modes = None if checkpoint is None else (checkpoint,) if isinstance(checkpoint, str) else tuple(checkpoint)
    for mode in modes or ():
        if mode not in CHECKPOINTS:
            raise ValueError(f"--checkpoint must be one of {', '.join(CHECKPOINTS)}, not {mode!r}")
    if backend not in ("auto", *BACKENDS):
        raise ValueError(f"--backend must be auto or one of {', '.join(BACKENDS)}, not {backend!r}")
    if chunks is not None and (isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1):
        raise ValueError(f"--chunks {chunks}: the number of micro-batches must be at least 1")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (0 < timeout < math.inf):
        raise ValueError(f"--timeout {timeout:g}: the seconds each step may take must be more than 0"
                         if isinstance(timeout, (int, float)) else f"--timeout {timeout!r}: expected seconds")
    balance_t = _ints("--balance", balance)
    shape = _ints("--input-shape", input_shape)
    devices_t = tuple(d.strip() for d in devices) if devices is not None else None
    if devices_t is not None and not any(devices_t):
        raise ValueError(f"--devices {','.join(devices_t)!r} names no device: give device names separated by "
                         "commas, e.g. --devices cuda:0,cuda:1")
    if devices_t is not None and not all(devices_t):
        raise ValueError(f"--devices {','.join(devices_t)}: a device name is empty")
    if devices_t is not None and balance_t is not None and 1 < len(devices_t) < len(balance_t):
        raise ValueError(f"--balance {','.join(map(str, balance_t))} has {len(balance_t)} partitions but "
                         f"--devices {','.join(devices_t)} names {len(devices_t)}: give one device for every "
                         "partition, or a single device for all of them")
    return Options(target, sample, shape, backend, balance_t, chunks, modes, devices_t, float(timeout))
