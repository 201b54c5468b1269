"""The CLI's standard streams, for every command that writes to them (check, fix, rule)."""

from __future__ import annotations

import sys


def say(line: str) -> None:
    """One line on standard error; a closed standard error loses it quietly."""
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):
        pass


class OutputFailed(Exception):
    """Standard output refused what was written (a full disk, an I/O error); the message says why."""


def write_stdout(output: "str | bytes") -> None:
    """Write to standard output and flush: a reader gone early is BrokenPipeError (the one line
    `main` gives it), any other refusal OutputFailed, never a traceback."""
    try:
        if isinstance(output, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(output)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(output)
            sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OutputFailed(str(error.strerror or error)) from None
