"""Closed and failing standard streams, in real processes (a closed descriptor is what `>&-` gives a
process, which no in-process call can imitate): no traceback, a true exit status, and nothing but
the report on standard output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Optional

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="closes POSIX descriptors")

REPO = Path(__file__).resolve().parent.parent
UNDECLARED = '''\
from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["a"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("b", x)
        return x
'''
BARE = UNDECLARED.replace('stash=["a"]', 'stash="b"')
CLEAN = "x = 1\n"
#: A configuration with one mistake, reported on standard error.
CONFIG = '[tool.skiplint]\nselect = ["SKP1", "SKP999"]\n'


def run(tmp_path: Path, *argv: str, close: tuple[int, ...] = (), stdin: Optional[bytes] = None,
        stdout: "Optional[int | str]" = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    """`python -m skiplint ARGV` in tmp_path with the descriptors `close` closed, as `>&-` leaves them."""
    def closing() -> None:
        for fd in close:
            os.close(fd)

    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = open(stdout, "wb") if isinstance(stdout, str) else stdout
    try:
        return subprocess.run([sys.executable, "-m", "skiplint", *argv], cwd=tmp_path, env=env,
                              input=stdin, stdout=out, stderr=subprocess.PIPE,
                              preexec_fn=closing, timeout=300)
    finally:
        if isinstance(stdout, str):
            out.close()  # type: ignore[union-attr]


def write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")


# -- standard output closed ------------------------------------------------------------------------

@pytest.mark.parametrize("argv, status", [
    (("--isolated", "-j", "1", "clean.py"), 0),
    (("--isolated", "-j", "1", "model.py"), 1),
    (("check", "--isolated", "-j", "1", "--format", "sarif", "model.py"), 1),
    (("check", "--isolated", "-j", "2", "--format", "json", "model.py", "clean.py", "bare.py"), 1),
    (("fix", "--isolated", "--diff", "bare.py"), 1),
    (("fix", "--isolated", "--diff", "clean.py"), 0),
    (("rule", "SKP101"), 0),
], ids=["clean", "findings", "sarif", "json-j2", "fix-diff", "fix-diff-clean", "rule"])
def test_a_closed_stdout_keeps_the_exit_status_and_prints_no_traceback(
        tmp_path: Path, argv: tuple[str, ...], status: int) -> None:
    write(tmp_path, {"clean.py": CLEAN, "model.py": UNDECLARED, "bare.py": BARE})
    done = run(tmp_path, *argv, close=(1,), stdout=None)
    said = b"bare.py: would fix SKP106 (line 5)\n" if argv[:3] == ("fix", "--isolated", "--diff") \
        and "bare.py" in argv else b""
    assert (done.returncode, done.stderr) == (status, said)


def test_fix_from_a_closed_stdin_to_a_closed_stdout(tmp_path: Path) -> None:
    done = run(tmp_path, "fix", "--isolated", "-", close=(0, 1), stdout=None)
    assert (done.returncode, done.stderr) == (0, b"")


def test_a_closed_stdout_cannot_be_taken_by_a_file_the_fix_writes(tmp_path: Path) -> None:
    write(tmp_path, {"bare.py": BARE})
    done = run(tmp_path, "fix", "--isolated", "bare.py", close=(1,), stdout=None)
    assert done.returncode == 0
    assert done.stderr == b"bare.py: fixed SKP106 (line 5)\n"
    assert (tmp_path / "bare.py").read_text(encoding="utf-8") == BARE.replace('stash="b"', 'stash=["b"]')


# -- standard error closed -------------------------------------------------------------------------

@pytest.mark.parametrize("fmt, parse", [("json", json.loads), ("sarif", json.loads),
                                        ("text", lambda text: text.splitlines())])
def test_a_closed_stderr_puts_no_warning_in_the_report(tmp_path: Path, fmt: str,
                                                        parse: Callable[[str], object]) -> None:
    write(tmp_path, {"pyproject.toml": CONFIG, "model.py": UNDECLARED})
    done = run(tmp_path, "check", "-j", "1", "--format", fmt, "model.py", close=(2,))
    assert done.returncode == 1
    report = done.stdout.decode("utf-8")
    assert "SKP999" not in report and "skiplint:" not in report
    expected = run(tmp_path, "check", "-j", "1", "--format", fmt, "model.py")
    assert b"SKP999" in expected.stderr  # the warning that a closed standard error loses
    assert parse(report) == parse(expected.stdout.decode("utf-8"))


def test_a_closed_stderr_leaves_fix_stdin_the_source_alone(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": CONFIG})
    done = run(tmp_path, "fix", "-", close=(2,), stdin=BARE.encode())
    assert done.returncode == 0
    assert done.stdout == BARE.replace('stash="b"', 'stash=["b"]').encode()


def test_closed_stdout_and_stderr_keep_the_exit_status(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": CONFIG, "model.py": UNDECLARED})
    done = run(tmp_path, "-j", "1", "model.py", close=(1, 2), stdout=None)
    assert done.returncode == 1


# -- standard output that refuses to be written ------------------------------------------------------

full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")


@full
@pytest.mark.parametrize("argv, said", [
    (("--isolated", "-j", "1", "model.py"), b"skiplint: cannot write the report to standard output: "
                                            b"No space left on device\n"),
    (("fix", "--isolated", "--diff", "bare.py"), b"skiplint: cannot write to standard output: "
                                                 b"No space left on device\n"),
    (("fix", "--isolated", "-"), b"skiplint: cannot write to standard output: No space left on device\n"),
], ids=["check", "fix-diff", "fix-stdin"])
def test_a_full_stdout_is_one_line_and_exit_2(tmp_path: Path, argv: tuple[str, ...], said: bytes) -> None:
    write(tmp_path, {"model.py": UNDECLARED, "bare.py": BARE})
    done = run(tmp_path, *argv, stdin=BARE.encode(), stdout="/dev/full")
    assert (done.returncode, done.stderr) == (2, said)
