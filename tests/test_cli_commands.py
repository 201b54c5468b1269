"""The command line as a front door: commands, rule help, validated options, file-level noqa,
discovery, stdin, and one-line errors for hostile trees and outputs.

The CLI runs in this process (tests/inprocess.py) where a process proves nothing more; a process
where the test is about one: a closed standard output, what a fresh interpreter imports."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from skiplint import cli, config, filenoqa, rules, sources
from tests import inprocess

REPO = Path(__file__).resolve().parent.parent

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
FINDING = "9:15: SKP101 'extra' is stashed but not declared in stash=[...]"

BARE_STRING = '''\
from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash="skip")
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x
'''


def skiplint(cwd: Path, *args: str, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess[str]:
    """`skiplint ARGS` in `cwd`, run in this process."""
    return inprocess.skiplint(args, cwd, stdin)


def write(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


@pytest.fixture
def inproc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run the CLI in-process in tmp_path: (status, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)

    def _run(*argv: str) -> tuple[int, str, str]:
        status = cli.main(list(argv))
        out, err = capsys.readouterr()
        return status, out, err
    return _run


# -- commands ------------------------------------------------------------------------------------

def test_help_lists_every_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    done = skiplint(tmp_path, "--help")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[0] == "usage: skiplint [-h] [--version] [COMMAND] [ARGS ...]"
    listed = [line.split()[0] for line in lines if line.startswith("    ") and line.split()]
    assert listed == ["check", "fix", "layout", "verify", "port", "rule", "server"]


@pytest.mark.parametrize("command, usage", [
    ("check", "usage: skiplint check "),
    ("fix", "usage: skiplint fix "),
    ("layout", "usage: skiplint layout "),
    ("verify", "usage: skiplint verify "),
    ("port", "usage: skiplint port "),
    ("rule", "usage: skiplint rule "),
    ("server", "usage: skiplint server "),
])
def test_each_command_has_its_own_help(tmp_path: Path, command: str, usage: str) -> None:
    done = skiplint(tmp_path, command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(usage)


def test_a_folder_named_like_a_command_is_checked_with_check_or_a_path(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"fix/model.py": UNDECLARED})
    expected = f"fix/model.py:{FINDING}\n"
    assert inproc("check", "--isolated", "-j", "1", "fix") == (1, expected, "")
    assert inproc("--isolated", "-j", "1", "./fix") == (1, f"./fix/model.py:{FINDING}\n", "")
    assert inproc("check", "--isolated", "-j", "1") == (1, f"./fix/model.py:{FINDING}\n", "")


def test_the_fix_command_runs_the_fixer_and_says_so_when_a_path_has_its_name(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"fix/model.py": BARE_STRING})
    status, out, err = inproc("fix")
    assert status == 0 and out == ""
    assert err.splitlines()[0] == ("skiplint: running the fix command; to check the path 'fix', write "
                                   "`skiplint check fix` or `skiplint ./fix`")
    assert '@skippable(stash=["skip"])' in (tmp_path / "fix" / "model.py").read_text(encoding="utf-8")


def test_check_is_the_default_and_takes_the_same_options(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED})
    assert inproc("--isolated", "-j", "1", "model.py") == inproc("check", "--isolated", "-j", "1", "model.py")


# -- skiplint rule -------------------------------------------------------------------------------

def test_rule_explains_one_code(inproc) -> None:
    status, out, err = inproc("rule", "SKP101")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[:7] == [
        "SKP101 undeclared-stash",
        "",
        "Finds: stash(name, ...) is yielded for a name not declared in stash=.",
        "Message: SKP101 '{name}' is stashed but not declared in stash=[...]",
        "Reported at: the `stash(...)` call.",
        "Run-time failure it prevents: RuntimeError: 'x' has not been declared as stashable.",
        "",
    ]
    assert lines[7:9] == ["Bad:", ""]
    assert '            yield stash("extra", x * 2)' in lines
    assert "Fixed:" in lines and '    @skippable(stash=["skip", "extra"])' in lines
    assert lines[-1] == "Documentation: https://github.com/skiplint/skiplint/blob/main/docs/rules.md#skp101"


def test_rule_all_and_prefix_and_json(inproc) -> None:
    status, out, _ = inproc("rule", "--all")
    assert status == 0
    headers = [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0] in rules.RULES
               and not line.startswith(" ")]
    assert headers == list(rules.RULES)
    status, out, _ = inproc("rule", "SKP2")
    assert [line.split()[0] for line in out.splitlines() if line.startswith("SKP2")] == [
        c for c in rules.RULES if c.startswith("SKP2")]
    status, out, _ = inproc("rule", "--format", "json", "skp116")
    payload = json.loads(out)
    assert [p["code"] for p in payload] == ["SKP116"] and payload[0]["opt_in"] is True
    assert payload[0]["failure"] == rules.RULES["SKP116"].failure


@pytest.mark.parametrize("code", list(rules.RULES))
def test_rule_takes_every_rules_name_as_its_code(inproc, code: str) -> None:
    by_code = inproc("rule", "--format", "json", code)
    by_name = inproc("rule", "--format", "json", rules.RULES[code].name)
    assert by_name == by_code and by_name[0] == 0
    assert [item["code"] for item in json.loads(by_name[1])] == [code]


def test_rule_takes_a_comma_separated_list_of_codes_and_names(inproc) -> None:
    status, out, err = inproc("rule", "--format", "json", "SKP101,SKP102")
    assert (status, err) == (0, "") and [item["code"] for item in json.loads(out)] == ["SKP101", "SKP102"]
    status, out, _ = inproc("rule", "--format", "json", "undeclared-pop, SKP3", "SKP101")
    assert status == 0
    assert [item["code"] for item in json.loads(out)] == [
        "SKP101", "SKP102", *(c for c in rules.RULES if c.startswith("SKP3"))]
    status, out, _ = inproc("rule", "Undeclared-Stash,stash-never-popped")
    assert status == 0
    assert [line.split()[0] for line in out.splitlines() if line.split() and line.split()[0] in rules.RULES
            and len(line.split()) == 2] == ["SKP101", "SKP202"]


def test_rule_with_an_unknown_name_names_the_nearest(inproc) -> None:
    assert inproc("rule", "undeclared-stsh") == (
        2, "", "skiplint rule: unknown rule 'undeclared-stsh': no rule has this name, code or prefix; "
               "did you mean undeclared-stash?\n")
    assert inproc("rule", "SKP101,nothing-like-it") == (
        2, "", "skiplint rule: unknown rule 'nothing-like-it': no rule has this name, code or prefix; "
               "`skiplint rule` lists them\n")


def test_rule_with_an_unknown_code_names_the_nearest(inproc) -> None:
    assert inproc("rule", "SKP1O1") == (
        2, "", "skiplint rule: unknown code 'SKP1O1': no rule has this code or prefix; did you mean SKP101?\n")


def test_rule_without_a_code_lists_every_rule(inproc) -> None:
    status, out, err = inproc("rule")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == list(rules.RULES)
    # Code, name and summary in three columns two spaces apart, the summaries lined up after the
    # longest name (so the width follows the rules, not this test).
    columns = [re.split(r"  +", line, maxsplit=2) for line in lines]
    assert columns[0] == ["SKP101", "undeclared-stash", "stash(name, ...) is yielded for a name not declared in stash="]
    assert columns[list(rules.RULES).index("SKP116")] == [
        "SKP116", "discarded-pop (opt-in)", "the tensor from yield pop(name) is discarded"]
    starts = {line.index(summary) for line, (_, _, summary) in zip(lines, columns)}
    assert starts == {len("SKP101  ") + max(len(name) for _, name, _ in columns) + 2}
    status, out, _ = inproc("rule", "--format", "json")
    assert status == 0 and [item["code"] for item in json.loads(out)] == list(rules.RULES)


def test_show_url_follows_each_finding(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED})
    status, out, _ = inproc("--isolated", "-j", "1", "--show-url", "model.py")
    assert status == 1
    assert out == (f"model.py:{FINDING}\n"
                   "    https://github.com/skiplint/skiplint/blob/main/docs/rules.md#skp101\n")
    assert inproc("--isolated", "-j", "1", "model.py")[1] == f"model.py:{FINDING}\n"  # off by default


# -- options a CI depends on ---------------------------------------------------------------------

@pytest.mark.parametrize("args, line", [
    (("--select", "SKP1O1"),
     "skiplint: --select: unknown code 'SKP1O1': no rule has this code or prefix; did you mean SKP101?"),
    (("--select", "E501"),
     "skiplint: --select: unknown code 'E501': no rule has this code or prefix; skiplint's codes are "
     "SKPnnn (`skiplint rule` lists them)"),
    (("--ignore", "SKP1O1"),
     "skiplint: --ignore: unknown code 'SKP1O1': no rule has this code or prefix; did you mean SKP101?"),
    (("--extend-select", "SKP999"),
     "skiplint: --extend-select: unknown code 'SKP999': no rule has this code or prefix; did you mean SKP900?"),
    (("--config", "missing.toml"), "skiplint: missing.toml: cannot read: no such file or directory"),
])
def test_a_vacuous_option_is_exit_2_with_one_line(inproc, tmp_path: Path, args: tuple[str, ...],
                                                  line: str) -> None:
    write(tmp_path, {"model.py": UNDECLARED})
    assert inproc("-j", "1", *args, "model.py") == (2, "", line + "\n")


def test_an_explicit_config_that_is_not_valid_toml_is_exit_2(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED, "bad.toml": "[tool.skiplint\n"})
    status, out, err = inproc("-j", "1", "--config", "bad.toml", "model.py")
    assert (status, out) == (2, "")
    assert err.startswith("skiplint: bad.toml: not valid TOML: ") and err.count("\n") == 1


def test_an_unreadable_config_found_on_the_way_is_exit_2_and_the_files_are_checked(
        inproc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"sub/model.py": UNDECLARED, "sub/tox.ini": "[skiplint]\nselect = SKP2\n"})
    real = sources.read_bytes

    def denied(path: str) -> bytes:
        if path.endswith("tox.ini"):
            raise sources.SourceError("permission denied")
        return real(path)

    monkeypatch.setattr(sources, "read_bytes", denied)
    status, out, err = inproc("-j", "1", "sub")
    assert status == 2
    assert out == f"sub/model.py:{FINDING}\n"  # checked with the defaults above the unreadable file
    assert err == "skiplint: sub/tox.ini: cannot read: permission denied\n"


def test_lowercase_codes_and_prefixes_stay_accepted(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED})
    assert inproc("--isolated", "-j", "1", "--select", "skp1", "--ignore", "SKP9", "model.py")[0] == 1


@pytest.mark.parametrize("word, nearest", [
    ("SKP1O1", "SKP101"), ("SKP999", "SKP900"), ("SKO101", "SKP101"), ("SKP1l6", "SKP116"), ("E501", None),
])
def test_nearest_code(word: str, nearest: Optional[str]) -> None:
    assert config.nearest_code(word) == nearest


# -- file-level noqa -----------------------------------------------------------------------------

FILE_NOQA = [
    ("# flake8: noqa", True),
    ("# flake8: noqa: E501", True),      # flake8 5-7 skip the whole file for this too
    ("# flake8:noqa", True),
    ("# FLAKE8: NOQA", True),
    ("# flake8=noqa", True),
    ("    # flake8: noqa", True),
    ("# flake8: noqa because generated", True),
    ("#flake8: noqa", False),
    ("# flake8 : noqa", False),
    ("x = 1  # flake8: noqa", False),
]


@pytest.mark.parametrize("comment, skipped", FILE_NOQA)
def test_file_level_noqa_as_flake8_reads_it(inproc, tmp_path: Path, comment: str, skipped: bool) -> None:
    write(tmp_path, {"model.py": UNDECLARED.replace("from torch import nn\n", "from torch import nn\n" + comment + "\n")})
    status, out, _ = inproc("--isolated", "-j", "1", "model.py")
    assert (status, out == "") == ((0, True) if skipped else (1, False))
    assert filenoqa.skips_file((tmp_path / "model.py").read_text(encoding="utf-8")) is skipped


def test_flake8_agrees_on_file_level_noqa(tmp_path: Path) -> None:
    for i, (comment, _) in enumerate(FILE_NOQA):
        write(tmp_path, {f"m{i}.py": UNDECLARED.replace("from torch import nn\n",
                                                          "from torch import nn\n" + comment + "\n")})
    done = inprocess.flake8(["--isolated", "--select", "SKP", "-j", "1", "."], tmp_path)
    flagged = {line.split(":")[0].lstrip("./") for line in done.stdout.splitlines()}
    assert flagged == {f"m{i}.py" for i, (_, skipped) in enumerate(FILE_NOQA) if not skipped}


@pytest.mark.parametrize("comment, skipped", [
    ("# skiplint: noqa", True), ("# skiplint=noqa", True), ("  # SKIPLINT: NOQA", True),
    ("x = 1  # skiplint: noqa", False), ("#skiplint: noqa", False),
])
def test_skiplint_noqa_skips_the_file(inproc, tmp_path: Path, comment: str, skipped: bool) -> None:
    write(tmp_path, {"model.py": UNDECLARED + comment + "\n"})
    assert inproc("--isolated", "-j", "1", "model.py")[0] == (0 if skipped else 1)


def test_flake8_honours_skiplint_noqa(tmp_path: Path) -> None:
    """`# skiplint: noqa` on its own line silences the plugin too; in a code line it does not."""
    write(tmp_path, {"quiet.py": UNDECLARED + "# skiplint: noqa\n",
                     "loud.py": UNDECLARED + "x = 1  # skiplint: noqa\n"})
    done = inprocess.flake8(["--isolated", "--select", "SKP", "-j", "1", "."], tmp_path)
    assert done.stdout.splitlines() == ["./loud.py:" + FINDING]


def test_fix_with_a_missing_config_is_exit_2_and_fixes_nothing(tmp_path: Path) -> None:
    source = "from torchgpipe.skip import skippable\n\n\n@skippable(stash='skip')\nclass S:\n    pass\n"
    write(tmp_path, {"model.py": source})
    done = skiplint(tmp_path, "fix", "--config", "missing.toml", "model.py")
    assert (done.returncode, done.stdout) == (2, "")
    assert len(done.stderr.splitlines()) == 1 and "missing.toml" in done.stderr
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == source


def test_file_level_noqa_also_covers_a_file_that_does_not_parse(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"broken.py": "# flake8: noqa\nimport torchgpipe\ndef f(:\n"})
    assert inproc("--isolated", "-j", "1", "broken.py") == (0, "", "")  # flake8 skips it too (no E999)


# -- discovery -----------------------------------------------------------------------------------

def found(root: Path, **overrides: str) -> list[str]:
    """What a walk of `root` yields, as `skiplint .` run there would check it."""
    finder = config.Finder(isolated=True, overrides={k: tuple(v.split(",")) for k, v in overrides.items()})
    cwd = os.getcwd()
    os.chdir(root)
    try:
        return [p.replace(os.sep, "/") for p, _ in finder.discover(["."])]
    finally:
        os.chdir(cwd)


TREE = {
    "pkg/model.py": "x = 1\n", "build/lib/pkg/model.py": "x = 1\n", "dist/x.py": "x = 1\n",
    "lib/site-packages/dep.py": "x = 1\n", ".venv-tox/lib/mod.py": "x = 1\n", ".venv-tox/pyvenv.cfg": "home = /\n",
    "env3/lib/mod.py": "x = 1\n", "env3/pyvenv.cfg": "home = /\n", ".venv/a.py": "x = 1\n",
    "generated/gen.py": "x = 1\n", "top.py": "x = 1\n",
}


def test_build_dist_site_packages_and_virtual_environments_are_not_walked(tmp_path: Path) -> None:
    write(tmp_path, TREE)
    assert found(tmp_path) == ["./top.py", "./generated/gen.py", "./pkg/model.py"]


def test_exclude_replaces_the_built_in_list_and_extend_exclude_adds(tmp_path: Path) -> None:
    write(tmp_path, TREE)
    assert found(tmp_path, exclude="generated") == [
        "./top.py", "./.venv/a.py", "./build/lib/pkg/model.py", "./dist/x.py", "./lib/site-packages/dep.py",
        "./pkg/model.py"]  # virtual environments stay skipped whatever the list
    assert found(tmp_path, extend_exclude="generated") == ["./top.py", "./pkg/model.py"]


def test_a_file_named_on_the_command_line_is_always_checked(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"build/model.py": UNDECLARED, ".venv/model.py": UNDECLARED})
    assert inproc("--isolated", "-j", "1") == (0, "", "skiplint: no Python files to check in .\n")
    assert inproc("--isolated", "-j", "1", "build/model.py", ".venv/model.py") == (
        1, f"build/model.py:{FINDING}\n.venv/model.py:{FINDING}\n", "")
    assert inproc("--isolated", "-j", "1", "build")[0] == 1  # a named directory is walked


def test_what_git_ignores_is_not_walked(inproc, tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED, "out/model.py": UNDECLARED, "keep/gen_model.py": UNDECLARED,
                     "keep/model.py": UNDECLARED, ".gitignore": "out/\ngen_*.py\n", ".git/HEAD": "ref: x\n"})
    status, out, _ = inproc("--isolated", "-j", "1")
    assert status == 1
    assert [line.split(":")[0] for line in out.splitlines()] == ["./model.py", "./keep/model.py"]
    assert [line.split(":")[0] for line in inproc("--isolated", "-j", "1", "out")[1].splitlines()] == [
        "out/model.py"]  # named on purpose
    assert inproc("--isolated", "-j", "1", "keep/gen_model.py")[0] == 1


def test_outside_a_git_work_tree_gitignore_is_not_read(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "x = 1\n", "out/b.py": "x = 1\n", ".gitignore": "out/\n"})
    if any((parent / ".git").exists() for parent in [tmp_path, *tmp_path.parents]):
        pytest.skip("the temporary directory is inside a git work tree")
    assert found(tmp_path) == ["./a.py", "./out/b.py"]


# -- hostile trees and outputs -------------------------------------------------------------------

def test_an_unlistable_directory_is_skp900_and_the_rest_is_checked(
        inproc, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"a/model.py": UNDECLARED, "locked/model.py": UNDECLARED})
    real = os.scandir

    def scandir(path: str):  # type: ignore[no-untyped-def]
        if os.path.basename(str(path)) == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", lambda path: scandir(path))
    status, out, _ = inproc("--isolated", "-j", "1", ".")
    assert status == 2
    assert out.splitlines() == [
        f"./a/model.py:{FINDING}",
        "./locked:1:1: SKP900 could not check this file: cannot list directory: permission denied",
    ]


def test_a_directory_tree_1100_deep_is_walked(tmp_path: Path) -> None:
    levels = [tmp_path]
    for _ in range(1100):  # os.makedirs and shutil.rmtree would recurse once per level
        levels.append(levels[-1] / "d")
        levels[-1].mkdir()
    (levels[-1] / "model.py").write_text(UNDECLARED, encoding="utf-8")
    (tmp_path / "tox.ini").write_text("[skiplint]\nignore = SKP103\n", encoding="utf-8")
    try:
        done = skiplint(tmp_path, "-j", "1")
    finally:
        (levels[-1] / "model.py").unlink()
        for level in reversed(levels[1:]):
            level.rmdir()
    assert "Traceback" not in done.stderr
    assert done.returncode == 1
    assert done.stdout == "./" + "d/" * 1100 + f"model.py:{FINDING}\n"


def test_output_to_a_missing_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED})
    done = skiplint(tmp_path, "--isolated", "-j", "1", "--output", "no/such/dir/report.txt", "model.py")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("skiplint: --output no/such/dir/report.txt: cannot write the report: "
                           "No such file or directory\n")


def test_output_to_a_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED})
    (tmp_path / "out").mkdir()
    done = skiplint(tmp_path, "--isolated", "-j", "1", "--output", "out", "model.py")
    assert done.returncode == 2
    assert done.stderr == "skiplint: --output out: cannot write the report: Is a directory\n"


def test_a_closed_stdout_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write(tmp_path, {f"m{i}.py": UNDECLARED for i in range(3)})
    read, write_end = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-j", "1", "."], cwd=tmp_path,
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert done.returncode == 2
    assert done.stderr == "skiplint: standard output was closed before the whole report was written\n"


# -- standard input ------------------------------------------------------------------------------

def test_stdin_with_a_display_name(tmp_path: Path) -> None:
    done = skiplint(tmp_path, "--isolated", "-", "--stdin-display-name", "m.py", stdin=UNDECLARED.encode())
    assert (done.returncode, done.stdout, done.stderr) == (1, f"m.py:{FINDING}\n", "")


def test_stdin_without_a_name_is_stdin(tmp_path: Path) -> None:
    done = skiplint(tmp_path, "--isolated", "-", stdin=UNDECLARED.encode())
    assert (done.returncode, done.stdout) == (1, f"stdin:{FINDING}\n")


def test_the_display_name_decides_the_configuration(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.skiplint.per-file-ignores]\n"legacy/*.py" = ["SKP101"]\n'})
    assert skiplint(tmp_path, "-", "--stdin-display-name", "legacy/m.py", stdin=UNDECLARED.encode()).returncode == 0
    done = skiplint(tmp_path, "-", "--stdin-display-name", "new/m.py", stdin=UNDECLARED.encode())
    assert (done.returncode, done.stdout) == (1, f"new/m.py:{FINDING}\n")


def test_stdin_among_files_keeps_its_place_and_show_source_reads_the_text(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": UNDECLARED, "b.py": UNDECLARED})
    done = skiplint(tmp_path, "--isolated", "-j", "1", "--show-source", "a.py", "-", "b.py",
                    "--stdin-display-name", "b.py", stdin=UNDECLARED.replace('"extra", x)', '"extra",  x)').encode())
    assert done.stdout.splitlines()[::3] == [f"a.py:{FINDING}", f"b.py:{FINDING}", f"b.py:{FINDING}"]
    assert done.stdout.splitlines()[4] == '        yield stash("extra",  x)'  # the buffer, not b.py


def test_undecodable_stdin_is_skp900(tmp_path: Path) -> None:
    done = skiplint(tmp_path, "--isolated", "-", "--stdin-display-name", "m.py", stdin=b"import torchgpipe\n\0\n")
    assert done.returncode == 2
    assert done.stdout == "m.py:1:1: SKP900 could not check this file: contains NUL bytes; not a Python source file\n"


# -- nothing heavy at import time ----------------------------------------------------------------

#: In a fresh interpreter: what importing the CLI loads of libcst, then, in a child forked from it for
#: each command line (so that one's imports do not count for the next), whether running it loads
#: libcst. One process for every case.
_IMPORTS = """\
import json, os, sys
import skiplint.cli, skiplint.config, skiplint.filenoqa
from skiplint import cli
print(json.dumps(sorted(m for m in sys.modules if m == 'libcst' or m.startswith('libcst.'))), flush=True)
for argv in json.loads(sys.argv[1]) if hasattr(os, 'fork') else []:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        try:
            cli.main(argv)
        except SystemExit:
            pass
        os.write(write, json.dumps([argv, 'libcst' in sys.modules]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, 'rb') as answer:
        said = answer.read()
    os.waitpid(pid, 0)
    print(said.decode() or json.dumps([argv, 'no answer']), flush=True)
"""
COMMAND_LINES = [["--help"], ["check", "--help"], ["rule", "SKP101"], ["--select", "SKP1O1"]]


@pytest.fixture(scope="module")
def imports(tmp_path_factory: pytest.TempPathFactory) -> list[object]:
    done = subprocess.run([sys.executable, "-c", _IMPORTS, json.dumps(COMMAND_LINES)],
                          cwd=tmp_path_factory.mktemp("imports"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_cli_and_config_do_not_import_libcst(imports: list[object]) -> None:
    assert imports[0] == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="each command line runs in a forked child")
@pytest.mark.parametrize("argv", COMMAND_LINES)
def test_help_rule_and_option_errors_do_not_import_libcst(imports: list[object], argv: list[str]) -> None:
    assert [argv, False] in imports[1:], imports


def test_format_names_are_the_reporters() -> None:
    from skiplint import formats

    assert cli.FORMAT_NAMES == tuple(formats.FORMATS)


RECORDED: list[list[str]] = []


def _record(argv: list[str]) -> int:
    RECORDED.append(list(argv))
    return 7


@pytest.mark.parametrize("command", ["fix", "layout", "verify", "server"])
def test_delegated_commands_get_the_rest_of_the_command_line_unchanged(
        monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    monkeypatch.setitem(cli.DELEGATED, command, "tests.test_cli_commands:_record")
    RECORDED.clear()
    assert cli.main([command, "m.py:pipe", "--balance", "1,1", "--format", "json", "-"]) == 7
    assert RECORDED == [["m.py:pipe", "--balance", "1,1", "--format", "json", "-"]]
