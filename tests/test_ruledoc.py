"""docs/rules.md, `skiplint rule` and the hover are rendered from the rule units (skiplint/rules/)
and their example files by skiplint/rules/doc.py; the examples themselves are checked by
tests/test_rule_examples.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skiplint import cli, rules
from skiplint.rules import doc

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "rules.md"


def test_docs_equal_the_generator_output() -> None:
    assert DOC.read_text(encoding="utf-8") == doc.render(), \
        "regenerate: python -m skiplint.rules.doc > docs/rules.md"


def test_module_entry_point_prints_the_document() -> None:
    done = subprocess.run([sys.executable, "-m", "skiplint.rules.doc"], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0
    assert done.stdout == doc.render()


def test_importing_the_rules_imports_neither_the_renderer_nor_libcst() -> None:
    done = subprocess.run([sys.executable, "-c", "import sys, skiplint.rules; "
                           "print(sorted(m for m in ('skiplint.rules.doc', 'libcst') if m in sys.modules))"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_every_code_has_a_place() -> None:
    assert all(rule.reported_at for rule in rules.RULES.values())


def test_every_family_has_a_title_and_a_blurb() -> None:
    text = doc.render()
    for family in rules.FAMILIES:
        assert isinstance(family.TITLE, str) and isinstance(family.BLURB, str)
        assert f"## {family.TITLE}\n\n{family.BLURB}\n" in text


def test_sections_follow_their_families_in_code_order() -> None:
    text = doc.render()
    headings = [text.index(f"## {family.TITLE}\n") for family in rules.FAMILIES]
    assert headings == sorted(headings)
    sections = [text.index(f'<a id="{code.lower()}"></a>') for code in rules.RULES]
    assert sections == sorted(sections)
    for family, start in zip(rules.FAMILIES, headings):
        for rule in vars(family).values():
            if isinstance(rule, rules.Rule):
                assert text.index(f'<a id="{rule.code.lower()}"></a>') > start


@pytest.mark.parametrize("code", list(rules.RULES))
def test_every_code_has_a_section_with_anchor_and_failure(code: str) -> None:
    text = doc.render()
    rule = rules.RULES[code]
    assert f'<a id="{code.lower()}"></a>' in text
    assert f"### {code} `{rule.name}`" in text
    assert rule.failure.replace("{name}", "x") in text
    bad, fixed = doc.example(code, "bad"), doc.example(code, "fixed")
    assert f"Bad:\n\n```python\n{bad}```\n\nFixed:\n\n```python\n{fixed}```\n" in text


def test_the_docs_show_no_marker() -> None:
    assert "expect:" not in doc.render()


def test_docs_mention_b901() -> None:
    text = doc.render()
    assert "B901" in text and "# noqa: B901" in text


def test_docs_name_the_fixable_codes() -> None:
    from skiplint.fix import FIXABLE

    assert f"rewrite {', '.join(FIXABLE[:-1])} and {FIXABLE[-1]} (JSON" in doc.render()


@pytest.mark.parametrize("code", list(rules.RULES))
def test_rule_text_and_json_show_the_example_files(code: str) -> None:
    text = doc.rule_text(code)
    facts = doc.rule_json(code)
    assert facts["bad"] == doc.example(code, "bad") and facts["fixed"] == doc.example(code, "fixed")
    assert facts["url"] == f"https://github.com/skiplint/skiplint/blob/main/docs/rules.md#{code.lower()}"
    for kind in ("bad", "fixed"):
        assert f"{kind.capitalize()}:\n\n" + textwrap.indent(doc.example(code, kind), "    ", lambda _: True) in text
    assert "expect:" not in text


def test_the_rule_command_prints_the_renderers_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rule", "SKP106"]) == 0
    assert capsys.readouterr().out == doc.rule_text("SKP106")
    assert cli.main(["rule", "--format", "json", "SKP401"]) == 0
    assert json.loads(capsys.readouterr().out) == [doc.rule_json("SKP401")]


def test_every_fixable_rule_titles_its_fix_with_a_short_verb_phrase() -> None:
    # ruff-style titles: what the edit does in a few words, never the finding's message again.
    titled = {code: rule.title((("value", "skip"),), "torchgpipe") for code, rule in rules.RULES.items()
              if rule.fix_title is not None}
    assert set(titled) == {code for code, rule in rules.RULES.items() if rule.fixer is not None}
    assert titled == {"SKP106": "Wrap `'skip'` in a list", "SKP107": "Add `yield`",
                      "SKP401": "Import from `torchgpipe`"}
    assert all(len(title.split()) <= 5 and title[0].isupper() for title in titled.values())
