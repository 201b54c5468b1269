"""The CLI (and flake8) called in this process, with what a subprocess would give back: its exit
status and its standard output and error, written as a process writes them (UTF-8, strict: text a
real process could not print fails here too). For tests of what the CLI prints; a subprocess proves
nothing more there, and costs an interpreter start. The doors themselves (`python -m skiplint`,
flake8, pre-commit, the server) keep their subprocess tests (test_doors.py, test_precommit.py, ...)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from skiplint import cli


def _call(main: Callable[[list[str]], int], argv: Sequence[str], cwd: Union[str, Path],
          stdin: Optional[bytes]) -> tuple[int, bytes, bytes]:
    """`main(argv)` in `cwd`: its status and the bytes it wrote to standard output and error.
    `stdin`: the bytes standard input holds for the call (read through sys.stdin.buffer, as a
    process reads them); None leaves sys.stdin as it is."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="\n",
                           write_through=True)
    saved = sys.stdout, sys.stderr, sys.stdin, os.getcwd()
    sys.stdout, sys.stderr = out, err
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="strict")
    os.chdir(cwd)
    try:
        status = main(list(argv))
    except SystemExit as stop:  # usage errors, --help, --version
        status = stop.code if isinstance(stop.code, int) else 2
    finally:
        sys.stdout, sys.stderr, sys.stdin = saved[:3]
        os.chdir(saved[3])
    return status, out.buffer.getvalue(), err.buffer.getvalue()  # type: ignore[attr-defined]


def skiplint(argv: Sequence[str], cwd: Union[str, Path],
             stdin: Optional[bytes] = None) -> subprocess.CompletedProcess[str]:
    """`skiplint ARGV` in `cwd`, its output as text."""
    status, out, err = _call(cli.main, argv, cwd, stdin)
    return subprocess.CompletedProcess(["skiplint", *argv], status, out.decode("utf-8"), err.decode("utf-8"))


def skiplint_bytes(argv: Sequence[str], cwd: Union[str, Path],
                   stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """`skiplint ARGV` in `cwd` with `stdin` on standard input, its output as bytes (a source that
    `fix -` passes through keeps its own encoding)."""
    status, out, err = _call(cli.main, argv, cwd, stdin)
    return subprocess.CompletedProcess(["skiplint", *argv], status, out, err)


def flake8(argv: Sequence[str], cwd: Union[str, Path]) -> subprocess.CompletedProcess[str]:
    """`flake8 ARGV` in `cwd`. The plugin's class-wide settings (parse_options sets them from each
    run's options) are given back afterwards, as a process would leave them."""
    from flake8.main import cli as flake8_cli

    from skiplint.flake8_plugin import SkiplintChecker

    kept = {name: SkiplintChecker.__dict__[name] for name in ("overrides", "finder", "selected_codes", "stdin_name")}
    try:
        status, out, err = _call(flake8_cli.main, argv, cwd, None)
    finally:
        for name, value in kept.items():
            setattr(SkiplintChecker, name, value)
    return subprocess.CompletedProcess(["flake8", *argv], status, out.decode("utf-8"), err.decode("utf-8"))
