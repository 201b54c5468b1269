"""The flake8 plugin: same findings as the CLI, 0-based columns handed to flake8, never raises.

flake8 itself runs in this process (tests/inprocess.py) where a process proves nothing more; one
test runs `python -m flake8` as a process, the door as a user opens it."""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skiplint
from skiplint import engine
from skiplint.flake8_plugin import SkiplintChecker
from tests import inprocess
from tests.messages import printed, said

SOURCE = '''\
from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"], pop=["in"])
class Layer(nn.Module):
    def forward(self, x):
        yield pop("in")
        yield stash("extra", x)
        return x
'''
# SKP101 at 9:15 (1-based), SKP103 at 5:19, SKP116 (opt-in, the pop is discarded) at 8:15.


def plugin_results(source: str, filename: str = "model.py") -> list[tuple[int, int, str]]:
    lines = source.splitlines(keepends=True)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = ast.Module(body=[], type_ignores=[])
    return [(line, col, message) for line, col, message, kind in
            SkiplintChecker(tree, lines, filename).run()]


def flake8(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "model.py").write_text(source, encoding="utf-8")
    return inprocess.flake8(["--isolated", *args, "model.py"], tmp_path)


def skp_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if ": SKP" in line]


# -- the plugin class, called as flake8 calls it ------------------------------------------------

def test_run_yields_0_based_columns_and_messages_starting_with_the_code() -> None:
    results = plugin_results(SOURCE)
    assert (9, 14, said("SKP101", name="extra")) in results
    assert (5, 18, said("SKP103", name="skip")) in results
    for line, col, message in results:
        assert message.split()[0].startswith("SKP")


@pytest.mark.parametrize("select, extend_select, expected", [
    (None, None, {"SKP101", "SKP103"}),
    (["SKP"], None, {"SKP101", "SKP103"}),          # a family prefix leaves opt-in codes off
    (["SKP", "SKP116"], None, {"SKP101", "SKP103", "SKP116"}),
    (None, ["SKP116"], {"SKP101", "SKP103", "SKP116"}),
])
def test_opt_in_codes_only_when_named_in_full(
        monkeypatch: pytest.MonkeyPatch, select: list[str] | None, extend_select: list[str] | None,
        expected: set[str]) -> None:
    """As the CLI: `flake8 --select SKP` reports what `skiplint` reports; SKP116 must be named."""
    options = argparse.Namespace(select=select, extend_select=extend_select,
                                 skiplint_api_aliases="", skiplint_max_unroll=None)
    monkeypatch.setattr(SkiplintChecker, "selected_codes", SkiplintChecker.selected_codes)
    SkiplintChecker.parse_options(options)
    codes = {message.split()[0] for _, _, message in plugin_results(SOURCE)}
    assert codes == expected


def test_run_reports_noqa_lines_for_flake8_to_filter() -> None:
    source = SOURCE.replace('yield stash("extra", x)', 'yield stash("extra", x)  # noqa: SKP101')
    assert any(message.startswith("SKP101") for _, _, message in plugin_results(source))


def test_file_without_the_api_yields_nothing() -> None:
    assert plugin_results("import os\nos.environ.pop('X')\n") == []


def test_file_level_noqa_is_looked_for_only_in_files_the_prefilter_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most files flake8 hands over do not use the API: lowering and scanning each whole text for
    `# skiplint: noqa` first was a tenth of the plugin's time over the torch package."""
    from skiplint import filenoqa

    looked: list[str] = []
    real = filenoqa.skips_file
    monkeypatch.setattr(filenoqa, "skips_file", lambda text, flake8=True: looked.append(text) or real(text, flake8))
    assert plugin_results("import os\n# skiplint: noqa\n") == []
    assert looked == []
    assert plugin_results(SOURCE + "# skiplint: noqa\n") == []
    assert looked == [SOURCE + "# skiplint: noqa\n"]


def test_unparsable_source_is_left_to_flake8() -> None:
    assert plugin_results("import torchgpipe\ndef f(:\n") == []


def test_checker_accepts_tree_and_lines() -> None:
    """flake8 picks plugin parameters by name: `tree` must be there even though `lines` is used."""
    import inspect

    params = inspect.signature(SkiplintChecker.__init__).parameters
    assert "tree" in params and "lines" in params


GARBAGE = [
    "",
    "\n",
    "import torchgpipe\n" + "(" * 300 + ")" * 300 + "\n",
    "import torchgpipe\n" + "x = " + "-" * 500 + "1\n",
    "import torchgpipe\n" + "x = " + " + ".join(["1"] * 3000) + "\n",
    "import torchgpipe\n" + "if x:\n" * 200,
    "import fairscale\n\x00\n",
    "import fairscale\n\ufeffx = 1\n",
    "import fairscale\nclass A(:\n    yield stash('x')\n",
    "from torchgpipe.skip import stash\n@skippable(\n",
    "from torchgpipe.skip import *\nyield stash()\n",
    "from torchgpipe.skip import stash\nstash(*a, **k)\n",
    "from torchgpipe.skip import skippable as s\n@s(stash=1, pop=None)\nclass A:\n  def forward(self): yield\n",
    "from torchgpipe.skip import pop\nlambda: (yield pop('x'))\n",
    "import torchgpipe\n'\\N{NOT A NAME}'\n",
    "import torchgpipe\nx = '\\xZZ'\n",
    "import torchgpipe\r\nx = 1\r",
    "import torchgpipe\n\tif True:\n        pass\n",
]


def _no_analyzer_bug(source: str, path: str) -> None:
    """The plugin's results on `source`: it raises nothing, and reports no analyzer bug (SKP902,
    what it yields instead of raising)."""
    results = list(SkiplintChecker(None, source.splitlines(keepends=True), path).run())
    assert [message for _, _, message, _ in results if message.startswith("SKP902 ")] == [], source


@pytest.mark.parametrize("source", GARBAGE, ids=range(len(GARBAGE)))
def test_plugin_never_raises_on_garbage(source: str) -> None:
    _no_analyzer_bug(source, "garbage.py")


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_plugin_never_raises_on_random_text(text: str) -> None:
    _no_analyzer_bug("from torchgpipe.skip import pop, skippable, stash\n" + text, "random.py")


#: Inputs on which libcst's native parser overflows the C stack: the process dies (SIGSEGV).
DEEP = {
    "parentheses": "import torchgpipe\nx = " + "(" * 2000 + ")" * 2000 + "\n",
    "brackets": "import torchgpipe\nx = " + "[" * 3000 + "]" * 3000 + "\n",
}
_RUN_PLUGIN = (
    "import json, sys\n"
    "from skiplint.flake8_plugin import SkiplintChecker\n"
    "for name, source in sorted(json.load(sys.stdin).items()):\n"
    "    list(SkiplintChecker(None, source.splitlines(keepends=True), 'deep.py').run())\n"
    "    print('survived', name, flush=True)\n"
)


@pytest.fixture(scope="module")
def deep_run() -> subprocess.CompletedProcess[str]:
    """The plugin on every DEEP input in turn, in one process of its own (a crash would end it)."""
    return subprocess.run([sys.executable, "-c", _RUN_PLUGIN], input=json.dumps(DEEP), capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("name", sorted(DEEP))
def test_plugin_survives_deep_nesting(deep_run: subprocess.CompletedProcess[str], name: str) -> None:
    assert f"survived {name}" in deep_run.stdout.splitlines(), deep_run.stderr
    assert deep_run.returncode == 0, deep_run.stderr


def test_plugin_shows_internal_errors_as_skp902(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("internal")

    monkeypatch.setattr(engine, "check_text", broken)
    assert plugin_results(SOURCE) == [
        (1, 0, "SKP902 internal error while analysing this file: RuntimeError: internal; please report")]


# -- flake8 itself --------------------------------------------------------------------------------

def test_flake8_lists_the_plugin(tmp_path: Path) -> None:
    done = inprocess.flake8(["--version"], tmp_path)
    assert f"skiplint: {skiplint.__version__}" in done.stdout, done.stdout


def test_flake8_prints_1_based_columns(tmp_path: Path) -> None:
    # `python -m flake8` in a process of its own: the plugin found through its entry point as a user's
    # flake8 finds it.
    (tmp_path / "model.py").write_text(SOURCE, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "SKP101", "model.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.stdout == "model.py:9:15: SKP101 'extra' is stashed but not declared in stash=[...]\n"
    assert done.returncode == 1


def test_flake8_default_selection_leaves_opt_in_codes_out(tmp_path: Path) -> None:
    done = flake8(tmp_path, SOURCE)
    assert skp_lines(done.stdout) == [
        printed("model.py", 5, 19, "SKP103", name="skip"),
        printed("model.py", 9, 15, "SKP101", name="extra"),
    ]


def test_flake8_extend_select_turns_an_opt_in_code_on(tmp_path: Path) -> None:
    done = flake8(tmp_path, SOURCE, "--extend-select", "SKP116")
    assert "model.py:8:15: SKP116 the tensor from yield pop('in') is discarded" in skp_lines(done.stdout)


def test_flake8_applies_noqa(tmp_path: Path) -> None:
    source = SOURCE.replace('yield stash("extra", x)', 'yield stash("extra", x)  # noqa: SKP101')
    done = flake8(tmp_path, source, "--select", "SKP10")
    assert skp_lines(done.stdout) == [printed("model.py", 5, 19, "SKP103", name="skip")]


def test_flake8_reports_syntax_errors_as_e999_not_skp900(tmp_path: Path) -> None:
    done = flake8(tmp_path, "import torchgpipe\ndef f(:\n")
    assert "E999" in done.stdout
    assert "SKP" not in done.stdout
    assert "Traceback" not in done.stderr


def test_flake8_clean_file(tmp_path: Path) -> None:
    clean = SOURCE.replace('yield pop("in")', 'skip = yield pop("in")').replace('"extra"', '"skip"')
    done = flake8(tmp_path, clean, "--select", "SKP")
    assert (done.returncode, done.stdout) == (0, "")
