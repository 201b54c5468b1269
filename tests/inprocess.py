"""The CLI called in this process, with what a subprocess would give back: its exit status and its
standard output and error, written as a process writes them (UTF-8, strict: text a real process
could not print fails here too). For tests of what the CLI prints; a subprocess proves nothing more
there, and costs an interpreter start. The doors themselves (`python -m skiplint`, flake8,
pre-commit) keep their subprocess tests (test_doors.py, test_precommit.py, ...)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence, Union

from skiplint import cli


def skiplint(argv: Sequence[str], cwd: Union[str, Path],
             stdin: Optional[bytes] = None) -> subprocess.CompletedProcess[str]:
    """`stdin`: the bytes standard input holds for the call (read through sys.stdin.buffer, as a
    process reads them); None leaves sys.stdin as it is."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="\n",
                           write_through=True)
    saved = sys.stdout, sys.stderr, os.getcwd(), sys.stdin
    sys.stdout, sys.stderr = out, err
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="strict")
    os.chdir(cwd)
    try:
        status = cli.main(list(argv))
    except SystemExit as stop:  # argparse's usage errors
        status = stop.code if isinstance(stop.code, int) else 2
    finally:
        sys.stdout, sys.stderr, sys.stdin = saved[0], saved[1], saved[3]
        os.chdir(saved[2])
    stdout = out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    stderr = err.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["skiplint", *argv], status, stdout, stderr)
