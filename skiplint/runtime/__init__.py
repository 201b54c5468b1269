"""The runtime companion: `skiplint verify` runs the real verify_skippables, layout and Pipe and joins
what they raise with the static findings. The model runs in a supervised child process; torch is
imported only there (or in this process when `isolate=False`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from skiplint.runtime.options import DEFAULT_TIMEOUT, check

if TYPE_CHECKING:
    from skiplint.runtime.report import Report, Step

__all__ = ["verify", "Report"]


def verify(target: str, *, sample: Optional[str] = None, input_shape: Optional[Sequence[int]] = None,
           backend: str = "auto", balance: Optional[Sequence[int]] = None, chunks: Optional[int] = None,
           checkpoint: "Optional[Sequence[str] | str]" = None, devices: Optional[Sequence[str]] = None,
           timeout: float = DEFAULT_TIMEOUT, progress: "Optional[Callable[[Step], None]]" = None,
           isolate: bool = True, verbose: bool = False) -> "Report":
    """Run the check on TARGET (`file.py:NAME` or `module:NAME`); see docs/runtime.md for the options.
    `balance`, `chunks` and `checkpoint` left None are the pipe's the target gives (or that the lint
    ties to its Sequential), else the defaults.

    The model runs in a child process: an exit, a crash or a hang of its code (each step has
    `timeout` seconds) becomes the report's `reason`, exit status 2. `isolate=False` runs it in
    this process instead: faster to start and easier to debug, but nothing protects the caller.
    A usage error (an option out of range, a missing file) raises ValueError before anything runs."""
    options = check(target, sample=sample, input_shape=input_shape, backend=backend, balance=balance,
                    chunks=chunks, checkpoint=checkpoint, devices=devices, timeout=timeout)
    if not isolate:
        from skiplint.runtime.run import Runner

        return Runner(options, progress).run()
    from skiplint.runtime import supervise

    return supervise.run(options, progress, verbose=verbose)


def __getattr__(name: str) -> Any:
    if name == "Report":
        from skiplint.runtime.report import Report

        return Report
    raise AttributeError(name)
