"""skiplint.parsing.parse_module gives libcst's own trees, parsed by libcst as it ships: libcst's
classes and methods are never replaced, and a text is parsed less where its top-level statements
were parsed before (StatementParts), with the same trees as libcst's parse of the whole text."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skiplint import engine, guard, limits, parsing, tokenscan
from tests.hazard import parser_hazard

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SETTINGS = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: What libcst's validation refuses in a hand-built node (Name._validate: an empty identifier).
INVALID_NAME = ""


def _parses() -> list[Path]:
    return sorted(FIXTURES.rglob("*.py"))


def _compare_with_libcst(parts: parsing.StatementParts) -> int:
    """Parse every fixture both ways; the trees and their code must be the same. The number compared."""
    compared = 0
    gaps: list[str] = []
    for path in _parses():
        text = path.read_text(encoding="utf-8")
        if parser_hazard(text) is not None:
            continue
        try:
            expected = cst.parse_module(text)
        except cst.ParserSyntaxError:
            with pytest.raises(parsing.ParseFailure):
                parsing.parse_module(text, parts)
            continue
        except TypeError:  # the one fixture of libcst's validation gap, below
            gaps.append(path.name)
            continue
        module = parsing.parse_module(text, parts)
        assert module.deep_equals(expected), path
        assert module.code == text, path
        compared += 1
    assert gaps == ["parse_libcst_validation_gap.py"]
    return compared


def test_trees_are_the_ones_libcst_builds() -> None:
    parts = parsing.StatementParts()
    assert _compare_with_libcst(parts) > 100
    assert parts.reused == 0 or parts.whole > 0


def test_trees_made_of_statements_parsed_before_are_the_ones_libcst_builds() -> None:
    """A statement is kept the second time it is met: the third time round every fixture is made
    of statements kept before, none parsed whole."""
    parts = parsing.StatementParts()
    _compare_with_libcst(parts)
    _compare_with_libcst(parts)
    whole, reused = parts.whole, parts.reused
    assert _compare_with_libcst(parts) > 100
    assert parts.whole == whole and parts.reused - reused > 900


def test_a_statement_met_twice_in_one_text_is_two_trees() -> None:
    """The analysis tells nodes apart by identity: a repeated statement is never one shared node."""
    parts = parsing.StatementParts()
    text = "def f(x):\n    return x\n\ndef f(x):\n    return x\n\nx = 1\n"
    for _ in range(3):
        module = parsing.parse_module(text, parts)
    assert parts.reused == 2 and module.code == text  # the first f and the assignment, the third time
    assert module.body[0].body is not module.body[1].body
    assert module.body[0].body.deep_equals(module.body[1].body)
    assert module.deep_equals(cst.parse_module(text))


@pytest.mark.parametrize("text", [
    "x = 1\r\ny = 2\n",  # a line break of another kind than the text's first
    "if a:\n  b = 1\n\ndef f():\n    return 1\n",  # two indentations: the first block's wins
    "if a: b = 1\nelse:\n    c = 1\n\nd = 1\n",  # a one-line clause before an indented one
    "# only a comment\n",
    "x = 1\n# trailing comment\n\n",
    "@d\n# between\n@e\nclass A:\n    pass\n    # in the block\n# after it\nx = 1",
    # libcst alone drops the blank lines of `x = (...)\n\n\n    # note\n` (an indented comment that
    # ends a module): that statement's part cannot stand for its text
    "x = (\n    1,\n)\n\n\n    # note\ndef f():\n    pass\n",
])
def test_texts_that_read_their_lines_alike_or_not_give_libcst_trees(text: str) -> None:
    parts = parsing.StatementParts()
    for _ in range(3):
        module = parsing.parse_module(text, parts)
        assert module.deep_equals(cst.parse_module(text)) and module.code == text, text


def test_only_statements_met_again_are_kept_and_within_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    parts = parsing.StatementParts()
    parsing.parse_module("a = 1\nb = 2\n", parts)
    assert parts.parts == {} and parts.whole == 1  # nothing met before: one parse of the whole text
    parsing.parse_module("a = 1\nc = 3\n", parts)
    assert list(parts.parts) == ["a = 1\n"]
    monkeypatch.setattr(limits, "PARSE_CACHE_CHARS", 10)
    for name in "defgh":
        parsing.parse_module(f"{name} = 1\nc = 3\n", parts)
        parsing.parse_module(f"{name} = 1\nc = 3\n", parts)
    assert 0 < parts.chars <= 10 and sum(map(len, parts.parts)) == parts.chars


def test_libcst_is_left_as_it_ships() -> None:
    """No class or method of libcst is replaced: nodes built by anyone are validated, libcst's own
    parse keeps its validation (and its issue-1061 refusal), during a parse in another thread too."""
    originals = {cls: cls.__dict__.get("__init__") for cls in _node_classes()}
    hook = cst.CSTNode.__dict__["__post_init__"]
    for path in _parses()[:40]:
        try:
            parsing.parse_module(path.read_text(encoding="utf-8"))
        except parsing.ParseFailure:
            pass
    parsing.parse_module(VALIDATION_GAP)
    assert {cls: cls.__dict__.get("__init__") for cls in _node_classes()} == originals
    assert cst.CSTNode.__dict__["__post_init__"] is hook
    with pytest.raises(cst.CSTValidationError):
        cst.Name(INVALID_NAME)
    with pytest.raises(TypeError):
        cst.parse_module(VALIDATION_GAP)
    refused: list[str] = []

    def build() -> None:
        try:
            cst.Name(INVALID_NAME)
        except cst.CSTValidationError as error:
            refused.append(type(error).__name__)

    other = threading.Thread(target=build)
    other.start()
    parsing.parse_module((FIXTURES / "compositions" / "unet.py").read_text(encoding="utf-8"))
    other.join()
    assert refused == ["CSTValidationError"]


def _node_classes() -> list[type]:
    found: list[type] = []
    pending: list[type] = [cst.CSTNode]
    while pending:
        for sub in type.__subclasses__(pending.pop()):
            if sub not in found:
                found.append(sub)
                pending.append(sub)
    return found


#: Valid Python whose parser-built tree libcst's validation refuses (LibCST issue 1061: TypeError
#: in IfExp._validate): libcst.parse_module raises; skiplint parses it with a blank after `else`.
VALIDATION_GAP = "a = b if c else(lambda: d)\n"


def test_the_validation_gap_fixture_is_checked_at_exact_places() -> None:
    path = FIXTURES / "parse_libcst_validation_gap.py"
    result = engine.check_text(path.read_text(encoding="utf-8"), str(path))
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(12, 18, "SKP103"), (15, 14, "SKP101")]  # 0-based columns


def test_valid_python_that_libcst_validation_refuses_is_checked() -> None:
    """LibCST issue 1061: its parser reads `x if c else(lambda: y)`, then IfExp._validate raises
    TypeError on the parser's own node. The text is parsed with a blank after `else` (the same
    tree but for that blank), not reported as unparsable."""
    module = parsing.parse_module(VALIDATION_GAP)
    assert module.code == "a = b if c else (lambda: d)\n"
    assignment = module.body[0].body[0]
    assert isinstance(assignment, cst.Assign)
    assert isinstance(assignment.value, cst.IfExp)
    assert isinstance(assignment.value.orelse, cst.Lambda)
    with pytest.raises(parsing.ParseFailure, match="^syntax error"):
        parsing.parse_module("a = b if c else(lambda: d) +\n")


def test_every_way_a_parse_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parsing.parse_module("x = 1\n").code == "x = 1\n"
    with pytest.raises(parsing.ParseFailure, match="^syntax error"):
        parsing.parse_module("x = = 1\n")

    def too_deep(text: str) -> cst.Module:
        raise RecursionError

    monkeypatch.setattr(parsing, "_libcst_parse", too_deep)
    with pytest.raises(parsing.ParseFailure, match=r"^nested too deeply for the parser \(RecursionError\)$"):
        parsing.parse_module("x = 1\n", parsing.StatementParts())  # none kept: libcst parses it


# -- the quick bounds of the token scan -------------------------------------------------------------

def _scan(text: str) -> tuple[str | None, list[tuple[int, str]], bool]:
    scan = tokenscan._Scan(text)
    try:
        scan.code(0)
    except tokenscan._Refused as refused:
        return str(refused), scan.tops, scan.deep
    return None, scan.tops, scan.deep


def _agrees(text: str) -> bool:
    """Whether the quick bounds took the text; when they did, the exact scan accepts it too,
    finds the same column-0 lines, and finds the tree deep only where the bounds say it may be."""
    quick = guard._quick_bounds(text)
    if quick is None:
        return False
    refused, tops, deep = _scan(text)
    assert refused is None, (text, refused)
    assert quick[0] == tops, text
    assert quick[1] or not deep, text
    return True


def test_quick_bounds_take_the_fixtures_and_agree_with_the_scan() -> None:
    taken = [path.name for path in _parses() if _agrees(path.read_text(encoding="utf-8"))]
    assert len(taken) > 100


@pytest.mark.parametrize("text", [
    'x = f"{a}"\n', "x = F'{a}'\n", 'x = rf"{a}"\n', 'x = fR"""{a}"""\n', 'x = t"{a}"\n',
    'x = 1if"{a}"\n',  # a number, then an f-string
    'x = 1\\\n    + 2\n', "if x:\n    \\\r    y = 1\n",  # backslash continuations
    "x = )(\n",  # a stray close: the scan stays at depth 0
    "x = " + "(" * 201 + ")" * 201 + "\n",
    "x = [" + "a, " * 10 + "a " * 1501 + "]\n",  # one long run of tokens
    "if a:\n    pass\n" + "elif a:\n    pass\n" * 2001,
    "x = 1\n" * 20_000,  # longer than the token limit
    "x = [" + "a, " * 2000 + "]\n",  # the scan's runs end at each comma; the bound's at the line
])
def test_quick_bounds_leave_to_the_scan_what_they_cannot_bound(text: str) -> None:
    assert guard._quick_bounds(text) is None
    refused, _, _ = _scan(text)
    verdict = parser_hazard(text)
    assert verdict == refused


@pytest.mark.parametrize("text", [
    "x = 'out' + \"last\" + '''it'''\n",  # words ending in f or t before a closing quote
    'x = b"a" + rb"b" + Rb"c" + u"d" + bb"e" + fb"g" + abcf"h"\n',
    "@decorator\nclass A:\n    pass\n\n\nelse_ = 1\n# comment at column 0\n  # indented\n",
    '"""doc"""\nx = (1,\n     2)\n\fy = 3\n\vz = 4\n',
    "\ufeffx = 1\r\ny = [\r\n  2]\rz = 3",
    "x = '''a\n(\n''' + ')' + \"#\"  # ( [\nq = 1\n",
    "2 + x\nélan = 1\n_a = 2\nlambda: 0\n.5\n²x = 1\n",
    "if a:\n    pass\n" + "elif a:\n    pass\n" * 1999,
    "x = " + "(" * 200 + ")" * 200 + "\n",
    "x = [" + "a, " * 400 + "]\n",
    "x = 1\n\\",  # a backslash that ends the text is no token
])
def test_quick_bounds_agree_with_the_scan(text: str) -> None:
    assert _agrees(text)
    assert isinstance(guard.scan(text), guard.Scanned)


@pytest.mark.slow
@SETTINGS
@given(st.text(alphabet="()[]{}'\"#\\\n\r \t\f\vfFtTrRbBu1x.=,:é_²", max_size=80))
def test_quick_bounds_never_take_what_the_scan_refuses(text: str) -> None:
    _agrees(text)
