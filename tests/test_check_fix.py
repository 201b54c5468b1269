"""What a ruff or flake8 user expects of `skiplint check`: --fix and --diff, the fixable mark and the
summary on a terminal, colour, -q, and a hint for a mistyped command."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import cli, fix, formats

REPO = Path(__file__).resolve().parent.parent

MODEL = '''\
from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        stash("skip", x)
        yield stash("extra", x)
        return x


@skippable(pop="skip")
class Pop(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip


def helper(x):
    stash("loose", x)
'''
FIXED = MODEL.replace('        stash("skip", x)', '        yield stash("skip", x)').replace(
    '@skippable(pop="skip")', '@skippable(pop=["skip"])')
#: flake8's lines for MODEL, piped.
FINDINGS = [
    "model.py:8:9: SKP107 stash('skip') builds a command but is not yielded, so it does nothing; "
    "write 'yield stash(...)'",
    "model.py:9:15: SKP101 'extra' is stashed but not declared in stash=[...]",
    "model.py:13:16: SKP106 pop= is a bare string: 'skip' declares its characters 'i', 'k', 'p', 's'; "
    "write ['skip']",
    "model.py:21:5: SKP107 stash('loose') builds a command but is not yielded, so it does nothing; "
    "write 'yield stash(...)'",
]
#: What is left once the fixes are made.
LEFT = [FINDINGS[1], FINDINGS[3]]
CLEAN = "from torch import nn\n"


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """The CLI in-process in tmp_path, no colour from the environment: (status, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)

    def _run(*argv: str) -> tuple[int, str, str]:
        status = cli.main([*argv, "--isolated", "-j", "1"])
        out, err = capsys.readouterr()
        return status, out, err
    return _run


def lines(text: str) -> list[str]:
    return text.splitlines()


# -- --fix and --diff ------------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [("check", "--fix"), ("--fix",)])
def test_check_fix_makes_the_fixes_then_reports_what_is_left(run, tmp_path: Path, argv: tuple[str, ...]) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    status, out, err = run(*argv, "model.py")
    assert status == 1
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == FIXED
    assert lines(out) == LEFT
    assert lines(err) == ["model.py: fixed SKP107 (line 8), SKP106 (line 13)",
                          "model.py:21:5: SKP107 not fixed: a yield here would change what the enclosing "
                          "function is"]


def test_check_fix_makes_the_same_edits_as_fix(run, tmp_path: Path) -> None:
    # Every fixture with a fixable finding, fixed by each door: the same bytes.
    fixtures = [p for p in (REPO / "fixtures").glob("*.py") if p.name.startswith(("skp106", "skp107", "skp401"))]
    assert len(fixtures) >= 3
    for door in ("a", "b"):
        (tmp_path / door).mkdir()
        for fixture in fixtures:
            shutil.copyfile(fixture, tmp_path / door / fixture.name)
    assert run("check", "--fix", "-q", "a")[0] == 1  # findings without a mechanical fix are left
    assert cli.main(["fix", "--isolated", "-q", "b"]) == 0
    for fixture in fixtures:
        fixed = (tmp_path / "a" / fixture.name).read_bytes()
        assert fixed == (tmp_path / "b" / fixture.name).read_bytes(), fixture.name
    assert any((tmp_path / "a" / f.name).read_bytes() != f.read_bytes() for f in fixtures)


def test_check_fix_with_nothing_left_exits_0(run, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL.replace('    stash("loose", x)', "    return x").replace(
        '        yield stash("extra", x)\n', ""), encoding="utf-8")
    assert run("--fix", "-q", "model.py") == (0, "", "")


def test_check_fix_honours_the_selection(run, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    status, out, _ = run("--fix", "--select", "SKP106", "model.py")
    assert (status, lines(out)) == (0, [])
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == MODEL.replace(
        '@skippable(pop="skip")', '@skippable(pop=["skip"])')


def test_check_diff_shows_what_fix_diff_shows_and_writes_nothing(
        run, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    expected = run("check", "--diff", "model.py")
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == MODEL
    assert expected == (1, fix.diff(fix.fix_source(MODEL, "model.py")), (
        "model.py: would fix SKP107 (line 8), SKP106 (line 13)\n"
        "model.py:21:5: SKP107 not fixed: a yield here would change what the enclosing function is\n"))
    assert cli.main(["fix", "--isolated", "--diff", "model.py"]) == 1
    assert capsys.readouterr() == expected[1:]
    assert run("--diff", "model.py") == expected
    (tmp_path / "model.py").write_text(FIXED, encoding="utf-8")
    assert run("--diff", "-q", "model.py") == (0, "", "")


def test_check_diff_says_why_a_file_cannot_be_fixed(run, tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import torchgpipe\ndef (:\n", encoding="utf-8")
    assert run("--diff", "broken.py") == (
        2, "", "broken.py: could not fix this file: syntax error: invalid syntax at 2:5\n")


def test_check_fix_reads_standard_input_as_fix_does(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "skiplint", "--fix", "--isolated", "-", "--stdin-display-name",
                           "m.py"], input=MODEL, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 1  # findings left in the fixed source
    assert done.stdout == FIXED
    assert lines(done.stderr)[0] == "m.py: fixed SKP107 (line 8), SKP106 (line 13)"


def test_standard_input_is_not_fixed_with_other_paths(run, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    assert run("--fix", "-", "model.py") == (
        2, "", "skiplint check: '-' (standard input) cannot be combined with other paths with --fix or --diff\n")


# -- the mark and the summary, on a terminal only ----------------------------------------------------

def test_piped_output_is_one_finding_per_line_without_mark_or_summary(run, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    assert run("model.py") == (1, "".join(line + "\n" for line in FINDINGS), "")


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Standard output is a terminal (colour off: NO_COLOR)."""
    monkeypatch.setattr(cli, "_isatty", lambda stream: stream is sys.stdout)
    monkeypatch.setenv("NO_COLOR", "1")


def marked(line: str) -> str:
    path, line_no, col, rest = line.split(":", 3)
    code, message = rest[1:].split(" ", 1)
    return f"{path}:{line_no}:{col}: {code} [*] {message}"


def test_a_terminal_marks_what_fix_fixes_and_ends_with_a_summary(run, tmp_path: Path, terminal: None) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    status, out, err = run("model.py", "clean.py")
    assert (status, err) == (1, "")
    assert lines(out) == [marked(FINDINGS[0]), FINDINGS[1], marked(FINDINGS[2]), FINDINGS[3],
                          "Found 4 findings in 1 of 2 files.",
                          "[*] 2 fixable with `skiplint --fix model.py clean.py --isolated -j 1`."]
    # SKP107 at line 21 is not marked: `skiplint fix` leaves it (no mechanical rewrite).
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == MODEL


def test_the_summary_after_check_fix_and_on_a_clean_run(run, tmp_path: Path, terminal: None) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    status, out, _ = run("check", "--fix", "model.py")
    assert status == 1
    assert lines(out) == LEFT + ["Fixed 2 findings in 1 file.", "Found 2 findings in 1 file."]
    (tmp_path / "model.py").write_text(CLEAN, encoding="utf-8")
    assert run("check", "model.py") == (0, "No findings in 1 file.\n", "")


def test_the_summary_counts_files_that_could_not_be_checked(run, tmp_path: Path, terminal: None) -> None:
    (tmp_path / "broken.py").write_text("import torchgpipe\ndef (:\n", encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    status, out, _ = run("broken.py", "clean.py")
    assert status == 2
    assert lines(out) == ["broken.py:2:5: SKP900 could not check this file: syntax error: invalid syntax",
                          "Found 1 finding in 1 of 2 files; 1 file could not be checked."]


@pytest.mark.parametrize("argv", [("--format", "json"), ("--output", "report.txt"), ("-q",)])
def test_no_summary_in_another_format_a_file_or_quiet(run, tmp_path: Path, terminal: None,
                                                      argv: tuple[str, ...]) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    status, out, _ = run(*argv, "model.py")
    assert status == 1
    written = out + ((tmp_path / "report.txt").read_text(encoding="utf-8") if "--output" in argv else "")
    assert "[*]" not in written and "Found" not in written


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_real_terminal_gets_colour_marks_and_the_summary(tmp_path: Path) -> None:
    import pty

    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    controller, terminal_end = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "skiplint", "--isolated", "model.py"], cwd=tmp_path,
                             stdout=terminal_end, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env)
    os.close(terminal_end)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert child.wait(timeout=120) == 1
    os.close(controller)
    assert child.stderr is not None and child.stderr.read() == b""
    out = b"".join(chunks).decode().replace("\r\n", "\n")
    b, c, r, red = "\x1b[1m", "\x1b[36m", "\x1b[m", "\x1b[31m"
    assert lines(out) == [
        f"{b}model.py{r}{c}:{r}8{c}:{r}9{c}:{r} {b}{red}SKP107{r} {c}[*]{r} stash('skip') builds a command but "
        "is not yielded, so it does nothing; write 'yield stash(...)'",
        f"{b}model.py{r}{c}:{r}9{c}:{r}15{c}:{r} {b}{red}SKP101{r} 'extra' is stashed but not declared in "
        "stash=[...]",
        f"{b}model.py{r}{c}:{r}13{c}:{r}16{c}:{r} {b}{red}SKP106{r} {c}[*]{r} pop= is a bare string: 'skip' "
        "declares its characters 'i', 'k', 'p', 's'; write ['skip']",
        f"{b}model.py{r}{c}:{r}21{c}:{r}5{c}:{r} {b}{red}SKP107{r} stash('loose') builds a command but is not "
        "yielded, so it does nothing; write 'yield stash(...)'",
        "Found 4 findings in 1 file.",
        f"{c}[*]{r} 2 fixable with `skiplint --fix --isolated model.py`.",
    ]


# -- colour ----------------------------------------------------------------------------------------

class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("choice, env, tty, expected", [
    ("auto", {}, True, True),
    ("auto", {}, False, False),  # a pipe or a file
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"NO_COLOR": ""}, True, True),  # set but empty: as if not set
    ("auto", {"FORCE_COLOR": "1"}, False, True),
    ("auto", {"FORCE_COLOR": ""}, False, False),
    ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),  # NO_COLOR wins
    ("auto", {"TERM": "dumb"}, True, False),
    ("always", {"NO_COLOR": "1"}, False, True),  # the option beats the environment
    ("never", {"FORCE_COLOR": "1"}, True, False),
])
def test_colour_choice(choice: str, env: dict[str, str], tty: bool, expected: bool) -> None:
    assert cli.use_color(choice, _Stream(tty), env) is expected


COLOURED = ("\x1b[1mmodel.py\x1b[m\x1b[36m:\x1b[m9\x1b[36m:\x1b[m15\x1b[36m:\x1b[m \x1b[1m\x1b[31mSKP101\x1b[m "
            "'extra' is stashed but not declared in stash=[...]")


def test_colour_where_asked_only_in_the_text_report_on_standard_output(
        run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    assert lines(run("--color", "always", "--select", "SKP101", "model.py")[1]) == [COLOURED]
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert lines(run("--select", "SKP101", "model.py")[1]) == [COLOURED]
    assert lines(run("--color", "never", "--select", "SKP101", "model.py")[1]) == [FINDINGS[1]]
    for fmt in ("json", "sarif", "github"):
        out = run("--color", "always", "--format", fmt, "model.py")[1]
        assert "\x1b" not in out and out
    assert run("--color", "always", "--output", "report.txt", "model.py")[:2] == (1, "")
    assert (tmp_path / "report.txt").read_text(encoding="utf-8") == "".join(line + "\n" for line in FINDINGS)
    monkeypatch.setenv("NO_COLOR", "1")
    assert lines(run("--select", "SKP101", "model.py")[1]) == [FINDINGS[1]]


def test_finding_line_keeps_flake8s_text_without_colour() -> None:
    from skiplint.diagnostics import Diagnostic

    d = Diagnostic("a.py", 3, 4, "SKP101", "SKP101 'x' is stashed but not declared in stash=[...]")
    assert formats.finding_line(d) == "a.py:3:5: SKP101 'x' is stashed but not declared in stash=[...]"
    assert formats.finding_line(d, fixable=True) == "a.py:3:5: SKP101 [*] 'x' is stashed but not declared in stash=[...]"


# -- -q, as flake8 -----------------------------------------------------------------------------------

def test_quiet_prints_file_names_and_very_quiet_nothing(run, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "other.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / "clean.py").write_text(CLEAN, encoding="utf-8")
    assert run("-q", "model.py", "clean.py", "other.py") == (1, "model.py\nother.py\n", "")
    assert run("--quiet", "--format", "json", "--show-source", "model.py") == (1, "model.py\n", "")
    assert run("-qq", "model.py", "other.py") == (1, "", "")
    assert run("-q", "-q", "--statistics", "model.py") == (
        1, "1     SKP101 undeclared-stash\n1     SKP106 bare-string-declaration\n"
           "2     SKP107 command-not-yielded\n", "")
    assert run("-q", "clean.py") == (0, "", "")


# -- a mistyped command ---------------------------------------------------------------------------------

@pytest.mark.parametrize("word, command", [
    ("chekc", "check"), ("chck", "check"), ("Check", "check"), ("lyaout", "layout"), ("verfiy", "verify"),
    ("rules", "rule"), ("fixx", "fix"), ("lay", "layout"),
])
def test_a_word_one_edit_from_a_command_gets_a_hint_with_the_not_found_error(
        run, word: str, command: str) -> None:
    assert run(word) == (2, f"{word}:1:1: SKP900 could not check this file: no such file or directory\n",
                         f"skiplint: {word!r} is neither a file nor a command; did you mean {command}?\n")


@pytest.mark.parametrize("word", ["tests", "chekc.py", "src/chekc", "x"])
def test_no_hint_for_a_word_far_from_every_command(run, word: str) -> None:
    assert run(word)[2] == ""


def test_no_hint_for_a_path_that_exists(run, tmp_path: Path) -> None:
    (tmp_path / "chekc").mkdir()
    (tmp_path / "chekc" / "m.py").write_text(CLEAN, encoding="utf-8")
    assert run("chekc") == (0, "", "")

