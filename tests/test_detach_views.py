"""SKP206: a popped tensor detached in place that its stash made a view (tests/detach_shapes.py;
each verdict is checked against the run on both libraries by tests/runtime/test_detach_views.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skiplint import engine
from skiplint.session import Session
from tests import detach_shapes


@pytest.mark.parametrize("stash, before, mode", detach_shapes.CASES)
def test_skp206_where_the_stash_is_certainly_a_view(tmp_path: Path, stash: str, before: str, mode: str) -> None:
    path = tmp_path / "model.py"
    path.write_text(detach_shapes.source(stash, before, mode))
    found = [(d.line, d.col + 1, d.code) for d in engine.check_file(str(path), session=Session()).diagnostics]
    assert found == ([(*detach_shapes.DETACH_AT, "SKP206")] if detach_shapes.reported(stash, before, mode) else [])


@pytest.mark.parametrize("stash, before, mode", detach_shapes.CASES)
def test_skp901_where_whether_the_stash_is_a_view_cannot_be_known(stash: str, before: str, mode: str) -> None:
    result = engine.check_text(detach_shapes.source(stash, before, mode), "model.py",
                               engine.Selection(extend_select=("SKP901",)))
    found = [(d.line, d.col + 1, d.code) for d in result.diagnostics]
    code = ("SKP206" if detach_shapes.reported(stash, before, mode)
            else "SKP901" if detach_shapes.abstains(stash, before, mode) else None)
    assert found == ([(*detach_shapes.DETACH_AT, code)] if code is not None else [])
    # never silent where the run fails (as measured on both libraries by tests/runtime/test_detach_views.py)
    assert code is not None or not detach_shapes.fails(stash, before, mode)


def test_skp901_gives_the_reason() -> None:
    result = engine.check_text(detach_shapes.source("reshape", "first", "plain"), "model.py",
                               engine.Selection(extend_select=("SKP901",)))
    assert [d.message for d in result.diagnostics] == [
        "SKP901 whether layer 0 (Stash) stashes 's' as a view (layer 2 (Pop) detaches it in place) is computed "
        "at run time; skiplint cannot check it"]


def test_a_view_on_one_path_and_a_copy_on_another_may_be_a_view() -> None:
    text = detach_shapes.source("slice", "first", "plain")
    selection = engine.Selection(extend_select=("SKP901",))
    for stashed, code in (("h if x.sum() > 0 else x * 2", "SKP901"), ("h if x.sum() > 0 else x.t()", "SKP206"),
                          ("x.clone() if x.sum() > 0 else x * 2", None)):
        result = engine.check_text(text.replace("x[:, :2])", stashed + ")"), "model.py", selection)
        found = [(d.line, d.col + 1, d.code) for d in result.diagnostics]
        assert found == ([(*detach_shapes.DETACH_AT, code)] if code is not None else []), stashed


def test_only_a_detach_right_after_a_pop_that_certainly_runs_is_read(tmp_path: Path) -> None:
    text = detach_shapes.source("slice", "first", "plain")
    for changed in (text.replace("        s.detach_()\n", "        y = x * 2\n        s.detach_()\n"),
                    text.replace("        s.detach_()\n", "        if x.sum() > 0:\n            s.detach_()\n"),
                    text.replace('        s = yield pop("s")\n', '        if x is None:\n            return x\n'
                                 '        s = yield pop("s")\n')):
        path = tmp_path / "model.py"
        path.write_text(changed)
        assert "SKP206" not in [d.code for d in engine.check_file(str(path), session=Session()).diagnostics]


def test_across_partitions_it_is_skp305_alone(tmp_path: Path) -> None:
    # Measured: the pop gets a portal's copy, and backward fails in skip/portal.py (SKP305's failure).
    path = tmp_path / "model.py"
    path.write_text(detach_shapes.source("slice", "first", "pipe").replace("balance=[3]", "balance=[2, 1]"))
    found = [(d.line, d.code) for d in engine.check_file(str(path), session=Session()).diagnostics]
    assert found == [(19, "SKP305")]
