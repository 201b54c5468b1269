"""Golden fixtures: every `fixtures/**/*.py` through the CLI and through flake8.

A fixture marks each line where a diagnostic belongs with a comment `# expect: SKPnnn`
(several codes: `# expect: SKP101, SKP112`); a fixture without markers must produce nothing.
Each fixture is checked twice:

- default selection: the markers of opt-in codes are left out of what is expected;
- every opt-in code the fixtures mark selected as well: every marker is expected.

The CLI (`python -m skiplint`) and flake8 (`python -m flake8`, this plugin) must both report
exactly the marked (line, code) set, so they also agree with each other. A directory that holds a
file named `.skiplint-fixture-skip` is left out, with everything below it.

A rule's own fixtures are its examples (skiplint/rules/examples/, tests/test_rule_examples.py):
a new rule needs none here. These are the programs where rules meet: projects, imports, libraries.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from skiplint import cli, rules

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SKIP_MARKER = ".skiplint-fixture-skip"

#: Fixtures on which the analyzer disagrees with the rule catalogue (spec/rules.md).
#: Their marker tests are expected to fail (strict): remove an entry once the analyzer is fixed.
KNOWN_ANALYZER_GAPS: dict[str, str] = {}

_MARKER = re.compile(r"#\s*expect:\s*(?P<codes>SKP\d{3}(?:\s*,\s*SKP\d{3})*)")
_REPORTED = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>SKP\d{3}) ")

Expected = frozenset[tuple[int, str]]


def fixture_files(root: Path = FIXTURES, base: Path = REPO) -> list[str]:
    """Every fixture, as a path relative to `base` (the repository), in a stable order."""
    found: list[str] = []
    for directory, subdirs, files in os.walk(root):
        if SKIP_MARKER in files:
            subdirs[:] = []
            continue
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                found.append(Path(directory, name).relative_to(base).as_posix())
    return sorted(found)


def markers(path: str) -> Expected:
    """The (line, code) pairs a fixture's `# expect:` comments ask for (comments only, not strings)."""
    text = (REPO / path).read_text(encoding="utf-8")
    found: set[tuple[int, str]] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.COMMENT:
            continue
        match = _MARKER.search(token.string)
        if match:
            for code in re.split(r"\s*,\s*", match.group("codes")):
                found.add((token.start[0], code))
    return frozenset(found)


def expected(path: str, mode: str) -> Expected:
    marks = markers(path)
    if mode == "default":
        return frozenset(m for m in marks if m[1] not in rules.OPT_IN)
    return marks


FILES = fixture_files()
#: The opt-in codes these fixtures mark: the "opt-in" mode selects them (a new opt-in rule is
#: tested on its own examples, and here once a fixture marks it).
OPT_IN = tuple(sorted({code for path in FILES for _, code in markers(path)} & rules.OPT_IN))
MODES = ("default", "opt-in")


def _parse(output: str) -> dict[str, set[tuple[int, str]]]:
    found: dict[str, set[tuple[int, str]]] = {}
    for line in output.splitlines():
        match = _REPORTED.match(line)
        if match:
            path = Path(match.group("path")).as_posix()
            found.setdefault(path, set()).add((int(match.group("line")), match.group("code")))
    return found


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def cli_reports() -> dict[str, dict[str, set[tuple[int, str]]]]:
    """What `python -m skiplint` reports for all fixtures at once, per mode."""
    reports = {}
    for mode in MODES:
        extra = ["--extend-select", ",".join(OPT_IN)] if mode == "opt-in" else []
        done = _run(["skiplint", "--isolated", *extra, *FILES])
        assert done.returncode in (0, 1), done.stdout + done.stderr
        reports[mode] = _parse(done.stdout)
    return reports


@pytest.fixture(scope="module")
def flake8_reports() -> dict[str, dict[str, set[tuple[int, str]]]]:
    """What flake8 reports (SKP codes only) for all fixtures at once, per mode.

    Default mode is `flake8 --select SKP`: the plugin keeps opt-in codes off unless they are
    named in full, exactly as the CLI does.
    """
    reports = {}
    for mode in MODES:
        extra = ["--select", "SKP", "--extend-select", ",".join(OPT_IN)] if mode == "opt-in" \
            else ["--select", "SKP"]
        done = _run(["flake8", "--isolated", *extra, *FILES])
        assert "Traceback" not in done.stderr, done.stderr
        reports[mode] = _parse(done.stdout)
    return reports


def _param(path: str, *extra: object) -> object:
    marks = [pytest.mark.xfail(reason=KNOWN_ANALYZER_GAPS[path], strict=True)] \
        if path in KNOWN_ANALYZER_GAPS else []
    return pytest.param(*extra, path, id="-".join([*map(str, extra), path]), marks=marks)


CASES = [_param(path, mode) for mode in MODES for path in FILES]


def _describe(got: set[tuple[int, str]], want: Expected) -> str:
    return f"missing {sorted(want - got)}, unexpected {sorted(got - want)}"


@pytest.mark.parametrize("mode, path", CASES)
def test_cli_reports_the_marked_lines(cli_reports: dict, mode: str, path: str) -> None:
    got = cli_reports[mode].get(path, set())
    want = expected(path, mode)
    assert got == want, _describe(got, want)


@pytest.mark.parametrize("mode, path", CASES)
def test_flake8_reports_the_marked_lines(flake8_reports: dict, mode: str, path: str) -> None:
    got = flake8_reports[mode].get(path, set())
    want = expected(path, mode)
    assert got == want, _describe(got, want)


def test_flake8_default_selection_reports_what_select_skp_reports(flake8_reports: dict) -> None:
    done = _run(["flake8", "--isolated", *FILES])
    assert "Traceback" not in done.stderr, done.stderr
    assert _parse(done.stdout) == flake8_reports["default"]


@pytest.mark.parametrize("mode", MODES)
def test_cli_and_flake8_agree(cli_reports: dict, flake8_reports: dict, mode: str) -> None:
    """Independently of the markers (so also on the known gaps), both front ends say the same."""
    assert cli_reports[mode] == flake8_reports[mode]


@pytest.mark.parametrize("path", [_param(path) for path in FILES])
def test_exit_status(path: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["--isolated", "-j", "1", str(REPO / path)])
    capsys.readouterr()
    assert status == (1 if expected(path, "default") else 0)


def test_fixtures_exist() -> None:
    assert len(FILES) >= 40


def test_markers_name_known_codes() -> None:
    unknown = {(path, code) for path in FILES for _, code in markers(path) if code not in rules.RULES}
    assert not unknown


def test_markers_sit_in_comments_only() -> None:
    """`# expect:` inside a string is not a marker (resolution_lookalike_text.py has none)."""
    assert markers("fixtures/resolution_lookalike_text.py") == frozenset()


def test_skip_marker_directory_is_left_out(tmp_path: Path) -> None:
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "a.py").write_text("")
    (tmp_path / "skipped" / "deeper").mkdir(parents=True)
    (tmp_path / "skipped" / SKIP_MARKER).write_text("")
    (tmp_path / "skipped" / "b.py").write_text("")
    (tmp_path / "skipped" / "deeper" / "c.py").write_text("")
    assert fixture_files(tmp_path, tmp_path) == ["kept/a.py"]
