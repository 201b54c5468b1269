"""Configuration: which file wins, every key, and mistakes reported in one line each, never a crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import cli, config, imports
from tests.messages import said

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "fixtures" / "config_project"

TYPO_101 = "9:15: " + said("SKP101", name="skp")
TYPO_103 = "6:19: " + said("SKP103", name="skip")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_nearest_configuration_wins(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT)
    status, out, err = run(capsys, "-j", "1", ".")
    assert status == 1
    assert out.splitlines() == [
        f"./aliased.py:{TYPO_101}",        # pyproject: ignore SKP103; api-aliases make it checked
        f"./model.py:{TYPO_101}",          # pyproject (legacy_model.py: per-file-ignores)
        f"./bad/layer.py:{TYPO_103}",      # bad/tox.ini: ignore = SKP101 still applies
        f"./cfg/layer.py:{TYPO_103}",      # cfg/setup.cfg: defaults plus SKP116
        f"./cfg/layer.py:{TYPO_101}",
        f"./sub/layer.py:{TYPO_103}",      # sub/tox.ini: select = SKP103
        f"./sub/deeper/layer.py:{TYPO_103}",  # nearest above it: sub/tox.ini
    ]                                      # generated/ is excluded by pyproject
    assert err.splitlines() == [
        "skiplint: setup.cfg: [skiplint]: ignored: pyproject.toml in the same directory takes precedence",
        "skiplint: bad/tox.ini: [skiplint] selcet: unknown key; did you mean select? (known: select, ignore, "
        "extend-select, exclude, extend-exclude, per-file-ignores, api-aliases, max-unroll)",
        "skiplint: bad/tox.ini: [skiplint] ignore: unknown code 'SKP999': no rule has this code or prefix; "
        "did you mean SKP900?",
        "skiplint: bad/tox.ini: [skiplint] max-unroll: expected a whole number >= 0, got 'many'",
    ]


def test_command_line_overrides_and_isolated(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT)
    _, out, _ = run(capsys, "--select", "SKP101", "sub/layer.py", "model.py")
    assert out.splitlines() == [f"sub/layer.py:{TYPO_101}", f"model.py:{TYPO_101}"]
    _, out, err = run(capsys, "--isolated", "generated/gen.py", "aliased.py")
    assert out.splitlines() == [f"generated/gen.py:{TYPO_103}", f"generated/gen.py:{TYPO_101}"]
    assert err == ""
    _, out, _ = run(capsys, "--config", "sub/tox.ini", "model.py")
    assert out.splitlines() == [f"model.py:{TYPO_103}"]


def test_files_named_by_pre_commit_are_excluded_too(capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(PROJECT)
    status, out, _ = run(capsys, "generated/gen.py", "legacy_model.py")
    assert (status, out) == (0, "")


def test_finder_reads_every_key_from_toml() -> None:
    settings = config.Finder().for_file(str(PROJECT / "model.py"))
    assert settings.source == str(PROJECT / "pyproject.toml")
    assert settings.ignore == ("SKP103",)
    assert settings.exclude == ("generated",)
    assert settings.per_file_ignores == (("legacy_*.py", ("SKP101",)),)
    assert settings.api_aliases == (("myproj.skip", "torchgpipe.skip"),)
    assert settings.max_unroll == 16  # for the composition analysis (engine option max_unroll)
    assert settings.ignored_in(str(PROJECT / "legacy_model.py")) == ("SKP101",)
    assert settings.ignored_in(str(PROJECT / "model.py")) == ()


def ini(tmp_path: Path, name: str, body: str) -> tuple[config.Config, list[str]]:
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    settings, problems = config.load(str(path))
    assert settings is not None
    return settings, [str(p) for p in problems]


def test_ini_values(tmp_path: Path) -> None:
    settings, problems = ini(tmp_path, "setup.cfg", """
[skiplint]
select = SKP1, SKP2
extend_select = SKP116
exclude =
    build,
    docs/examples
per-file-ignores =
    tests/*.py: SKP116 SKP901
    legacy.py:SKP1
api-aliases =
    mypkg.layers.skippable = torchgpipe.skip.skippable,
    mypkg.skip = fairscale.nn.pipe.skip
max-unroll = 8
""")
    assert problems == []
    assert settings.select == ("SKP1", "SKP2") and settings.extend_select == ("SKP116",)
    assert settings.exclude == ("build", "docs/examples")
    assert settings.per_file_ignores == (("tests/*.py", ("SKP116", "SKP901")), ("legacy.py", ("SKP1",)))
    assert settings.api_aliases == (("mypkg.layers.skippable", "torchgpipe.skip.skippable"),
                                    ("mypkg.skip", "fairscale.nn.pipe.skip"))
    assert settings.max_unroll == 8
    assert settings.excludes(str(tmp_path / "docs" / "examples" / "a.py"))
    assert settings.excludes(str(tmp_path / "src" / "build"))
    assert not settings.excludes(str(tmp_path / "src" / "docs" / "examples"))


@pytest.mark.parametrize("body, message", [
    ("[tool.skiplint]\nselect = 3\n", "[tool.skiplint] select: expected a string or a list of strings, got 3"),
    ("[tool.skiplint]\nmax-unroll = -1\n", "[tool.skiplint] max-unroll: expected a whole number >= 0, got -1"),
    ("[tool.skiplint]\nmax-unroll = true\n", "[tool.skiplint] max-unroll: expected a whole number >= 0, got True"),
    ("[tool.skiplint]\napi-aliases = {'x.y' = 'torch.nn.Linear'}\n",
     "[tool.skiplint] api-aliases: 'x.y': 'torch.nn.Linear' is not a name of the skip API"),
    ("[tool.skiplint]\napi-aliases = {'1x' = 'torchgpipe.skip'}\n",
     "[tool.skiplint] api-aliases: '1x' is not a dotted name"),
    ("[tool.skiplint]\nper-file-ignores = 5\n", "[tool.skiplint] per-file-ignores: expected a table"),
    ("[tool.skiplint]\nper-file-ignores = {'a.py' = ['E501']}\n",
     "[tool.skiplint] per-file-ignores 'a.py': unknown code 'E501'"),
    ("[tool.skiplint]\nfoo-bar = 1\n", "[tool.skiplint] foo-bar: unknown key"),
    ("[tool.skiplint\n", "not valid TOML, ignored"),
    ("[tool]\nskiplint = 3\n", "[tool.skiplint]: expected a table, ignored"),
])
def test_bad_values_are_one_line_problems(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(body, encoding="utf-8")
    finder = config.Finder()
    settings = finder.for_file(str(tmp_path / "m.py"))
    assert isinstance(settings, config.Config)
    problems = [str(p) for p in finder.problems]
    assert len(problems) == 1, problems
    assert "\n" not in problems[0] and "pyproject.toml" in problems[0]
    assert message in problems[0]


def test_bad_ini_files_never_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tox.ini").write_text("[skiplint]\nselect = SKP1\nselect = SKP2\n", encoding="utf-8")
    (tmp_path / "m.py").write_text("import torchgpipe\n", encoding="utf-8")
    status, out, err = run(capsys, "m.py")
    assert status == 0 and out == ""
    assert err.startswith("skiplint: tox.ini: not a valid INI file, ignored: ") and err.count("\n") == 1


def test_api_aliases_reach_the_prefilter_and_the_import_table(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(
        "from mypkg.layers import skippable as sk, stash\n"
        "@sk(stash=['a'])\nclass A:\n    def forward(self, x):\n        yield stash('b', x)\n        return x\n",
        encoding="utf-8")
    assert run(capsys, "m.py")[:2] == (0, "")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.skiplint.api-aliases]\n"mypkg.layers.skippable" = "torchgpipe.skip.skippable"\n'
        '"mypkg.layers.stash" = "torchgpipe.skip.stash"\n', encoding="utf-8")
    status, out, _ = run(capsys, "m.py")
    assert status == 1 and [line.split(": ")[1].split()[0] for line in out.splitlines()] == ["SKP103", "SKP101"]
    assert "mypkg.layers.stash" not in imports.API  # the API's own table: aliases are the session's


def test_flake8_reads_the_same_settings(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "from mypkg.skip import skippable, stash\n"
        "@skippable(stash=['a'])\nclass A:\n    def forward(self, x):\n        yield stash('b', x)\n        return x\n",
        encoding="utf-8")
    (tmp_path / "setup.cfg").write_text(
        "[flake8]\nselect = SKP\nper-file-ignores = m.py:SKP103\n"
        "skiplint-api-aliases =\n    mypkg.skip = torchgpipe.skip\nskiplint-max-unroll = 4\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "flake8", "m.py"], cwd=tmp_path, capture_output=True, text=True)
    assert done.stdout.splitlines() == ["m.py:5:15: SKP101 'b' is stashed but not declared in stash=[...]"]
    assert done.stderr == ""
    (tmp_path / "setup.cfg").write_text(
        "[flake8]\nselect = SKP\nskiplint-max-unroll = lots\nskiplint-api-aliases = mypkg.skip = nothing\n",
        encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "flake8", "-j", "1", "m.py"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert done.stdout == ""  # the alias was refused, so the file does not use the API
    assert done.stderr.splitlines() == [
        "skiplint: flake8 configuration: [flake8] skiplint-api-aliases: 'mypkg.skip': 'nothing' is not a name "
        "of the skip API (e.g. 'torchgpipe.skip.skippable' or 'torchgpipe.skip')",
        "skiplint: flake8 configuration: [flake8] skiplint-max-unroll: expected a whole number >= 0, got 'lots'",
    ]


UNROLLED = '''from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["s"])
class S(nn.Module):
    def forward(self, x):
        yield stash("s", x)
        return x


layers = []
for i in range(3):
    layers.append(S())
model = nn.Sequential(*layers)
'''


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_max_unroll_reaches_the_composition_analysis(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch, jobs: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(UNROLLED, encoding="utf-8")
    (tmp_path / "n.py").write_text(UNROLLED, encoding="utf-8")
    status, out, _ = run(capsys, "-j", jobs, ".")
    assert status == 1 and "SKP202" in out
    (tmp_path / "tox.ini").write_text("[skiplint]\nmax-unroll = 2\n", encoding="utf-8")
    assert run(capsys, "-j", jobs, ".")[:2] == (0, "")  # past the limit the analysis abstains


# -- a huge list of unknown codes ----------------------------------------------------------------

def test_twenty_thousand_unknown_codes_are_reported_once_summarised_past_a_few(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each unknown code is looked up for a suggestion only while it is listed: five lookups, not
    20,000 (each costs a comparison with every code and prefix: 40 s for the list, before)."""
    codes = [f"XYZ{i}" for i in range(20_000)]
    (tmp_path / "pyproject.toml").write_text(
        "[tool.skiplint]\nselect = [" + ", ".join(f'"{c}"' for c in codes) + ', "SKP101"]\n'
        'ignore = "XYZ1, XYZ19999, SKP1O2"\n', encoding="utf-8")
    (tmp_path / "m.py").write_text("x = 1\n", encoding="utf-8")
    lookups = []
    nearest = config.nearest_code
    monkeypatch.setattr(config, "nearest_code", lambda word: lookups.append(word) or nearest(word))
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "-j", "1", "m.py")
    assert (status, out) == (0, "")
    assert len(lookups) == config.SHOWN_UNKNOWN_CODES == 5
    listed = [f"skiplint: pyproject.toml: [tool.skiplint] select: unknown code 'XYZ{i}': no rule has this "
              "code or prefix; skiplint's codes are SKPnnn (`skiplint rule` lists them)" for i in range(5)]
    assert err.splitlines() == listed + [
        "skiplint: pyproject.toml: [tool.skiplint]: 19,996 more unknown codes ('XYZ5', 'XYZ6', 'XYZ7', ...); "
        "no rule has these codes or prefixes"]  # 19,995 of select, SKP1O2 of ignore; XYZ1 and XYZ19999 once


def test_a_few_unknown_codes_each_get_their_line_and_suggestion(tmp_path: Path) -> None:
    (tmp_path / "tox.ini").write_text("[skiplint]\nselect = SKP1O1, SKP1O1\nignore = SKP1O1, XYZ\n",
                                      encoding="utf-8")
    settings, problems = config.load(str(tmp_path / "tox.ini"))
    assert [p.message for p in problems] == [
        "unknown code 'SKP1O1': no rule has this code or prefix; did you mean SKP101?",
        "unknown code 'XYZ': no rule has this code or prefix; skiplint's codes are SKPnnn (`skiplint rule` lists them)"]
    assert [p.key for p in problems] == ["[skiplint] select", "[skiplint] ignore"]
