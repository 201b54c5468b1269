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
from typing import Sequence, Union

from skiplint import cli


def skiplint(argv: Sequence[str], cwd: Union[str, Path]) -> subprocess.CompletedProcess[str]:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="\n",
                           write_through=True)
    saved = sys.stdout, sys.stderr, os.getcwd()
    sys.stdout, sys.stderr = out, err
    os.chdir(cwd)
    try:
        status = cli.main(list(argv))
    except SystemExit as stop:  # argparse's usage errors
        status = stop.code if isinstance(stop.code, int) else 2
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        os.chdir(saved[2])
    stdout = out.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    stderr = err.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["skiplint", *argv], status, stdout, stderr)
