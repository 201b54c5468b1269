"""How the run's steps are timed, recorded and shown, and how a failure is put in one line."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

import torch

from skiplint.runtime import target
from skiplint.runtime.errors import CannotRun, Stopped, is_stop, one_line, stop_cause, whole
from skiplint.runtime.report import Report, Step


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
    tb = error.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
            break
    else:
        path = target.shown_path(path)
    return f"{path}:{tb.tb_lineno}"

def _failure_text(error: BaseException, every_line: bool = False) -> str:
    """A failure: its type and message (its first line, or every line), and where it was raised
    when it says nothing."""
    text = whole(error) if every_line else one_line(error)
    if text == type(error).__name__:
        where = _raised_at(error)
        if where:
            text += f" (raised at {where})"
    return text
