"""--select/--ignore/--extend-select: flake8's prefix semantics; opt-in codes only when named."""

from __future__ import annotations

import pytest

from skiplint import engine, rules
from skiplint.engine import Selection

ALL = tuple(rules.RULES)


def chosen(selection: Selection) -> set[str]:
    return {code for code in ALL if selection(code)}


def test_default_selects_everything_but_the_opt_in_codes() -> None:
    assert chosen(Selection()) == set(ALL) - rules.OPT_IN


def test_opt_in_codes_are_the_catalogue_s() -> None:
    # The catalogue's opt-in codes, and the port family (SKP5xx), opt-in as a whole.
    assert rules.OPT_IN == {"SKP116", "SKP302", "SKP901", "SKP501", "SKP502", "SKP503", "SKP504"}


def test_everything_selects_the_opt_in_codes_too() -> None:
    assert chosen(engine.EVERYTHING) == set(ALL)


@pytest.mark.parametrize("select, expected", [
    (("SKP101",), {"SKP101"}),
    (("SKP10",), {f"SKP10{i}" for i in range(1, 10)}),
    (("SKP2",), {"SKP201", "SKP202", "SKP203", "SKP204", "SKP205"}),
    (("SKP9",), {"SKP900", "SKP902"}),
    (("SKP",), set(ALL) - rules.OPT_IN),
    (("SKP401", "SKP113"), {"SKP401", "SKP113"}),
])
def test_select_by_prefix(select: tuple[str, ...], expected: set[str]) -> None:
    assert chosen(Selection(select=select)) == expected


def test_opt_in_code_needs_its_full_code() -> None:
    assert not Selection(select=("SKP11",))("SKP116")
    assert not Selection(select=("SKP1",))("SKP116")
    assert Selection(select=("SKP116",))("SKP116")
    assert Selection(extend_select=("SKP116",))("SKP116")
    assert Selection(extend_select=("SKP901", "SKP302"))("SKP302")


def test_ignore_by_prefix() -> None:
    assert chosen(Selection(ignore=("SKP1",))) == set(ALL) - rules.OPT_IN - {c for c in ALL if c.startswith("SKP1")}
    assert not Selection(ignore=("SKP101",))("SKP101")
    assert Selection(ignore=("SKP101",))("SKP102")


def test_longest_prefix_wins() -> None:
    assert Selection(select=("SKP104",), ignore=("SKP10",))("SKP104")
    assert not Selection(select=("SKP1",), ignore=("SKP10",))("SKP104")
    assert Selection(select=("SKP1",), ignore=("SKP10",))("SKP114")


def test_ignore_beats_extend_select_of_the_same_length() -> None:
    assert not Selection(extend_select=("SKP116",), ignore=("SKP116",))("SKP116")


def test_extend_select_adds_to_an_explicit_select() -> None:
    selection = Selection(select=("SKP101",), extend_select=("SKP116",))
    assert chosen(selection) == {"SKP101", "SKP116"}


SOURCE = '''\
from torchgpipe.skip import pop, skippable


@skippable(pop=["skip"])
class Pop:
    def forward(self, x, y):
        yield pop("other")
        return x
'''


@pytest.mark.parametrize("selection, codes", [
    (Selection(), ["SKP104", "SKP114", "SKP102"]),
    (Selection(select=("SKP102",)), ["SKP102"]),
    (Selection(ignore=("SKP10",)), ["SKP114"]),
    (Selection(extend_select=("SKP116",)), ["SKP104", "SKP114", "SKP102", "SKP116"]),
])
def test_check_text_reports_only_the_selection(selection: Selection, codes: list[str]) -> None:
    result = engine.check_text(SOURCE, "m.py", selection)
    assert [d.code for d in result.diagnostics] == codes


def test_skp900_is_reported_whatever_is_selected() -> None:
    """An unchecked file that printed nothing would read as clean."""
    result = engine.check_text("import torchgpipe\ndef f(:\n", "m.py", Selection(ignore=("SKP900",)))
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(2, 6, "SKP900")]
    assert result.error == "syntax error: invalid syntax"
