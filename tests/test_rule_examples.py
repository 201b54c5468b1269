"""One test per rule, generated from its example files (skiplint/rules/examples/skpNNN/).

bad.py marks each line where a diagnostic belongs with `# expect: SKPnnn` (the marker syntax of
fixtures/, see tests/test_fixtures.py); fixed.py has no marker. For every rule: the bad example
gives exactly its markers (code and line), the fixed one gives nothing, and, for a fixable rule,
`skiplint fix` turns the bad example (as the docs show it: markers left out) into the fixed one,
byte for byte. docs/rules.md and `skiplint rule` show these same files.

SKP902 (an internal error of the analyzer) has no source that shows it on purpose: its examples
are the report and what to do, as comments; they carry no marker and give nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from skiplint import engine, fix, rules
from skiplint.engine import Selection
from skiplint.rules import doc

CODES = list(rules.RULES)
#: Rules no source shows on purpose: their examples are the report itself.
NO_SOURCE_EXAMPLE = ("SKP902",)
#: Codes of the composition/pipe analysis (and the port family's, which judges pipes and
#: compositions): their fixed examples may still cross partitions, which SKP302 (opt-in, a cost
#: report) reports when every code is selected.
COMPOSITION_CODES = [code for code in CODES if code.startswith(("SKP2", "SKP3", "SKP5"))]


def _found(source: str, selection: Selection) -> frozenset[tuple[int, str]]:
    result = engine.check_text(source, "example.py", selection, apply_noqa=False)
    return frozenset((d.line, d.code) for d in result.diagnostics)


def _own(code: str) -> Selection:
    """The default selection and `code` (an opt-in code is on only when named)."""
    return Selection(extend_select=(code,))


def test_every_rule_has_its_folder_and_no_folder_lacks_a_rule() -> None:
    folders = {path.name for path in doc.EXAMPLES.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == {code.lower() for code in CODES}
    for folder in folders:
        files = {path.name for path in (doc.EXAMPLES / folder).iterdir() if path.name != "__pycache__"}
        assert files == {"bad.py", "fixed.py"}, folder


@pytest.mark.parametrize("code", CODES)
def test_bad_example_gives_exactly_its_markers(code: str) -> None:
    text = doc.example_source(code, "bad")
    marks = doc.markers(text)
    if code in NO_SOURCE_EXAMPLE:
        assert marks == frozenset()
    else:
        assert code in {marked for _, marked in marks}, f"{code}'s bad example marks no {code}"
    # As the fixture suite: opt-in markers other than the rule's own count when every code is on.
    default = frozenset((line, c) for line, c in marks if c == code or c not in rules.OPT_IN)
    assert _found(text, _own(code)) == default
    assert _found(text, engine.EVERYTHING) == marks


@pytest.mark.parametrize("code", CODES)
def test_fixed_example_gives_nothing(code: str) -> None:
    text = doc.example_source(code, "fixed")
    assert doc.markers(text) == frozenset()
    assert _found(text, _own(code)) == frozenset()


@pytest.mark.parametrize("code", [c for c in CODES if c not in COMPOSITION_CODES])
def test_class_level_fixed_examples_are_clean_under_every_code(code: str) -> None:
    assert _found(doc.example_source(code, "fixed"), engine.EVERYTHING) == frozenset()


@pytest.mark.parametrize("code", COMPOSITION_CODES)
def test_composition_fixed_examples_cross_partitions_at_most(code: str) -> None:
    found = _found(doc.example_source(code, "fixed"), engine.EVERYTHING)
    assert {c for _, c in found} <= {"SKP302"}


@pytest.mark.parametrize("code", [c for c in CODES if c not in COMPOSITION_CODES])
def test_class_level_bad_examples_show_one_mistake(code: str) -> None:
    """One mistake, one diagnostic: a class-level bad example marks its own code and nothing else."""
    assert {c for _, c in doc.markers(doc.example_source(code, "bad"))} <= {code}


@pytest.mark.parametrize("code", fix.FIXABLE)
def test_fix_turns_the_bad_example_into_the_fixed_one(code: str) -> None:
    bad = doc.example(code, "bad")
    outcome = fix.fix_source(bad, "example.py")
    assert outcome.error is None and outcome.left == ()
    assert {d.code for d in outcome.applied} == {code}
    assert outcome.fixed == doc.example_source(code, "fixed")


@pytest.mark.parametrize("code", [c for c in CODES if c not in fix.FIXABLE])
def test_fix_leaves_the_bad_example_of_other_rules_alone(code: str) -> None:
    bad = doc.example(code, "bad")
    assert fix.fix_source(bad, "example.py").fixed == bad


def test_examples_are_package_data() -> None:
    """They sit inside the package, so `skiplint rule` finds them in an installed wheel."""
    package = Path(rules.__file__).resolve().parent
    assert doc.EXAMPLES.parent == package
    assert not (doc.EXAMPLES / "__init__.py").exists()


def test_markers_sit_at_line_ends_and_the_docs_leave_them_out() -> None:
    for code in CODES:
        text = doc.example_source(code, "bad")
        shown = doc.example(code, "bad")
        assert "expect:" not in shown
        assert shown.count("\n") == text.count("\n")
        for line, seen in zip(text.splitlines(), shown.splitlines()):
            if "expect:" in line:
                assert line.startswith(seen) and seen == seen.rstrip()
            else:
                assert seen == line
