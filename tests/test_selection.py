"""--select/--ignore/--extend-select: flake8's prefix semantics; opt-in codes only when named."""

from __future__ import annotations

from pathlib import Path

import pytest

from skiplint import config, engine, rules
from skiplint.rules import doc
from skiplint.engine import Selection

ALL = tuple(rules.RULES)


def chosen(selection: Selection) -> set[str]:
    return {code for code in ALL if selection(code)}


def test_default_selects_everything_but_the_opt_in_codes() -> None:
    assert chosen(Selection()) == set(ALL) - rules.OPT_IN


def test_opt_in_codes_are_the_rules_that_say_so() -> None:
    """The opt-in set is read from each rule's own `opt_in`, nowhere listed by hand."""
    assert rules.OPT_IN == {code for code, rule in rules.RULES.items() if rule.opt_in}
    assert rules.OPT_IN and rules.OPT_IN < set(ALL)


def test_the_code_table_is_written_from_the_rules() -> None:
    """skiplint/rules/codes.txt (what the flake8 plugin reads instead of importing every rule
    module) says what the rules say, in their order (regenerate: python -m skiplint.rules.doc --write)."""
    assert doc.CODE_TABLE.read_text(encoding="utf-8") == doc.code_table_text()
    assert config.code_table() == (tuple(rules.RULES), rules.OPT_IN)
    assert Path(config._CODE_TABLE) == doc.CODE_TABLE


def test_without_the_code_table_the_codes_come_from_the_rules(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "_CODE_TABLE", str(tmp_path / "missing.txt"))
    config.code_table.cache_clear()
    try:
        assert config.code_table() == (tuple(rules.RULES), rules.OPT_IN)
        (tmp_path / "missing.txt").write_text("# a comment\nSKP1 opt-in\nSKP2\n", encoding="utf-8")
        config.code_table.cache_clear()
        assert config.code_table() == (("SKP1", "SKP2"), frozenset({"SKP1"}))  # the table is what is read
    finally:
        config.code_table.cache_clear()


def test_everything_selects_the_opt_in_codes_too() -> None:
    assert chosen(engine.EVERYTHING) == set(ALL)


def by_prefix(*prefixes: str) -> set[str]:
    """The codes a prefix selects: those it begins, but the opt-in ones (each rule's `opt_in`)."""
    return {code for code in ALL if code.startswith(prefixes) and not rules.RULES[code].opt_in}


@pytest.mark.parametrize("select, expected", [
    (("SKP101",), {"SKP101"}),
    (("SKP10",), by_prefix("SKP10")),
    (("SKP2",), by_prefix("SKP2")),
    (("SKP9",), by_prefix("SKP9")),
    (("SKP",), set(ALL) - rules.OPT_IN),
    (("SKP401", "SKP113"), {"SKP401", "SKP113"}),
])
def test_select_by_prefix(select: tuple[str, ...], expected: set[str]) -> None:
    assert chosen(Selection(select=select)) == expected


def test_a_prefix_leaves_out_each_opt_in_code_it_begins() -> None:
    for code in rules.OPT_IN:
        assert code not in chosen(Selection(select=(code[:4],))) and code not in chosen(Selection(select=(code[:5],)))
        assert code in chosen(Selection(select=(code,)))


def test_opt_in_code_needs_its_full_code() -> None:
    code, other = sorted(rules.OPT_IN)[:2]
    assert not Selection(select=(code[:5],))(code)
    assert not Selection(select=(code[:4],))(code)
    assert Selection(select=(code,))(code)
    assert Selection(extend_select=(code,))(code)
    assert Selection(extend_select=(other, code))(code)


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
