"""What a run knows as its steps go (the model, the library, the settings, the failures met and
what was reached), how each step is timed and shown, and how a failure is read into observations."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterator, Optional

import torch
from torch import nn

from skiplint.runtime import backends, join as joining, messages, static as static_pass, target
from skiplint.runtime.errors import CannotRun, Stopped, is_stop, one_line, stop_cause, whole
from skiplint.runtime.options import CHECKPOINTS, DEFAULT_CHUNKS, Options
from skiplint.runtime.report import Observation, Report, Step

#: Pipe against plain Sequential: outputs, then every gradient (parameters and the input).
TOLERANCES = {"output rtol": 1e-5, "output atol": 1e-6, "gradient rtol": 1e-4, "gradient atol": 1e-5}


@dataclass
class RunResult:
    """One forward and backward (the plain reference, a Pipe run, a pipelining run): what every
    backend compares."""

    #: The model's output (a tensor or a tuple of tensors).
    output: Any
    #: Parameter name (and "<input>" for the sample) -> gradient, on the CPU.
    grads: dict[str, torch.Tensor]


class Steps:
    """Times each step, records it and shows it as soon as it ends; `begin` hears of each start."""

    def __init__(self, report: Report, progress: Optional[Callable[[Step], None]],
                 begin: Optional[Callable[[str], None]] = None) -> None:
        self.report = report
        self.progress = progress
        self.begin = begin
        #: The step running now, or the last one that ran.
        self.current = ""

    def add(self, name: str, status: str, seconds: float, detail: str = "") -> None:
        step = Step(name, status, round(seconds, 4), detail)  # type: ignore[arg-type]
        self.report.steps.append(step)
        if self.progress is not None:
            self.progress(step)

    @contextmanager
    def timed(self, name: str) -> Iterator[dict[str, str]]:
        """Runs a step; the body sets out['status'] / out['detail']; CannotRun ends the run, and so
        does a sys.exit or KeyboardInterrupt of the model's code, named with the step."""
        out = {"status": "ok", "detail": ""}
        self.current = name
        if self.begin is not None:
            self.begin(name)
        start = time.perf_counter()
        try:
            yield out
        except Stopped as error:
            self.add(name, "error", time.perf_counter() - start, str(error))
            raise Stopped(f"{error} during {name}") from error.__cause__
        except CannotRun as error:
            self.add(name, "error", time.perf_counter() - start, str(error))
            raise
        except torch.cuda.OutOfMemoryError:
            self.add(name, "error", time.perf_counter() - start, "CUDA out of memory")
            raise CannotRun(f"CUDA out of memory in step '{name}': use more --chunks, a smaller sample "
                            "or more --devices") from None
        except BaseException as error:
            if not is_stop(error):
                raise
            reason = f"the model's code {stop_cause(error)} during {name}"
            self.add(name, "error", time.perf_counter() - start, reason)
            raise CannotRun(reason) from error
        self.add(name, out["status"], time.perf_counter() - start, out["detail"])


def _raised_at(error: BaseException) -> str:
    """Where an exception was raised: the innermost frame, as `package/module.py:LINE`."""
    path, line = messages.innermost(error)
    if not path:
        return ""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
            break
    else:
        path = target.shown_path(path)
    return f"{path}:{line}"


def _failure_text(error: BaseException, every_line: bool = False) -> str:
    """A failure: its type and message (its first line, or every line), and where it was raised
    when it says nothing."""
    text = whole(error) if every_line else one_line(error)
    if text == type(error).__name__:
        where = _raised_at(error)
        if where:
            text += f" (raised at {where})"
    return text


class RunState:
    """The state the steps share; each step is a method of one of the step classes
    (skiplint.runtime.building, .running, .judging) that `Runner` puts together."""

    #: The model and its sample, once built (or the model a verify_skippables of the target's own rejected).
    model: nn.Sequential
    sample: torch.Tensor
    #: The target's module and the object it names (step import), and what its build gave.
    loaded: tuple[ModuleType, Any]
    built: target.Built
    #: The settings the run uses (step build).
    balance: tuple[int, ...]
    devices: list[torch.device]
    #: The plain run's loss weights, one per output.
    weights: list[torch.Tensor]

    def __init__(self, options: Options, progress: Optional[Callable[[Step], None]] = None,
                 begin: Optional[Callable[[str], None]] = None) -> None:
        self.options = options
        #: The options as given (`options` takes the settled chunks and checkpoint modes).
        self.given = options
        self.chunks = options.chunks or DEFAULT_CHUNKS
        self.checkpoints = options.checkpoints or CHECKPOINTS
        self.report = Report(options.target, tolerances=dict(TOLERANCES))
        self.steps = Steps(self.report, progress, begin)
        self.reach = joining.Reach()
        self.raw: list[Observation] = []
        self.lib: Optional[backends.SkipLibrary] = None
        self.verified = False
        self.balanced = False
        self.static_ran = False
        #: Findings (path, line, column, code) of the target's compositions that never ran.
        self.unrun: set[tuple[str, int, int, str]] = set()
        #: The step (import or build) in which the target's own code ran verify_skippables (a
        #: module-level GPipe(...)) and it rejected the model; None when it did not.
        self.rejected: Optional[str] = None
        #: The static pass (once the static step ran) and the target as it tells findings apart.
        self.analysis = static_pass.Analysis()
        self.static_target = static_pass.Target(None, "")

    # -- helpers --------------------------------------------------------------------------
    def _observe(self, step: str, error: BaseException, layer: Optional[str]) -> list[Observation]:
        """Failures of a step read from the library's message; [] when the error is not one of them."""
        module: Any = dict(self.model.named_children()).get(layer) if layer is not None else None
        poppable: frozenset[str] = frozenset()
        if module is not None and self.lib is not None and isinstance(module, self.lib.Skippable):
            poppable = frozenset(module.poppable_names)
        found = []
        unpopped = self._unpopped()
        for failure in messages.parse_forward(error, poppable):
            at = failure.layer if failure.layer is not None else layer
            if at is None and messages.subject(failure.code) == "stashing layer":
                # verify_skippables names no layer for a stash never popped: the first stashing layer.
                at = next((child for child, name in unpopped if name == failure.name), None)
                unpopped = [item for item in unpopped if item[0] != at or item[1] != failure.name]
            cls = self.reach.layers.get(at) if at is not None else None
            found.append(Observation(failure.code, step, at, cls, failure.name, failure.message))
        return found

    def _unpopped(self) -> list[tuple[str, str]]:
        """(first stashing child, name) of each (namespace, name) that no later layer pops."""
        if self.lib is None:
            return []
        open_: dict[Any, str] = {}
        for child, layer in self.model.named_children():
            if not isinstance(layer, self.lib.Skippable):
                continue
            for ns, name in layer.stashable():
                if name not in layer.poppable_names:
                    open_.setdefault((ns, name), child)
            for ns, name in layer.poppable():
                if name not in layer.stashable_names:
                    open_.pop((ns, name), None)
        return [(child, key[1]) for key, child in open_.items()]
