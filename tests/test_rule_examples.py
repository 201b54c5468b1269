"""One test per rule, generated from its examples (skiplint/rules/examples/skpNNN/), each linted
with that rule alone, as ruff tests a rule's fixture against its snapshot.

bad.py marks each line where its rule reports with `# expect: SKPnnn` (the marker syntax of
fixtures/, see tests/test_fixtures.py); fixed.py has no marker. For every rule, with only that rule
selected: the bad example gives exactly its markers, the fixed one gives nothing, what the CLI
prints for both (and the diff `skiplint fix` makes of the bad one, for a rule with a fix) is the
folder's snapshot.txt, and `skiplint fix` turns the bad example (as the docs show it: markers left
out) into the fixed one, byte for byte. No rule's examples are linted with another rule on, so a
new rule never changes another rule's examples. docs/rules.md and `skiplint rule` show these same
files. After a change of a message or an example: `python -m skiplint.rules.doc --write`.

SKP902 (an internal error of the analyzer) has no source that shows it on purpose: its examples
are the report and what to do, as comments; they carry no marker and give nothing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from skiplint import engine, fix, rules
from skiplint.engine import Selection
from skiplint.rules import doc

CODES = list(rules.RULES)
#: Rules no source shows on purpose: their examples are the report itself.
NO_SOURCE_EXAMPLE = ("SKP902",)


def _found(source: str, code: str) -> frozenset[tuple[int, str]]:
    """(line, code) of what the example gives with `code` alone selected."""
    result = engine.check_text(source, "example.py", Selection(select=(code,)), apply_noqa=False)
    return frozenset((d.line, d.code) for d in result.diagnostics)


def test_every_rule_has_its_folder_and_no_folder_lacks_a_rule() -> None:
    folders = {path.name for path in doc.EXAMPLES.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders == {code.lower() for code in CODES}
    for folder in folders:
        files = {path.name for path in (doc.EXAMPLES / folder).iterdir() if path.name != "__pycache__"}
        assert files == {"bad.py", "fixed.py", doc.SNAPSHOT}, folder


@pytest.mark.parametrize("code", CODES)
def test_bad_example_gives_exactly_its_markers(code: str) -> None:
    text = doc.example_source(code, "bad")
    marks = doc.markers(text)
    if code in NO_SOURCE_EXAMPLE:
        assert marks == frozenset()
    else:
        assert marks and {marked for _, marked in marks} == {code}, f"{code}'s bad example marks other codes"
    assert _found(text, code) == marks


@pytest.mark.parametrize("code", CODES)
def test_fixed_example_gives_nothing(code: str) -> None:
    text = doc.example_source(code, "fixed")
    assert doc.markers(text) == frozenset()
    assert _found(text, code) == frozenset()


#: The running Python's own words for a syntax error (SKP900's example) before 3.10's parser.
_OLD_SYNTAX_ERRORS = sys.version_info < (3, 10)


def _comparable(snapshot: str) -> str:
    """A snapshot with the running Python's wording of a syntax error left out, where it has its
    own (Python 3.9 says `invalid syntax` where later versions say what is expected)."""
    if not _OLD_SYNTAX_ERRORS:
        return snapshot
    return re.sub(r"(: SKP900 could not check this file: syntax error):\d*[^\n]*", r"\1", snapshot)


@pytest.mark.parametrize("code", CODES)
def test_what_the_cli_says_about_the_examples_is_the_snapshot(code: str) -> None:
    written = doc.snapshot_path(code).read_text(encoding="utf-8")
    assert _comparable(doc.snapshot(code)) == _comparable(written), \
        f"{doc.snapshot_path(code)} is out of date: run `{doc.WRITE}` and review the diff"


def test_the_snapshots_show_findings_and_fixes() -> None:
    """A snapshot that said nothing would pass with any rule: each shows its bad example's
    findings, and each rule with a fix shows its diff."""
    for code in CODES:
        written = doc.snapshot_path(code).read_text(encoding="utf-8")
        findings = re.findall(rf"^bad\.py:\d+:\d+: ({code}) ", written, re.M)
        assert len(findings) == (0 if code in NO_SOURCE_EXAMPLE else len(doc.markers(doc.example_source(code, "bad"))))
        assert ("\n+++ b/bad.py\n" in written) == (code in fix.FIXABLE), code


@pytest.mark.parametrize("code", fix.FIXABLE)
def test_fix_turns_the_bad_example_into_the_fixed_one(code: str) -> None:
    bad = doc.example(code, "bad")
    outcome = fix.fix_source(bad, "example.py", codes=(code,))
    assert outcome.error is None and outcome.left == ()
    assert {d.code for d in outcome.applied} == {code}
    assert outcome.fixed == doc.example_source(code, "fixed")


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
