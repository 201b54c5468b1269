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


#: Lines of a library's message that a reason keeps; past them the rest is counted (`--verbose`
#: shows the whole traceback).
MAX_REASON_LINES = 60


def whole(error: BaseException) -> str:
    """`Type: message` with every line of the message (blank lines dropped): a library error that
    spans lines, such as verify_skippables' list of mismatched pairs, is kept whole."""
    lines = [line.rstrip() for line in str(error).strip().splitlines() if line.strip()]
    if len(lines) > MAX_REASON_LINES:
        rest = len(lines) - MAX_REASON_LINES
        lines = lines[:MAX_REASON_LINES] + [f"... and {rest} more line(s) (--verbose shows the traceback)"]
    return f"{type(error).__name__}: " + "\n".join(lines) if lines else type(error).__name__


def is_stop(error: BaseException) -> bool:
    """A BaseException that ordinary `except Exception` handlers (the libraries' too) let through."""
    return not isinstance(error, Exception)


def hide_library_notices() -> None:
    """Hide the warnings that the run itself causes and the user cannot act on, so that the
    model's stderr, passed on as its own output, holds only what the model says:
    - torch's notice (once a process, since torch 2.3) that cuBLAS first ran in a thread with no
      current CUDA context, as the Pipe's and autograd's worker threads do;
    - warnings raised in the pipeline libraries' own code (torchgpipe's CUDA streams call the
      deprecated `Tensor.storage()`; fairscale's Pipe says it was upstreamed).
    The model's own warnings, and the libraries' warnings about the model's calls, still show."""
    import warnings

    warnings.filterwarnings("ignore", message="Attempting to run cuBLAS, but there was no current CUDA context",
                            category=UserWarning)
    warnings.filterwarnings("ignore", module=r"(?:torchgpipe|fairscale)(?:\.|$)")
