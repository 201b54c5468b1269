"""The runtime companion: `skiplint verify` runs the real verify_skippables, layout and Pipe and joins
what they raise with the static findings. torch is imported only when a run starts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skiplint.runtime.report import Report

__all__ = ["verify", "Report"]


def verify(target: str, **options: Any) -> "Report":
    """Run the check on TARGET (`file.py:NAME` or `module:NAME`); see docs/runtime.md for the options."""
    from skiplint.runtime.run import verify as run_verify

    return run_verify(target, **options)


def __getattr__(name: str) -> Any:
    if name == "Report":
        from skiplint.runtime.report import Report

        return Report
    raise AttributeError(name)
