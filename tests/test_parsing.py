"""skiplint.parsing.parse_module gives libcst's own trees, built without validating again the nodes
of libcst's parser; every node built outside that parse, or by another thread, is validated."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skiplint import engine, parsing

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SETTINGS = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: What libcst's validation refuses in a hand-built node (Name._validate: an empty identifier).
INVALID_NAME = ""


def _parses() -> list[Path]:
    return sorted(FIXTURES.rglob("*.py"))


def _compare_with_libcst() -> int:
    """Parse every fixture both ways; the trees and their code must be the same. The number compared."""
    compared = 0
    gaps: list[str] = []
    for path in _parses():
        text = path.read_text(encoding="utf-8")
        if parsing.hazard(text) is not None:
            continue
        try:
            expected = cst.parse_module(text)
        except cst.ParserSyntaxError:
            with pytest.raises(parsing.ParseFailure):
                parsing.parse_module(text)
            continue
        except TypeError:  # the one fixture of libcst's validation gap, below
            gaps.append(path.name)
            assert parsing.parse_module(text).code == text
            continue
        module = parsing.parse_module(text)
        assert module.deep_equals(expected), path
        assert module.code == text, path
        compared += 1
    assert gaps == ["parse_libcst_validation_gap.py"]
    return compared


def test_trees_are_the_ones_libcst_builds_with_validation() -> None:
    assert _compare_with_libcst() > 100


@pytest.fixture
def plain_inits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every parse of the test runs with the plain __init__s: built at once, no other thread."""
    monkeypatch.setattr(parsing, "_PLAIN_INITS", None)
    monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", -1)
    monkeypatch.setattr(threading, "active_count", lambda: 1)


@pytest.mark.usefixtures("plain_inits")
def test_trees_built_by_the_plain_inits_are_libcst_trees() -> None:
    assert _compare_with_libcst() > 100
    assert parsing._PLAIN_INITS is not None
    with pytest.raises(cst.CSTValidationError):
        cst.Name(INVALID_NAME)  # outside the parse: libcst's own __init__, validated


def test_plain_inits_take_the_parameters_of_the_dataclass_ones() -> None:
    inits = parsing._plain_inits(cst.CSTNode)
    assert len(inits) > 100
    taken = {cls for cls, _, _ in inits}
    # the commonest nodes, and one with a default factory (Tuple's parentheses)
    assert {cst.SimpleWhitespace, cst.Name, cst.Attribute, cst.Call, cst.Tuple, cst.Module} <= taken
    for cls, original, plain in inits:
        assert cls.__dict__["__init__"] is original
        assert inspect.signature(plain) == inspect.signature(original), cls


def test_a_plain_init_sets_what_the_dataclass_one_sets() -> None:
    plain = {cls: init for cls, _, init in parsing._plain_inits(cst.CSTNode)}
    element = cst.Element(cst.Name("a"))
    for cls, args, kwargs in [
        (cst.Tuple, ([element],), {}),  # lpar and rpar from their default factories
        (cst.Tuple, (), {"elements": [element], "lpar": [], "rpar": []}),
        (cst.Name, ("b",), {}),
        (cst.Attribute, (), {"value": cst.Name("c"), "attr": cst.Name("d")}),
    ]:
        node = object.__new__(cls)
        plain[cls](node, *args, **kwargs)
        assert node.deep_equals(cls(*args, **kwargs)), cls
    name = object.__new__(cst.Name)
    plain[cst.Name](name, INVALID_NAME)  # not validated
    assert name.value == INVALID_NAME
    with pytest.raises(TypeError):
        plain[cst.Name](object.__new__(cst.Name), "e", nonesuch=1)


@pytest.mark.usefixtures("plain_inits")
def test_the_plain_inits_stand_only_while_the_parse_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    real_parse, original = cst.parse_module, cst.Name.__dict__["__init__"]
    during: list[object] = []

    def parse(text: str) -> cst.Module:
        during.append(cst.Name.__dict__["__init__"])
        return real_parse(text)

    monkeypatch.setattr(cst, "parse_module", parse)
    parsing.parse_module("v = 1\n")
    assert parsing._PLAIN_INITS is not None
    plain = {cls: init for cls, _, init in parsing._PLAIN_INITS}[cst.Name]
    assert during == [plain] and cst.Name.__dict__["__init__"] is original
    with pytest.raises(parsing.ParseFailure):
        parsing.parse_module("v = = 1\n")
    assert during == [plain, plain] and cst.Name.__dict__["__init__"] is original
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    parsing.parse_module("v = 2\n")  # another thread alive: libcst's own __init__s
    assert during == [plain, plain, original]
    assert all(cls.__dict__["__init__"] is init for cls, init, _ in parsing._PLAIN_INITS)


def test_a_run_over_a_few_files_builds_no_plain_inits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "_PLAIN_INITS", None)
    monkeypatch.setattr(parsing, "_PARSED", 0)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    small = "x = 1\n" * 1000
    for _ in range(parsing._PLAIN_INITS_AFTER // len(small)):
        parsing.parse_module(small)
    assert parsing._PLAIN_INITS is None
    parsing.parse_module(small)
    assert parsing._PLAIN_INITS is not None and parsing._PARSED > parsing._PLAIN_INITS_AFTER


def test_the_validation_gap_fixture_is_checked_at_exact_places() -> None:
    path = FIXTURES / "parse_libcst_validation_gap.py"
    result = engine.check_text(path.read_text(encoding="utf-8"), str(path))
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(12, 18, "SKP103"), (15, 14, "SKP101")]  # 0-based columns


def test_valid_python_that_libcst_validation_refuses_is_checked() -> None:
    """LibCST issue 1061: its parser reads `x if c else(lambda: y)`, then IfExp._validate raises
    TypeError on the parser's own node. The tree is kept, not reported as unparsable."""
    text = "a = b if c else(lambda: d)\n"
    with pytest.raises(TypeError):
        cst.parse_module(text)
    module = parsing.parse_module(text)
    assert module.code == text
    assignment = module.body[0].body[0]
    assert isinstance(assignment, cst.Assign)
    assert isinstance(assignment.value, cst.IfExp)
    assert isinstance(assignment.value.orelse, cst.Lambda)


def test_validation_is_back_after_every_way_a_parse_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    original = cst.CSTNode.__dict__["__post_init__"]
    assert parsing.parse_module("x = 1\n").code == "x = 1\n"
    with pytest.raises(parsing.ParseFailure, match="^syntax error"):
        parsing.parse_module("x = = 1\n")
    inside: list[object] = []

    def too_deep(text: str) -> cst.Module:
        inside.append(cst.CSTNode.__dict__["__post_init__"])
        raise RecursionError

    monkeypatch.setattr(cst, "parse_module", too_deep)
    with pytest.raises(parsing.ParseFailure, match=r"^nested too deeply for the parser \(RecursionError\)$"):
        parsing.parse_module("x = 1\n")
    assert inside == [parsing._NO_CHECK if threading.active_count() == 1 else parsing._validate_elsewhere]
    assert cst.CSTNode.__dict__["__post_init__"] is original
    assert parsing._UNCHECKED_THREAD is None
    with pytest.raises(cst.CSTValidationError):
        cst.Name(INVALID_NAME)


def test_only_the_parsing_thread_skips_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another thread alive when the parse starts builds a node while it runs: validated."""
    real_parse = cst.parse_module
    here: list[cst.Name] = []
    there: list[BaseException] = []
    parsing_now, built = threading.Event(), threading.Event()

    def build() -> None:
        parsing_now.wait(timeout=30)
        try:
            cst.Name(INVALID_NAME)
        except cst.CSTValidationError as error:
            there.append(error)
        built.set()

    def parse_beside_another_thread(text: str) -> cst.Module:
        here.append(cst.Name(INVALID_NAME))  # this thread, inside the parse: not validated
        parsing_now.set()
        built.wait(timeout=30)
        return real_parse(text)

    other = threading.Thread(target=build)
    other.start()
    monkeypatch.setattr(cst, "parse_module", parse_beside_another_thread)
    assert parsing.parse_module("y = 2\n").code == "y = 2\n"
    other.join()
    assert [name.value for name in here] == [INVALID_NAME]
    assert len(there) == 1 and isinstance(there[0], cst.CSTValidationError)


def test_a_parse_with_no_other_thread_skips_even_the_thread_test(monkeypatch: pytest.MonkeyPatch) -> None:
    real_parse = cst.parse_module
    during: list[object] = []

    def parse(text: str) -> cst.Module:
        during.append(cst.CSTNode.__dict__["__post_init__"])
        return real_parse(text)

    monkeypatch.setattr(cst, "parse_module", parse)
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    module = parsing.parse_module("w = [v for v in range(3)]\n")
    assert during == [tuple] and module.code == "w = [v for v in range(3)]\n"
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    parsing.parse_module("w = 4\n")
    assert during == [tuple, parsing._validate_elsewhere]
    with pytest.raises(cst.CSTValidationError):
        cst.Name(INVALID_NAME)  # outside the parse: validated again


def test_a_libcst_without_post_init_validation_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    real_node, real_parse = cst.CSTNode, cst.parse_module
    original = real_node.__dict__["__post_init__"]
    during: list[object] = []

    def parse(text: str) -> cst.Module:
        during.append(real_node.__dict__["__post_init__"])
        return real_parse(text)

    monkeypatch.setattr(cst, "CSTNode", type("CSTNode", (), {}))
    monkeypatch.setattr(cst, "parse_module", parse)
    assert parsing.parse_module("z = 3\n").code == "z = 3\n"
    assert during == [original]


# -- the quick bounds of the token scan -------------------------------------------------------------

def _scan(text: str) -> tuple[str | None, list[tuple[int, str]], bool]:
    scan = parsing._Scan(text)
    try:
        scan.code(0)
    except parsing._Refused as refused:
        return str(refused), scan.tops, scan.deep
    return None, scan.tops, scan.deep


def _agrees(text: str) -> bool:
    """Whether the quick bounds took the text; when they did, the exact scan accepts it too,
    finds the same column-0 lines, and finds the tree deep only where the bounds say it may be."""
    quick = parsing._quick_bounds(text)
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
    assert parsing._quick_bounds(text) is None
    refused, _, _ = _scan(text)
    verdict = parsing.hazard(text)
    assert (verdict is None and refused is None) or (verdict is not None and verdict[0] == refused)


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
    assert parsing.hazard(text) is None
    assert parsing.top_level_starts(text) is not None


@pytest.mark.slow
@SETTINGS
@given(st.text(alphabet="()[]{}'\"#\\\n\r \t\f\vfFtTrRbBu1x.=,:é_²", max_size=80))
def test_quick_bounds_never_take_what_the_scan_refuses(text: str) -> None:
    _agrees(text)
