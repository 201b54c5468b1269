"""An analyzer bug is never silent: SKP902 at 1:1 with the exception's type and first line, the
file's other findings still reported, exit status 2; and no fixture produces it."""

from __future__ import annotations

import glob
import textwrap
from pathlib import Path
from typing import Any, NoReturn

import pytest

from skiplint import cli, engine, layout
from skiplint.findings import AnalyzerBug
from skiplint.flake8_plugin import SkiplintChecker
from tests.messages import said

REPO = Path(__file__).resolve().parent.parent
SOURCE = textwrap.dedent("""\
    import torch.nn as nn
    from torchgpipe import GPipe
    from torchgpipe.skip import skippable, stash


    @skippable(stash=["a"])
    class S(nn.Module):
        def forward(self, x):
            yield stash("b", x)
            return x


    model = GPipe(nn.Sequential(S()), balance=[1])
""")
MESSAGE = "SKP902 internal error while analysing compositions: KeyError: 'enc'; please report"


def _broken(*args: Any, **kwargs: Any) -> NoReturn:
    raise KeyError("enc")


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKIPLINT_DEBUG", raising=False)
    monkeypatch.setattr(engine.interpret, "extract", _broken)


def test_an_analyzer_bug_is_reported_at_line_1_and_the_rest_still_is(broken: None) -> None:
    result = engine.check_text(SOURCE, "m.py")
    assert [(d.line, d.col, d.message) for d in result.diagnostics] == [
        (1, 0, MESSAGE),
        (6, 18, said("SKP103", name="a")),
        (9, 14, said("SKP101", name="b")),
    ]
    assert result.error == "internal error while analysing compositions: KeyError: 'enc'; please report"


def test_the_failure_is_a_fact_of_the_module_and_the_file_error_is_its_rules_text(broken: None) -> None:
    """The module's facts carry the failure itself (no finding is read back by its code); the file's
    error is what SKP902 says of it, under `# noqa` too, and nothing when SKP902 is not selected."""
    facts = engine.analyze(SOURCE, "m.py")
    assert facts is not None and facts.bug == AnalyzerBug("compositions", "KeyError: 'enc'")
    silenced = engine.check_text("# noqa: SKP902\n" + SOURCE, "m.py")
    assert "SKP902" not in [d.code for d in silenced.diagnostics]
    assert silenced.error == MESSAGE[len("SKP902 "):]
    ignored = engine.check_text(SOURCE, "m.py", engine.Selection(ignore=("SKP902",)))
    assert ignored.error is None and "SKP902" not in [d.code for d in ignored.diagnostics]


def test_only_the_first_line_of_the_message_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    def multiline(*args: Any, **kwargs: Any) -> NoReturn:
        raise ValueError("first line\nfake.py:1:1: SKP999 second line")

    monkeypatch.delenv("SKIPLINT_DEBUG", raising=False)
    monkeypatch.setattr(engine.interpret, "extract", multiline)
    result = engine.check_text(SOURCE, "m.py", engine.Selection(select=("SKP902",)))
    assert [d.message for d in result.diagnostics] == [
        "SKP902 internal error while analysing compositions: ValueError: first line; please report"]


def test_the_cli_exits_2(broken: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.py").write_text(SOURCE, encoding="utf-8")
    status = cli.main(["--isolated", "-j", "1", str(tmp_path / "m.py")])
    out = capsys.readouterr().out
    assert status == 2
    assert f"m.py:1:1: {MESSAGE}" in out
    assert "m.py:9:15: SKP101 " in out


def test_ignoring_skp902_is_the_only_way_to_silence_it(broken: None, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE, encoding="utf-8")
    assert cli.main(["--isolated", "-j", "1", "--ignore", "SKP902", str(tmp_path / "m.py")]) == 1


def test_flake8_shows_it(broken: None) -> None:
    lines = SOURCE.splitlines(keepends=True)
    checker = SkiplintChecker(tree=None, lines=lines, filename="m.py")
    found = [(line, col, message) for line, col, message, _ in checker.run()]
    assert (1, 0, MESSAGE) in found
    assert (9, 14, "SKP101 'b' is stashed but not declared in stash=[...]") in found


def test_skiplint_debug_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKIPLINT_DEBUG", "1")
    monkeypatch.setattr(engine.interpret, "extract", _broken)
    with pytest.raises(KeyError):
        engine.check_text(SOURCE, "m.py")


@pytest.mark.parametrize("path", sorted(glob.glob(str(REPO / "fixtures" / "**" / "*.py"), recursive=True)))
def test_no_fixture_meets_an_analyzer_bug(path: str) -> None:
    text = Path(path).read_text(encoding="utf-8")
    for unroll in (None, 0, 3):
        result = engine.check_text(text, path, engine.EVERYTHING, max_unroll=unroll)
        assert "SKP902" not in {d.code for d in result.diagnostics}, result.diagnostics
        assert result.error is None or "internal error" not in result.error


def test_layout_says_the_failure_in_one_line_and_exits_2(broken: None, tmp_path: Path, capsys: Any) -> None:
    """`skiplint layout` of a file whose compositions could not be analysed: SKP902's text on
    standard error, from the module's fact, and exit status 2 (what is drawn may be partial)."""
    model = tmp_path / "m.py"
    model.write_text(SOURCE)
    status = layout.main([str(model)])
    assert (status, capsys.readouterr().err.splitlines()[0]) == (
        2, f"{model}: internal error while analysing compositions: KeyError: 'enc'; please report")
