"""The outcome of one forward and backward (the plain reference, a Pipe run, a pipelining run):
what every backend compares. A module of its own so that the backends need not import each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


@dataclass
class RunResult:
    #: The model's output (a tensor or a tuple of tensors).
    output: Any
    #: Parameter name (and "<input>" for the sample) -> gradient, on the CPU.
    grads: dict[str, "torch.Tensor"]
