"""The `skiplint` command: what it prints, in which format, and with which exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import cli

UNDECLARED = '''\
from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        yield stash("extra", x)
        return x
'''

CLEAN = '''\
from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x
'''

# SKP102 (line 9), SKP104 (line 5), SKP114 (line 7), SKP116 opt-in (line 8).
SEVERAL = '''\
from torch import nn
from fairscale.nn.pipe.skip import pop, skippable


@skippable(pop=["skip"])
class Pop(nn.Module):
    def forward(self, x, y):
        yield pop("other")
        return x
'''

CONDITIONAL = '''\
from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            yield stash("skip", x)
        return x
'''


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        files: dict[str, str | bytes], *args: str) -> tuple[int, str, str]:
    """Write `files` under tmp_path and run the CLI there in-process: (status, stdout, stderr)."""
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    status = cli.main(["--isolated", "-j", "1", *args])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def lint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    def _lint(files: dict[str, str | bytes], *args: str) -> tuple[int, str, str]:
        return run(tmp_path, monkeypatch, capsys, files, *args)
    return _lint


# -- text output and exit status -------------------------------------------------------------

def test_finding_is_printed_as_flake8_prints_it(lint) -> None:
    status, out, _ = lint({"model.py": UNDECLARED}, "model.py")
    assert status == 1
    assert out == "model.py:9:15: SKP101 'extra' is stashed but not declared in stash=[...]\n"


def test_clean_file_exits_zero_and_prints_nothing(lint) -> None:
    status, out, err = lint({"model.py": CLEAN}, "model.py")
    assert (status, out, err) == (0, "", "")


def test_several_findings_sorted_by_line_with_columns(lint) -> None:
    status, out, _ = lint({"pop.py": SEVERAL}, "pop.py")
    assert status == 1
    assert out.splitlines() == [
        "pop.py:5:17: SKP104 'skip' is declared in pop=[...] but no path of forward pops it",
        "pop.py:7:5: SKP114 forward of @skippable 'Pop' requires 2 positional inputs; "
        "Skippable passes exactly one",
        "pop.py:8:15: SKP102 'other' is popped but not declared in pop=[...]",
    ]


def test_conditional_message_names_the_branch_line(lint) -> None:
    _, out, _ = lint({"cond.py": CONDITIONAL}, "cond.py")
    assert out == ("cond.py:7:5: SKP111 'skip' is stashed on some paths through forward "
                   "but not all (line 8)\n")


def test_directory_is_searched_recursively(lint) -> None:
    status, out, _ = lint({"pkg/a.py": CLEAN, "pkg/sub/b.py": UNDECLARED, "pkg/notes.txt": UNDECLARED},
                          "pkg")
    assert status == 1
    reported = [line.split(":")[0] for line in out.splitlines()]
    assert [Path(p).as_posix() for p in reported] == ["pkg/sub/b.py"]


def test_default_path_is_the_current_directory(lint) -> None:
    status, out, _ = lint({"model.py": UNDECLARED})
    assert status == 1
    assert "SKP101" in out and "model.py:9:15" in out


def test_zero_files_exit_zero(lint, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    status, out, _ = lint({}, "empty")
    assert (status, out) == (0, "")


def test_file_without_the_api_is_clean(lint) -> None:
    status, out, _ = lint({"plain.py": "import os\nos.environ.pop('X')\n"}, "plain.py")
    assert (status, out) == (0, "")


# -- SKP900: files that cannot be checked ------------------------------------------------------

def test_unparsable_file_is_skp900_and_the_others_are_still_checked(lint) -> None:
    files = {"a_broken.py": "import torchgpipe\ndef f(:\n", "b_model.py": UNDECLARED}
    status, out, _ = lint(files, "a_broken.py", "b_model.py")
    assert status == 2
    lines = out.splitlines()
    assert lines[0] == "a_broken.py:2:7: SKP900 could not check this file: syntax error: invalid syntax"
    assert lines[1] == "b_model.py:9:15: SKP101 'extra' is stashed but not declared in stash=[...]"
    assert len(lines) == 2


@pytest.mark.parametrize("content, reason", [
    (b"import torchgpipe\n\0\n", "contains NUL bytes"),
    (b"import torchgpipe\nx = '\xff'\n", "not valid utf-8"),
])
def test_undecodable_file_is_skp900_with_its_reason(lint, content: bytes, reason: str) -> None:
    status, out, _ = lint({"bad.py": content}, "bad.py")
    assert status == 2
    assert out.startswith("bad.py:1:1: SKP900 could not check this file: ")
    assert reason in out
    assert len(out.splitlines()) == 1


def test_missing_file_is_skp900(lint) -> None:
    status, out, _ = lint({}, "missing.py")
    assert status == 2
    assert out == "missing.py:1:1: SKP900 could not check this file: no such file or directory\n"


def test_unchecked_wins_over_findings_and_ignoring_skp900_keeps_status_2(lint) -> None:
    files = {"broken.py": "import torchgpipe\nclass (:\n", "model.py": UNDECLARED}
    status, out, _ = lint(files, "--ignore", "SKP900", "broken.py", "model.py")
    assert status == 2
    assert "broken.py:2:7: SKP900 " in out and "SKP101" in out  # an unchecked file is always said


def test_long_expression_is_checked_not_a_traceback(tmp_path: Path) -> None:
    """A valid module with a 1000-term sum somewhere and a finding elsewhere."""
    source = UNDECLARED + "TOTAL = " + " + ".join(["1"] * 1000) + "\n"
    compile(source, "model.py", "exec")  # valid Python
    (tmp_path / "model.py").write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-j", "1", "model.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr
    assert done.returncode == 1
    assert [line.split(" ")[1] for line in done.stdout.splitlines()] == ["SKP101"]


def test_deep_nesting_is_skp900_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text("import torchgpipe\nx = " + "(" * 2000 + ")" * 2000 + "\n")
    done = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-j", "1", "deep.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout.startswith("deep.py:2:205: SKP900 ")


def test_pep263_encoding_is_honoured(lint) -> None:
    source = ("# -*- coding: latin-1 -*-\n" + CLEAN + "NAME = '\xe9'\n").encode("latin-1")
    status, out, _ = lint({"latin.py": source}, "latin.py")
    assert (status, out) == (0, "")


# -- --format json -------------------------------------------------------------------------------

def test_json_format(lint) -> None:
    status, out, _ = lint({"pop.py": SEVERAL, "broken.py": "import fairscale\nx = (\n"},
                          "--format", "json", "pop.py", "broken.py")
    assert status == 2
    payload = json.loads(out)
    diagnostics = payload["diagnostics"]
    by_code = {d["code"]: d for d in diagnostics}
    assert sorted(by_code) == ["SKP102", "SKP104", "SKP114", "SKP900"]
    assert by_code["SKP102"]["path"] == "pop.py"
    assert (by_code["SKP102"]["line"], by_code["SKP102"]["column"]) == (8, 15)
    # The code is in a field of its own: the message does not repeat it.
    assert by_code["SKP102"]["message"] == "'other' is popped but not declared in pop=[...]"
    assert by_code["SKP102"]["name"] == "undeclared-pop"
    assert by_code["SKP900"]["path"] == "broken.py"
    assert [u["path"] for u in payload["unchecked"]] == ["broken.py"]


def test_json_format_clean(lint) -> None:
    status, out, _ = lint({"model.py": CLEAN}, "--format", "json", "model.py")
    assert status == 0
    assert json.loads(out)["diagnostics"] == []


# -- selection -----------------------------------------------------------------------------------

def codes(out: str) -> list[str]:
    return sorted(line.split(": ")[1].split()[0] for line in out.splitlines())


@pytest.mark.parametrize("args, expected", [
    ((), ["SKP102", "SKP104", "SKP114"]),
    (("--select", "SKP102"), ["SKP102"]),
    (("--select", "SKP10"), ["SKP102", "SKP104"]),
    (("--select", "SKP1"), ["SKP102", "SKP104", "SKP114"]),
    (("--select", "skp104, skp114"), ["SKP104", "SKP114"]),
    (("--ignore", "SKP10"), ["SKP114"]),
    (("--ignore", "SKP1"), []),
    (("--select", "SKP1", "--ignore", "SKP10"), ["SKP114"]),
    (("--select", "SKP104", "--ignore", "SKP10"), ["SKP104"]),  # the longer prefix wins
    (("--extend-select", "SKP116"), ["SKP102", "SKP104", "SKP114", "SKP116"]),
    (("--select", "SKP1"), ["SKP102", "SKP104", "SKP114"]),  # opt-in codes need their full code
    (("--select", "SKP116"), ["SKP116"]),
    (("--select", "SKP102", "--extend-select", "SKP116"), ["SKP102", "SKP116"]),
    (("--extend-select", "SKP116", "--ignore", "SKP116"), ["SKP102", "SKP104", "SKP114"]),
])
def test_select_ignore_extend_select(lint, args: tuple[str, ...], expected: list[str]) -> None:
    status, out, _ = lint({"pop.py": SEVERAL}, *args, "pop.py")
    assert codes(out) == expected
    assert status == (1 if expected else 0)


# -- noqa ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("comment, reported", [
    ("", True),
    ("  # noqa", False),
    ("  # noqa: SKP101", False),
    ("  # noqa:SKP101", False),
    ("  # noqa: SKP1", False),
    ("  # noqa: E501, SKP101", False),
    ("  # noqa: SKP102", True),
    ("  # noqa: E501", True),
    ("  # NOQA", False),
])
def test_noqa_on_the_reported_line(lint, comment: str, reported: bool) -> None:
    source = UNDECLARED.replace('yield stash("extra", x)', 'yield stash("extra", x)' + comment)
    status, out, _ = lint({"model.py": source}, "model.py")
    assert ("SKP101" in out) is reported
    assert status == (1 if reported else 0)


def test_noqa_on_another_line_does_not_suppress(lint) -> None:
    source = UNDECLARED.replace("def forward(self, x):", "def forward(self, x):  # noqa")
    status, out, _ = lint({"model.py": source}, "model.py")
    assert status == 1 and "SKP101" in out


# -- the command as users run it -----------------------------------------------------------------

def test_python_dash_m_skiplint(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(UNDECLARED, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "model.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stdout == "model.py:9:15: SKP101 'extra' is stashed but not declared in stash=[...]\n"
    done = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "clean.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "")


def test_check_subcommand_is_the_default_command(lint, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = lint({"model.py": UNDECLARED}, "model.py")
    assert cli.main(["check", "--isolated", "-j", "1", "model.py"]) == status
    assert capsys.readouterr().out == out


def test_bad_option_exits_2(lint) -> None:
    with pytest.raises(SystemExit) as raised:
        lint({}, "--format", "yaml")
    assert raised.value.code == 2


def test_exit_zero(lint) -> None:
    status, out, _ = lint({"model.py": UNDECLARED}, "--exit-zero", "model.py")
    assert status == 0 and "SKP101" in out
