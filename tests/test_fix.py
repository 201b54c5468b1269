"""`skiplint fix`: every SKP106/SKP107/SKP401 fixture lints clean after it, byte for byte elsewhere."""

from __future__ import annotations

import collections
import dataclasses
import difflib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import cli, config, fix, parallel, parsing, rules
from skiplint.rules import base
from skiplint.diagnostics import Diagnostic
from tests import inprocess

REPO = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for code in ("skp106", "skp107", "skp401") for p in (REPO / "fixtures").glob(f"{code}_*.py"))
#: Other fixtures with a fixable finding among others: after the fix, only the fixable ones go.
MIXED = sorted(
    p for p in (REPO / "fixtures").rglob("*.py")
    if p not in FIXTURES and not any((d / ".skiplint-fixture-skip").exists() for d in p.parents)
    and re.search(r"#\s*expect:.*(SKP106|SKP107|SKP401)", p.read_text(encoding="utf-8"))
)
#: Reasons for leaving a finding that are by design: no mechanical rewrite exists.
BY_DESIGN = ("has no drop-in replacement", "a yield here would change what the enclosing function is",
             "is used through its full name", "part of a larger expression")


def lint(path: Path) -> set[tuple[int, str]]:
    result = parallel.check_one((str(path), config.Config()))
    assert result.error is None
    return {(d.line, d.code) for d in result.diagnostics}


@pytest.mark.skipif(not FIXTURES, reason="no SKP106/SKP107/SKP401 fixtures yet")
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_fixture_lints_clean_after_fix(fixture: Path, tmp_path: Path) -> None:
    path = tmp_path / fixture.name
    shutil.copyfile(fixture, path)
    before = path.read_bytes()
    outcome = fix.fix_file(str(path), config.Config(), "torchgpipe", fix.FIXABLE, write=True)
    assert outcome.error is None
    for diagnostic, why in outcome.left:
        assert why.startswith(BY_DESIGN) or any(reason in why for reason in BY_DESIGN), (diagnostic, why)
    # Clean but for what has no mechanical fix (module-level commands, `Pipe` imports, ...).
    assert lint(path) == {(d.line, d.code) for d, _ in outcome.left}
    after = path.read_bytes()
    old_lines, new_lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    assert len(old_lines) == len(new_lines)
    changed = {i + 1 for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b}
    assert changed <= {d.line for d in outcome.applied}
    assert bool(changed) == bool(outcome.applied)


@pytest.mark.parametrize("fixture", MIXED, ids=lambda p: p.name)
def test_mixed_fixture_loses_only_its_fixable_findings(fixture: Path, tmp_path: Path) -> None:
    path = tmp_path / fixture.name
    shutil.copyfile(fixture, path)
    outcome = fix.fix_file(str(path), config.Config(), "torchgpipe", fix.FIXABLE, write=True)
    assert outcome.error is None
    left = {(d.line, d.code) for d, _ in outcome.left}
    assert {f for f in lint(path) if f[1] in fix.FIXABLE} == left
    assert all(any(reason in why for reason in BY_DESIGN) for _, why in outcome.left)


SOURCE = '''# -*- coding: latin-1 -*-
"""Caf\xe9: comments, odd spacing and line endings survive."""
from torch.distributed.pipeline.sync.skip import (  # the old home
    skippable,    # decorator
    stash, pop,
)
from torch import nn


@skippable( stash = 'skip' )   # one name, really
class Stem(nn.Module):
    def forward(self, x):
        stash( "skip" ,x )  # forgot the yield
        return x


@skippable(pop=["skip"])
class Head(nn.Module):
    def forward(self, x):
        pop("skip")  # noqa: SKP107
        pop("skip"); x = x * 2
        return x
'''

FIXED = SOURCE.replace("torch.distributed.pipeline.sync.skip", "torchgpipe.skip") \
    .replace("stash = 'skip'", "stash = ['skip']") \
    .replace('stash( "skip" ,x )', 'yield stash( "skip" ,x )') \
    .replace('pop("skip"); x', 'yield pop("skip"); x')


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_formatting_comments_encoding_and_noqa_are_kept(
        tmp_path: Path, newline: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model.py"
    path.write_bytes(SOURCE.replace("\n", newline).encode("latin-1"))
    assert cli.main(["fix", "--isolated", str(path)]) == 0
    assert path.read_bytes() == FIXED.replace("\n", newline).encode("latin-1")
    err = capsys.readouterr().err
    assert "fixed SKP401 (line 3), SKP106 (line 10), SKP107 (line 13), SKP107 (line 21)" in err


def test_diff_shows_without_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="latin-1")
    assert cli.main(["fix", "--isolated", "--diff", "--target", "fairscale", "-q", str(path)]) == 1
    out, err = capsys.readouterr()
    assert path.read_text(encoding="latin-1") == SOURCE
    assert err == ""
    assert f"--- a/{path}" in out and "+from fairscale.nn.pipe.skip import (  # the old home" in out
    assert "+        yield pop(\"skip\"); x = x * 2" in out


def test_select_and_configuration_limit_the_fixes(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="latin-1")
    (tmp_path / "setup.cfg").write_text("[skiplint]\nignore = SKP107\n", encoding="utf-8")
    assert cli.main(["fix", "-q", "--select", "SKP106,SKP107", str(path)]) == 0
    text = path.read_text(encoding="latin-1")
    assert "stash = ['skip']" in text
    assert "torch.distributed.pipeline.sync.skip" in text and 'yield stash(' not in text


def test_a_fix_that_does_not_remove_the_finding_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    source = FIXED.replace("stash = ['skip']", "stash = 'skip'")
    # A broken rewrite that changes the file but leaves the finding: it must not be kept.
    monkeypatch.setattr(fix, "plan", lambda text, diagnostic, target: [fix.Edit(0, 0, "# \n")])
    outcome = fix.fix_source(source, "m.py")
    assert outcome.fixed == source and not outcome.applied
    assert [(d.code, why) for d, why in outcome.left] == [("SKP106", "the rewritten file still has this finding")]


def test_what_has_no_mechanical_fix_is_left_with_a_reason() -> None:
    source = '''import torch.distributed.pipeline.sync.skip
from torch.distributed.pipeline.sync import Pipe
from torchgpipe.skip import stash, pop


def helper(x):
    stash("loose", x)


pop("top")
'''
    outcome = fix.fix_source(source, "m.py")
    assert outcome.fixed == source
    assert [(d.line, d.code) for d, _ in outcome.left] == [(1, "SKP401"), (2, "SKP401"), (7, "SKP107"), (10, "SKP107")]


def test_a_discarded_pop_stays_discarded_and_adds_no_name() -> None:
    # `x = yield pop("x")` would bind a name nobody reads: pyflakes' F841, the fix hook failing
    # the commit for a flake8 hook. The yielded pop keeps the code's own meaning (the tensor is
    # discarded), which SKP116 (opt-in) describes: the same fact, not a new finding.
    source = '''from torchgpipe.skip import skippable, pop


@skippable(pop=["x", "2d"])
class Head:
    def forward(self, x):
        pop("x")
        pop("2d")
        return x
'''
    outcome = fix.fix_source(source, "m.py")
    assert outcome.fixed == source.replace('        pop("', '        yield pop("')
    assert [(d.line, d.code) for d in outcome.applied] == [(7, "SKP107"), (8, "SKP107")]
    assert fix.flake8_findings(outcome.fixed, "m.py") == fix.flake8_findings(source, "m.py") == ()


def test_unreadable_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.py"
    path.write_text("import torchgpipe\ndef (:\n", encoding="utf-8")
    assert cli.main(["fix", "--isolated", str(path)]) == 2
    assert "could not fix this file" in capsys.readouterr().err


def test_no_files_to_fix_is_said_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.txt").write_text("not Python\n", encoding="utf-8")
    assert cli.main(["fix", "--isolated", str(tmp_path / "docs")]) == 0
    assert capsys.readouterr() == ("", f"skiplint fix: no Python files to fix in {tmp_path / 'docs'}\n")
    assert cli.main(["fix", "--isolated", "-q", str(tmp_path / "docs")]) == 0
    assert capsys.readouterr() == ("", "")


def test_pre_commit_hooks() -> None:
    text = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "- id: skiplint\n" in text and "entry: skiplint\n" in text
    assert "- id: skiplint-fix\n" in text and "entry: skiplint fix\n" in text


# -- a fix never makes a file worse ----------------------------------------------------------------

HEAD = '''from torchgpipe.skip import skippable, stash, pop
from torch import nn


'''


@pytest.mark.parametrize("body, kind, verb", [
    ('        pop("p")\n        p = yield pop("p")\n        return x + p\n', "pop", "popped"),
    ('        stash("p", x)\n        yield stash("p", x)\n        return x\n', "stash", "stashed"),
])
def test_a_fix_that_would_repeat_a_command_is_left_with_the_reason(
        tmp_path: Path, body: str, kind: str, verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Yielding the loose command would perform it twice on the path (SKP110: the second pop raises
    # KeyError, the second stash loses the first tensor); the file is left as it is.
    source = HEAD + f'@skippable({kind}=["p"])\nclass Layer(nn.Module):\n    def forward(self, x):\n' + body
    path = tmp_path / "model.py"
    path.write_text(source, encoding="utf-8")
    assert lint(path) == {(8, "SKP107")}
    assert cli.main(["fix", "--isolated", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == source
    assert capsys.readouterr().err == (
        f"{path}:8:9: SKP107 not fixed: would introduce SKP110 at line 9: "
        f"'p' is {verb} twice on one path through forward\n")


def test_a_fix_is_kept_when_its_only_effect_is_the_finding_going(tmp_path: Path) -> None:
    # The same command on another path is not a repeat: the fix goes in.
    source = HEAD + '''@skippable(pop=["p"])
class Layer(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            pop("p")
            return x
        p = yield pop("p")
        return x + p
'''
    outcome = fix.fix_source(source, "m.py")
    assert [(d.line, d.code) for d in outcome.applied] == [(9, "SKP107")]
    assert outcome.fixed == source.replace('            pop("p")', '            yield pop("p")')


def _inserted_only(before: str, after: str) -> list[tuple[int, str]]:
    """(offset in `before`, text) of each insertion; fails if anything else differs."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    out = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        assert op in ("equal", "insert"), (op, before[i1:i2], after[j1:j2])
        if op == "insert":
            out.append((i1, after[j1:j2]))
    return out


HOSTILE = HEAD + '''\x0c
@skippable(stash=(  # why
    "skip"  # keep
))
class Stem(nn.Module):
    def forward(self, x):
        x = x \\
\\
            + 1
\x0c
        stash("skip", x)  # the tensor \x0c with a form feed
        return x
\\

@skippable(pop=["skip"])
class Head(nn.Module):
    def forward(self, x):
        y = pop( # which
            "skip")
        return x + y
'''


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_every_byte_outside_the_edits_is_kept(tmp_path: Path, newline: str) -> None:
    source = HOSTILE.replace("\n", newline)
    path = tmp_path / "model.py"
    path.write_bytes(source.encode("utf-8"))
    assert lint(path) == {(7, "SKP106"), (15, "SKP107"), (22, "SKP107")}
    outcome = fix.fix_file(str(path), config.Config(), "torchgpipe", fix.FIXABLE, write=True)
    assert outcome.error is None and not outcome.left
    after = path.read_bytes().decode("utf-8")
    # Only characters inserted at the reported nodes: the comments inside the parentheses of the
    # declaration, the form feeds and the lone continuation lines are all still there.
    stem = source.index('"skip"  # keep')
    stash_at = source.index('stash("skip", x)')
    pop_at = source.index('pop( # which')
    assert after == fix.splice(source, [fix.Edit(stem, stem, "["), fix.Edit(stem + 6, stem + 6, "]"),
                                        fix.Edit(stash_at, stash_at, "yield "), fix.Edit(pop_at, pop_at, "yield ")])
    assert len(_inserted_only(source, after)) == 4
    assert lint(path) == set()
    assert fix.fix_file(str(path), config.Config(), "torchgpipe", fix.FIXABLE, write=True).changed is False


def test_diff_and_fix_make_the_same_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "model.py"
    path.write_bytes(HOSTILE.replace("\n", "\r\n").encode("utf-8"))
    original = path.read_bytes().decode("utf-8")
    assert cli.main(["fix", "--isolated", "--diff", "-q", str(path)]) == 1
    shown = capsys.readouterr().out
    assert path.read_bytes().decode("utf-8") == original
    assert cli.main(["fix", "--isolated", "-q", str(path)]) == 0
    written = path.read_bytes().decode("utf-8")
    assert written != original
    expected = "".join(difflib.unified_diff(
        fix.split_lines(original), fix.split_lines(written), fromfile=f"a/{path}", tofile=f"b/{path}"))
    assert shown == expected
    # The diff's lines are Python's lines: the form feed inside a comment does not split one.
    assert "+        yield stash(\"skip\", x)  # the tensor \x0c with a form feed\r\n" in shown


def test_fixed_file_reparses_and_a_second_fix_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="latin-1")
    first = fix.fix_file(str(path), config.Config(), "torchgpipe", fix.FIXABLE, write=True)
    assert first.changed and first.applied
    parsing.parse_module(first.fixed)
    compile(first.fixed, "m.py", "exec")
    again = fix.fix_file(str(path), config.Config(), "torchgpipe", fix.FIXABLE, write=True)
    assert not again.changed and not again.applied
    assert path.read_text(encoding="latin-1") == FIXED


def test_import_rewrite_keeps_comments_and_continuations() -> None:
    source = ('from torch.distributed.pipeline.sync import (  # old\n    _skip,  # the package\n)\n'
              'import torch.distributed.pipeline.sync.skip.layout as lay, os  # both\n')
    outcome = fix.fix_source(source, "m.py", target="fairscale")
    assert [(d.line, d.code) for d in outcome.applied] == [(1, "SKP401"), (4, "SKP401")]
    assert outcome.fixed == ('from fairscale.nn.pipe import (  # old\n    skip as _skip,  # the package\n)\n'
                             'import fairscale.nn.pipe.skip.layout as lay, os  # both\n')


def test_an_edit_that_adds_lines_is_compared_line_for_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # A rewrite that adds two lines above the finding: the findings after it keep their identity.
    source = FIXED.replace("stash = ['skip']", "stash = 'skip'")
    real = fix.plan

    def padded(text: str, diagnostic: Diagnostic, target: str) -> list[fix.Edit]:
        return [fix.Edit(0, 0, "#\n#\n"), *real(text, diagnostic, target)]

    monkeypatch.setattr(fix, "plan", padded)
    outcome = fix.fix_source(source, "m.py")
    assert [(d.line, d.code) for d in outcome.applied] == [(10, "SKP106")]
    assert outcome.fixed == "#\n#\n" + FIXED


# -- standard input --------------------------------------------------------------------------------

def fix_stdin(data: bytes, *args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return inprocess.skiplint_bytes(["fix", "-", *args], cwd, data)


LOOSE = HEAD + '''@skippable(pop=["p"])
class Head(nn.Module):
    def forward(self, x):
        pop("p")
        return x
'''


def test_stdin_source_is_fixed_to_stdout(tmp_path: Path) -> None:
    done = fix_stdin(LOOSE.encode("utf-8"), "--stdin-display-name", "pkg/m.py", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == LOOSE.replace('        pop("p")', '        yield pop("p")').encode("utf-8")
    assert done.stderr == b"pkg/m.py: fixed SKP107 (line 8)\n"
    assert list(tmp_path.iterdir()) == []


def test_stdin_keeps_the_encoding_and_line_endings(tmp_path: Path) -> None:
    data = SOURCE.replace("\n", "\r\n").encode("latin-1")
    done = fix_stdin(data, "-q", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == FIXED.replace("\n", "\r\n").encode("latin-1")


def test_stdin_with_findings_left_exits_1_with_the_source_unchanged(tmp_path: Path) -> None:
    source = HEAD + '@skippable(pop=["p"])\nclass Layer(nn.Module):\n    def forward(self, x):\n' \
        '        pop("p")\n        p = yield pop("p")\n        return x + p\n'
    done = fix_stdin(source.encode("utf-8"), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == source.encode("utf-8")
    assert done.stderr.decode() == ("stdin:8:9: SKP107 not fixed: would introduce SKP110 at line 9: "
                                    "'p' is popped twice on one path through forward\n")


def test_stdin_that_cannot_be_checked_exits_2_and_passes_it_through(tmp_path: Path) -> None:
    data = b"import torchgpipe\ndef (:\n"
    done = fix_stdin(data, "--stdin-display-name", "bad.py", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, data)
    assert done.stderr.decode() == "bad.py: could not fix this source: syntax error: invalid syntax at 2:5\n"


def test_stdin_without_the_api_is_passed_through(tmp_path: Path) -> None:
    data = b"import os\r\nprint(os.sep)\n"
    done = fix_stdin(data, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, data, b"")


def test_stdin_display_name_chooses_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "quiet").mkdir()
    (tmp_path / "quiet" / "setup.cfg").write_text("[skiplint]\nignore = SKP107\n", encoding="utf-8")
    data = LOOSE.encode("utf-8")
    ignored = fix_stdin(data, "--stdin-display-name", "quiet/m.py", cwd=tmp_path)
    assert (ignored.returncode, ignored.stdout, ignored.stderr) == (0, data, b"")
    other = fix_stdin(data, "--stdin-display-name", "loud/m.py", cwd=tmp_path)
    assert other.returncode == 0 and other.stdout != data
    isolated = fix_stdin(data, "--stdin-display-name", "quiet/m.py", "--isolated", cwd=tmp_path)
    assert isolated.stdout == other.stdout


def test_stdin_diff(tmp_path: Path) -> None:
    done = fix_stdin(LOOSE.encode("utf-8"), "--diff", "-q", "--stdin-display-name", "m.py", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.decode() == "".join(difflib.unified_diff(
        fix.split_lines(LOOSE), fix.split_lines(LOOSE.replace('pop("p")\n', 'yield pop("p")\n')),
        fromfile="a/m.py", tofile="b/m.py"))


def test_stdin_is_not_mixed_with_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fix.main(["-", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "skiplint fix: '-' (standard input) cannot be combined with other paths\n"


@pytest.mark.parametrize("settings", [config.Config().replace(ignore=("SKP110",)), config.Config()])
@pytest.mark.parametrize("noqa", ["", "  # noqa: SKP110"])
def test_a_new_finding_counts_even_when_it_would_not_be_reported(settings: config.Config, noqa: str) -> None:
    # Ignored by the configuration or silenced by noqa, a second pop still raises at run time.
    source = HEAD + '@skippable(pop=["p"])\nclass Layer(nn.Module):\n    def forward(self, x):\n' \
        f'        pop("p")\n        p = yield pop("p"){noqa}\n        return x + p\n'
    outcome = fix.fix_source(source, "m.py", settings)
    assert outcome.fixed == source
    assert [(d.line, why) for d, why in outcome.left] == [
        (8, "would introduce SKP110 at line 9: 'p' is popped twice on one path through forward")]


# -- a fix leaves flake8's default checks as clean as it found them -----------------------------------

TWO_LAYERS = '''from torch import nn
from torchgpipe import GPipe
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Head(nn.Module):
    def forward(self, x):
        pop("skip")
        return x


'''


def test_a_discarded_pop_that_a_pipe_puts_across_partitions_is_left_with_the_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Yielded, the discarded pop would fail backward() (SKP305); a name for the tensor would hide
    # that and add F841. No edit can promise both, so the file is left as it is.
    source = TWO_LAYERS + "model = GPipe(nn.Sequential(Stash(), Head()), balance=[1, 1], chunks=2)\n"
    path = tmp_path / "model.py"
    path.write_text(source, encoding="utf-8")
    assert cli.main(["fix", "--isolated", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == source
    assert capsys.readouterr().err == (
        f"{path}:16:9: SKP107 not fixed: would introduce SKP305 at line 16: the tensor from "
        "yield pop('skip') is discarded, and this pipe stashes it in partition 0 and pops it in "
        "partition 1: backward() fails; use the popped tensor\n")


def test_a_discarded_pop_in_one_partition_is_yielded() -> None:
    source = TWO_LAYERS + "model = GPipe(nn.Sequential(Stash(), Head()), balance=[2], chunks=2)\n"
    outcome = fix.fix_source(source, "m.py")
    assert outcome.fixed == source.replace('        pop("skip")', '        yield pop("skip")')
    assert outcome.left == ()


def test_a_fix_that_would_make_a_line_too_long_is_left_with_the_reason(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = '        stash("a_rather_long_skip_name_for_this_example", x)  # keep this one'
    assert len(line) == 77  # 83 with the yield: E501 at flake8's default 79
    source = ('from torch import nn\nfrom torchgpipe.skip import skippable, stash\n\n\n'
              '@skippable(stash=["a_rather_long_skip_name_for_this_example"])\nclass Stem(nn.Module):\n'
              f'    def forward(self, x):\n{line}\n        return x\n')
    path = tmp_path / "model.py"
    path.write_text(source, encoding="utf-8")
    assert cli.main(["fix", "--isolated", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == source
    assert capsys.readouterr().err == (
        f"{path}:8:9: SKP107 not fixed: would introduce E501 at line 8: line too long "
        "(83 > 79 characters) (flake8's default checks)\n")
    # A line that was too long already gets no new finding from growing.
    longer = source.replace("# keep this one", "# keep this one, and the line was too long already")
    outcome = fix.fix_source(longer, "m.py")
    assert [d.code for d in outcome.applied] == ["SKP107"] and outcome.left == ()


def test_a_fix_that_would_add_a_pyflakes_finding_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    source = TWO_LAYERS.replace('pop("skip")\n', 'p = pop("skip")\n        return x + p\n', 1)
    real = fix.plan

    def with_an_import(text: str, diagnostic: Diagnostic, target: str) -> list[fix.Edit]:
        return [fix.Edit(0, 0, "import os\n")] + real(text, diagnostic, target)

    monkeypatch.setattr(fix, "plan", with_an_import)
    outcome = fix.fix_source(source, "m.py")
    assert outcome.fixed == source
    assert [(d.line, why) for d, why in outcome.left] == [
        (16, "would introduce F401 at line 1: 'os' imported but unused (flake8's default checks)")]


def test_flake8_reports_nothing_new_after_the_fixes(tmp_path: Path) -> None:
    # flake8 itself (its default checks, its default settings) on every fixable fixture, before
    # and after `skiplint fix`: the same findings, line for line (the fixes add no lines).
    before, after = tmp_path / "before", tmp_path / "after"
    for fixture in FIXTURES + MIXED:
        for root in (before, after):
            shutil.copyfile(fixture, root.mkdir(exist_ok=True) or root / fixture.name)
    assert cli.main(["fix", "--isolated", "-q", str(after)]) == 0
    assert [p.name for p in sorted(after.iterdir()) if p.read_bytes() != (before / p.name).read_bytes()]

    def flake8(root: Path) -> collections.Counter[str]:
        done = inprocess.flake8(["--isolated", "--select", "E,F,W", "."], root)
        assert done.returncode in (0, 1), done.stderr
        # path:line: CODE, columns aside (an inserted `yield ` moves what follows it on its line).
        return collections.Counter(re.sub(r"^(\S+?:\d+):\d+: (\w+) .*", r"\1: \2", line)
                                   for line in done.stdout.splitlines())
    assert flake8(after) - flake8(before) == collections.Counter()


def test_the_fixable_codes_are_those_of_the_rules_with_a_fixer() -> None:
    assert fix.FIXABLE == ("SKP106", "SKP107", "SKP401")
    assert fix.FIXABLE == tuple(code for code, rule in rules.RULES.items() if rule.fixer is not None)


def test_plan_calls_the_rules_fixer(monkeypatch: pytest.MonkeyPatch) -> None:
    # The dispatch is the rule's own fixer, not a list of codes in fix.py.
    seen: list[tuple[str, Diagnostic, str]] = []

    def fixer(source: fix.Source, finding: Diagnostic, target: str) -> list[fix.Edit]:
        seen.append((source.text, finding, target))
        return [fix.Edit(0, 0, "#\n")]

    finding = Diagnostic("m.py", 1, 0, "SKP101", "SKP101 'x' is stashed but not declared in stash=[...]")
    with pytest.raises(fix.NotFixable, match="^SKP101 has no automatic fix$"):
        fix.plan("x = 1\n", finding)
    monkeypatch.setitem(base.FIXERS, "SKP101", fixer)
    assert fix.plan("x = 1\n", finding, "fairscale") == [fix.Edit(0, 0, "#\n")]
    assert seen == [("x = 1\n", finding, "fairscale")]


_DISCARDED = '''from torchgpipe.skip import skippable, pop


@skippable(pop=["x"])
class Head:
    def forward(self, x):
        pop("x")
        return x
'''


def test_the_fix_reads_the_findings_range_and_arguments_not_its_message() -> None:
    found = [d for d in fix._lint(_DISCARDED, "m.py", config.Config()).reported if d.code == "SKP107"]
    assert [(d.line, d.col, d.end_line, d.end_col, d.arg("kind")) for d in found] == [(7, 8, 7, 16, "pop")]
    # The message is the formats' business: without it, the same edits, and the same judgement of
    # SKP116 on the yielded pop (the same fact: the tensor is discarded).
    silent = dataclasses.replace(found[0], message="")
    at = _DISCARDED.index('pop("x")\n')
    assert fix.plan(_DISCARDED, silent) == fix.plan(_DISCARDED, found[0]) == [fix.Edit(at, at, "yield ")]
    discarded = Diagnostic("m.py", 7, 14, "SKP116", "", args=(("name", "x"),))
    assert fix._same_fact(silent, discarded)
    assert not fix._same_fact(dataclasses.replace(silent, args=(("kind", "stash"),)), discarded)
    # A range that no call spans (the right start, another end) is no place to edit.
    with pytest.raises(fix.NotFixable, match="no such node at the reported position"):
        fix.plan(_DISCARDED, dataclasses.replace(found[0], end_col=15))


def test_importing_the_rules_loads_neither_libcst_nor_the_fixes_machinery() -> None:
    code = ("import sys, skiplint.rules\n"
            "print(sorted(m for m in ('libcst', 'skiplint.fix', 'skiplint.facts') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")
