"""Why a run stops: the exceptions whose message is the one line shown, and how the model's own
exits and interrupts are named."""

from __future__ import annotations


class CannotRun(Exception):
    """The run could not happen (exit status 2); str() is the reason in one line."""


class Stopped(CannotRun):
    """The model's code ended a step with a BaseException that is not an Exception (sys.exit,
    KeyboardInterrupt, ...): the step it happened in is added to the reason."""


def stop_cause(error: BaseException) -> str:
    """What the user's code did, as a verb phrase: `called sys.exit(0)`, `raised KeyboardInterrupt`."""
    if isinstance(error, SystemExit):
        return "called sys.exit()" if error.code is None else f"called sys.exit({error.code!r})"
    return f"raised {one_line(error)}"


def one_line(error: BaseException) -> str:
    """`Type: first line of the message`, or the type alone when the message is empty."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def is_stop(error: BaseException) -> bool:
    """A BaseException that ordinary `except Exception` handlers (the libraries' too) let through."""
    return not isinstance(error, Exception)
