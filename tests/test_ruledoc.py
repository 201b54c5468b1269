"""docs/rules.md is generated from the rule table and skiplint/ruledoc.py's examples, which must hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import engine, rules, ruledoc
from skiplint.engine import Selection

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "rules.md"


def test_docs_equal_the_generator_output() -> None:
    assert DOC.read_text(encoding="utf-8") == ruledoc.render(), \
        "regenerate: python -m skiplint.ruledoc > docs/rules.md"


def test_module_entry_point_prints_the_document() -> None:
    done = subprocess.run([sys.executable, "-m", "skiplint.ruledoc"], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0
    assert done.stdout == ruledoc.render()


def test_every_code_has_examples_and_a_place() -> None:
    assert set(ruledoc.EXAMPLES) == set(rules.RULES)
    assert all(rule.reported_at for rule in rules.RULES.values())


@pytest.mark.parametrize("code", list(rules.RULES))
def test_every_code_has_a_section_with_anchor_and_failure(code: str) -> None:
    text = ruledoc.render()
    rule = rules.RULES[code]
    assert f'<a id="{code.lower()}"></a>' in text
    assert f"### {code} `{rule.name}`" in text
    assert rule.failure.replace("{name}", "x") in text
    bad, fixed = ruledoc.EXAMPLES[code]
    assert bad.rstrip("\n") in text and fixed.rstrip("\n") in text


def test_docs_mention_b901() -> None:
    text = ruledoc.render()
    assert "B901" in text and "# noqa: B901" in text


#: Codes of the composition/pipe analysis: their fixed examples may still report SKP302 (opt-in).
COMPOSITION_CODES = [code for code in rules.RULES if code.startswith(("SKP2", "SKP3"))]


def _codes(source: str, selection: Selection) -> list[str]:
    return [d.code for d in engine.check_text(source, "example.py", selection, apply_noqa=False).diagnostics]


#: Codes no source can show on purpose (an analyzer bug): their examples are the report itself.
NO_SOURCE_EXAMPLE = ("SKP902",)


@pytest.mark.parametrize("code", [c for c in rules.RULES if c not in NO_SOURCE_EXAMPLE])
def test_bad_example_is_reported_under_its_code(code: str) -> None:
    bad, _ = ruledoc.EXAMPLES[code]
    assert set(_codes(bad, Selection(select=(code,)))) == {code}


@pytest.mark.parametrize("code", list(rules.RULES))
def test_fixed_example_is_not_reported(code: str) -> None:
    _, fixed = ruledoc.EXAMPLES[code]
    assert _codes(fixed, Selection(select=(code,))) == []


@pytest.mark.parametrize("code", [c for c in rules.RULES if c not in COMPOSITION_CODES])
def test_class_level_fixed_examples_are_clean_under_every_code(code: str) -> None:
    _, fixed = ruledoc.EXAMPLES[code]
    assert _codes(fixed, engine.EVERYTHING) == []


@pytest.mark.parametrize("code", [c for c in rules.RULES
                                  if c not in COMPOSITION_CODES and c != "SKP900" and c not in NO_SOURCE_EXAMPLE])
def test_class_level_bad_examples_show_one_mistake(code: str) -> None:
    """One mistake, one diagnostic: a bad example reports its own code and nothing else."""
    bad, _ = ruledoc.EXAMPLES[code]
    assert _codes(bad, engine.EVERYTHING) == [code]


@pytest.mark.parametrize("code", COMPOSITION_CODES)
def test_composition_fixed_examples_are_clean_by_default(code: str) -> None:
    """Fixed composition examples may still cross partitions (SKP302 is an opt-in cost report)."""
    _, fixed = ruledoc.EXAMPLES[code]
    assert set(_codes(fixed, engine.EVERYTHING)) <= {"SKP302"}
    assert _codes(fixed, Selection()) == []
