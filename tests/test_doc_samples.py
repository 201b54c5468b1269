"""The docs show what the program prints: every sample session in README.md and docs/*.md is run
and compared, line for line, with what it prints today.

A sample is a fenced block whose first line is `$ skiplint ...` (a shell command: pipes and
redirections as written); the lines after the command are its output, standard error and standard
output as a terminal shows them, and a last line `...` means the output goes on. A block right
after `<!-- sample: terminal -->` is run with its output on a terminal (colour off: NO_COLOR=1),
the others with their output in a pipe. Each runs in a fresh copy of fixtures/, so a sample may
fix files. A sample in a pipe that is a plain `skiplint ARGS` (no pipe, redirection or variable)
runs the CLI in this process (tests/inprocess.py) when it prints to one stream only; one that
prints to both runs in a process, where the order of the two is the process's.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator, NamedTuple, Optional
from unittest import mock

import pytest

from skiplint import rules
from tests import inprocess

REPO = Path(__file__).resolve().parent.parent
DOCUMENTS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
_BLOCK = re.compile(r"(<!-- sample: terminal -->\n)?```[a-z]*\n(\$ skiplint .*?)```", re.S)


class Sample(NamedTuple):
    where: str
    command: str
    expected: list[str]
    terminal: bool


def _complete(command: str) -> bool:
    try:
        shlex.split(command)
    except ValueError:  # an open quote: the command goes on on the next line
        return False
    return True


def samples() -> Iterator[Sample]:
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            lines = match.group(2).splitlines()
            command, rest = lines[0][2:], lines[1:]
            while not _complete(command):
                command, rest = command + "\n" + rest[0], rest[1:]
            line = text.count("\n", 0, match.start(2)) + 1
            yield Sample(f"{document.relative_to(REPO)}:{line}", command, rest, bool(match.group(1)))


SAMPLES = list(samples())


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    env.update(COLUMNS="100", NO_COLOR="1", PYTHONIOENCODING="utf-8")
    return env


def _script(command: str) -> str:
    """The command with `skiplint` meaning this checkout's skiplint under this Python."""
    return f'skiplint() {{ {shlex.quote(sys.executable)} -m skiplint "$@"; }}\n{command}\n'


def _plain(command: str) -> Optional[list[str]]:
    """The arguments of a command that is `skiplint ARGS` alone, else None (what the shell adds)."""
    if re.search(r"[|&;<>()$`\\*?~{}\[\]\n]", command):
        return None
    words = shlex.split(command)
    return words[1:] if words[:1] == ["skiplint"] else None


def _run_in_a_pipe(command: str, cwd: Path) -> str:
    argv = _plain(command)
    if argv is not None:
        with mock.patch.dict(os.environ, _environment(), clear=True):
            done = inprocess.skiplint(argv, cwd)
        if not (done.stdout and done.stderr):
            return done.stdout + done.stderr
    done = subprocess.run(["bash", "-c", _script(command)], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=_environment(), timeout=300)
    return done.stdout.decode("utf-8")


def _run_on_a_terminal(command: str, cwd: Path) -> str:
    import pty

    controller, terminal = pty.openpty()
    child = subprocess.Popen(["bash", "-c", _script(command)], cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=terminal, stderr=terminal, env=_environment())
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the child's side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    child.wait(timeout=300)
    os.close(controller)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_the_docs_have_samples() -> None:
    where = {sample.where.split(":")[0] for sample in SAMPLES}
    assert {"README.md", "docs/usage.md", "docs/layout.md"} <= where
    assert any(sample.terminal for sample in SAMPLES)


@pytest.mark.skipif(shutil.which("bash") is None, reason="the samples are shell commands")
@pytest.mark.parametrize("sample", SAMPLES, ids=[sample.where for sample in SAMPLES])
def test_sample_prints_what_the_docs_show(sample: Sample, tmp_path: Path) -> None:
    if sample.terminal and not hasattr(os, "openpty"):
        pytest.skip("needs a pseudo-terminal")
    shutil.copytree(REPO / "fixtures", tmp_path / "fixtures")
    run = _run_on_a_terminal if sample.terminal else _run_in_a_pipe
    printed = run(sample.command, tmp_path).splitlines()
    expected = sample.expected
    if expected and expected[-1] == "...":
        expected = expected[:-1]
        printed = printed[:len(expected)]
    assert printed == expected, f"{sample.where}: `{sample.command}` prints something else now"


# -- what the docs say of SKP900 --------------------------------------------------------------------

def test_skp900_is_documented_where_it_is_reported(tmp_path: Path) -> None:
    """docs/rules.md: at the syntax error's line and column, line 1 for a file that cannot be read or
    decoded; a file that names no API module is not read past its bytes."""
    assert rules.RULES["SKP900"].reported_at.startswith("where the file stops being checkable: a syntax "
                                                        "error's line and column")
    files = {
        "api_syntax.py": b"import torchgpipe\ndef (:\n",
        "api_nul.py": b"from torchgpipe.skip import stash\n\0\n",
        "plain_syntax.py": b"def f(:\n",
        "plain_nul.py": b"x = 1\n\0\n",
        "plain_binary.py": bytes(range(256)) * 16,
        "plain_latin1.py": b"x = '\xe9t\xe9'\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    done = inprocess.skiplint(["--isolated", "-j", "1", *sorted(files)], tmp_path)
    assert (done.returncode, done.stderr) == (2, "")
    assert done.stdout.splitlines() == [
        "api_nul.py:1:1: SKP900 could not check this file: contains NUL bytes; not a Python source file",
        "api_syntax.py:2:5: SKP900 could not check this file: syntax error: invalid syntax",
    ]


@pytest.mark.parametrize("data", [b"x = 1\n\0\n", bytes(range(256)) * 16, b"def f(:\n"],
                         ids=["nul", "binary", "syntax-error"])
def test_standard_input_without_the_api_is_not_read_past_its_bytes(tmp_path: Path, data: bytes) -> None:
    for argv in (["-"], ["fix", "-"]):
        done = inprocess.skiplint_bytes([*argv, "--isolated"], tmp_path, data)
        assert (done.returncode, done.stderr) == (0, b""), argv
        assert done.stdout == (data if argv[0] == "fix" else b"")
