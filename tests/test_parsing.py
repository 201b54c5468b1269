"""skiplint.parsing.parse_module gives libcst's own trees, built without validating again the nodes
of libcst's parser; every other node (another thread's, a signal handler's, one built by hand, any
other libcst.parse_module's) is validated, during a parse, after it, and after an interrupted one."""

from __future__ import annotations

import _thread
import inspect
import signal
import sys
import threading
import types
from pathlib import Path
from typing import Callable, Iterator, Optional

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


#: Valid Python whose parser-built tree libcst's validation refuses (LibCST issue 1061: TypeError
#: in IfExp._validate): libcst.parse_module raises, skiplint's parse keeps the tree.
VALIDATION_GAP = "a = b if c else(lambda: d)\n"


def _libcst_own() -> tuple[object, dict[type, object]]:
    """libcst's own CSTNode.__post_init__ and the node classes' own __init__s, whatever skiplint
    has installed in this process so far."""
    hook = cst.CSTNode.__dict__["__post_init__"]
    if hook is getattr(parsing, "_validate_unless_parsed", None):
        hook = parsing._LIBCST_POST_INIT
    inits = {cls: original for cls, original, _ in parsing._PLAIN_INITS or ()}
    return hook, inits


#: libcst's own __init__s, as learnt from the plain inits that skiplint builds (an interrupted
#: parse may leave some installed before it keeps their table).
_OWN_INITS: dict[type, object] = {}


def _restore_libcst() -> None:
    """libcst as it is before skiplint's first parse, and parsing's state as in a fresh process."""
    hook, inits = _libcst_own()
    _OWN_INITS.update(inits)
    for cls, original in _OWN_INITS.items():
        setattr(cls, "__init__", original)
    setattr(cst.CSTNode, "__post_init__", hook)
    parsing._PLAIN_INITS = None
    for name, fresh in (("_NATIVE_PARSE", None), ("_LIBCST_POST_INIT", getattr(parsing, "_validate", None)),
                        ("_UNCHECKED_THREAD", None)):
        if hasattr(parsing, name):
            setattr(parsing, name, fresh)


@pytest.fixture
def fresh_libcst(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The test starts as in a process that has parsed nothing; whatever it leaves is undone."""
    _restore_libcst()
    monkeypatch.setattr(parsing, "_PARSED", 0)
    yield
    _restore_libcst()


def assert_libcst_is_libcst() -> None:
    """What anyone but skiplint's parse sees of libcst: a node built by hand is validated, and
    libcst's own parse keeps its validation (and its issue-1061 refusal)."""
    with pytest.raises(cst.CSTValidationError):
        cst.Name(INVALID_NAME)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("ok").with_changes(value=INVALID_NAME)
    with pytest.raises(TypeError):
        cst.parse_module(VALIDATION_GAP)


@pytest.fixture
def plain_inits(fresh_libcst: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every parse of the test runs with the plain __init__s, installed at its first parse."""
    monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", -1)


@pytest.mark.usefixtures("plain_inits")
def test_trees_built_by_the_plain_inits_are_libcst_trees() -> None:
    assert _compare_with_libcst() > 100
    assert parsing._PLAIN_INITS is not None
    assert_libcst_is_libcst()  # outside the parse: validated


@pytest.mark.usefixtures("fresh_libcst")
def test_plain_inits_take_the_parameters_of_the_dataclass_ones() -> None:
    inits = parsing._plain_inits(cst.CSTNode)
    assert len(inits) > 100
    taken = {cls for cls, _, _ in inits}
    # the commonest nodes, and one with a default factory (Tuple's parentheses)
    assert {cst.SimpleWhitespace, cst.Name, cst.Attribute, cst.Call, cst.Tuple, cst.Module} <= taken
    for cls, original, plain in inits:
        assert cls.__dict__["__init__"] is original
        assert inspect.signature(plain) == inspect.signature(original), cls
        assert (plain.__qualname__, plain.__module__) == (original.__qualname__, original.__module__)


@pytest.mark.usefixtures("fresh_libcst")
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
    with pytest.raises(cst.CSTValidationError, match="^Cannot have empty name identifier.$"):
        plain[cst.Name](object.__new__(cst.Name), INVALID_NAME)  # not called by the parser: validated
    messages = []
    for init in (plain[cst.Name], cst.Name.__init__):
        with pytest.raises(TypeError, match="unexpected keyword argument 'nonesuch'") as error:
            init(object.__new__(cst.Name), "e", nonesuch=1)
        messages.append(str(error.value))
    assert messages[0] == messages[1]  # Python names the same function


def test_the_changes_to_libcst_are_made_once_and_kept(fresh_libcst: None, monkeypatch: pytest.MonkeyPatch) -> None:
    own_hook, _ = _libcst_own()
    own_init = cst.Name.__dict__["__init__"]
    monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", len("v = 1\n"))
    assert parsing.parse_module("v = 1\n").code == "v = 1\n"  # the first parse: the hook only
    assert cst.CSTNode.__dict__["__post_init__"] is parsing._validate_unless_parsed
    assert parsing._LIBCST_POST_INIT is own_hook and parsing._PLAIN_INITS is None
    assert cst.Name.__dict__["__init__"] is own_init
    assert_libcst_is_libcst()
    assert parsing.parse_module(VALIDATION_GAP).code == VALIDATION_GAP  # past the threshold
    assert parsing._PLAIN_INITS is not None
    installed = {cls: cls.__dict__["__init__"] for cls, _, _ in parsing._PLAIN_INITS}
    assert installed == {cls: plain for cls, _, plain in parsing._PLAIN_INITS}
    assert installed[cst.Name] is not own_init
    with pytest.raises(parsing.ParseFailure):
        parsing.parse_module("v = = 1\n")
    assert parsing.parse_module("v = 2\n").code == "v = 2\n"
    assert {cls: cls.__dict__["__init__"] for cls in installed} == installed  # nothing undone, nothing redone
    assert cst.CSTNode.__dict__["__post_init__"] is parsing._validate_unless_parsed
    assert_libcst_is_libcst()


def test_a_run_over_a_few_files_builds_no_plain_inits(fresh_libcst: None) -> None:
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


@pytest.mark.parametrize("threshold", [10**9, -1], ids=["dataclass inits", "plain inits"])
def test_valid_python_that_libcst_validation_refuses_is_checked(fresh_libcst: None, monkeypatch: pytest.MonkeyPatch,
                                                                 threshold: int) -> None:
    """LibCST issue 1061: its parser reads `x if c else(lambda: y)`, then IfExp._validate raises
    TypeError on the parser's own node. The tree is kept, not reported as unparsable, and libcst's
    own parse still refuses it, before and after."""
    monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", threshold)
    with pytest.raises(TypeError):
        cst.parse_module(VALIDATION_GAP)
    module = parsing.parse_module(VALIDATION_GAP)
    assert (parsing._PLAIN_INITS is not None) == (threshold < 0)
    assert module.code == VALIDATION_GAP
    assignment = module.body[0].body[0]
    assert isinstance(assignment, cst.Assign)
    assert isinstance(assignment.value, cst.IfExp)
    assert isinstance(assignment.value.orelse, cst.Lambda)
    assert_libcst_is_libcst()


def test_validation_stands_after_every_way_a_parse_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parsing.parse_module("x = 1\n").code == "x = 1\n"
    with pytest.raises(parsing.ParseFailure, match="^syntax error"):
        parsing.parse_module("x = = 1\n")
    assert_libcst_is_libcst()

    def too_deep(*args: object, **kwargs: object) -> cst.Module:
        raise RecursionError

    monkeypatch.setattr(parsing, "_NATIVE_PARSE", too_deep)
    with pytest.raises(parsing.ParseFailure, match=r"^nested too deeply for the parser \(RecursionError\)$"):
        parsing.parse_module("x = 1\n")
    assert_libcst_is_libcst()


def _during_the_parse(act: Callable[[], None]) -> None:
    """Call `act` once, from a trace function, as the parse of a small text builds its first node
    (in the frame of that node's __init__, with the parse under way below it)."""
    done: list[bool] = []

    def trace(frame: types.FrameType, event: str, arg: object) -> Optional[Callable[..., object]]:
        if not done and event == "call" and isinstance(frame.f_locals.get("self"), cst.CSTNode):
            done.append(True)
            act()
        return None

    sys.settrace(trace)
    try:
        module = parsing.parse_module("w = [v for v in range(3)]\n")
    finally:
        sys.settrace(None)
    assert done == [True] and module.code == "w = [v for v in range(3)]\n"


def _refusals() -> list[str]:
    """What libcst refuses, as anyone but skiplint's parse builds it: the names of the errors."""
    refused = []
    for build in (lambda: cst.Name(INVALID_NAME), lambda: cst.parse_module(VALIDATION_GAP)):
        try:
            build()
        except (cst.CSTValidationError, TypeError) as error:
            refused.append(type(error).__name__)
    return refused


@pytest.mark.parametrize("threshold", [10**9, -1], ids=["dataclass inits", "plain inits"])
def test_a_thread_started_without_threading_builds_validated_nodes_during_a_parse(
        fresh_libcst: None, monkeypatch: pytest.MonkeyPatch, threshold: int) -> None:
    monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", threshold)
    parsing.parse_module("w = 0\n")  # the changes made, when the threshold allows
    there: list[list[str]] = []
    finished = _thread.allocate_lock()

    def build() -> None:
        try:
            there.append(_refusals())
        finally:
            finished.release()

    def start_one() -> None:
        finished.acquire()
        _thread.start_new_thread(build, ())
        finished.acquire()  # until the thread is done; the parse waits below
        finished.release()

    _during_the_parse(start_one)
    assert there == [["CSTValidationError", "TypeError"]]


@pytest.mark.parametrize("threshold", [10**9, -1], ids=["dataclass inits", "plain inits"])
def test_a_threading_thread_builds_validated_nodes_during_a_parse(
        fresh_libcst: None, monkeypatch: pytest.MonkeyPatch, threshold: int) -> None:
    monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", threshold)
    parsing.parse_module("w = 0\n")
    there: list[list[str]] = []

    def start_one() -> None:
        other = threading.Thread(target=lambda: there.append(_refusals()))
        other.start()
        other.join()

    _during_the_parse(start_one)
    assert there == [["CSTValidationError", "TypeError"]]


@pytest.mark.parametrize("threshold", [10**9, -1], ids=["dataclass inits", "plain inits"])
def test_a_signal_handler_during_a_parse_builds_validated_nodes(
        fresh_libcst: None, monkeypatch: pytest.MonkeyPatch, threshold: int) -> None:
    monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", threshold)
    parsing.parse_module("w = 0\n")
    handled: list[list[str]] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: handled.append(_refusals()))
    try:
        _during_the_parse(lambda: signal.raise_signal(signal.SIGINT))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert handled == [["CSTValidationError", "TypeError"]]


def _interrupt_at(event: int, how: str) -> Callable[[types.FrameType, str, object], object]:
    """A trace function that raises KeyboardInterrupt at the event-th event it sees (of every
    frame: calls, lines, returns), directly or from a SIGINT handler."""
    seen = [0]

    def trace(frame: types.FrameType, kind: str, arg: object) -> object:
        seen[0] += 1
        if seen[0] == event:
            if how == "signal":
                signal.raise_signal(signal.SIGINT)
            raise KeyboardInterrupt
        return trace

    return trace


def _interrupted(event: int, how: str, text: str) -> bool:
    """Parse `text` with a KeyboardInterrupt at the event-th traced event; whether it came."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.settrace(_interrupt_at(event, how))
    try:
        parsing.parse_module(text)
    except KeyboardInterrupt:
        return True
    finally:
        sys.settrace(None)
        signal.signal(signal.SIGINT, previous)
    return False


def _parse_elsewhere(text: str) -> Optional[str]:
    """The code of parse_module(text) in another thread, or None when it has not ended within a
    minute (a lock that the interrupted parse left held: it would wait for ever)."""
    done: list[str] = []
    other = threading.Thread(target=lambda: done.append(parsing.parse_module(text).code), daemon=True)
    other.start()
    other.join(timeout=60)
    return done[0] if done else None


@pytest.mark.parametrize("how", ["trace", "signal"])
@pytest.mark.parametrize("stage", ["first parse", "first past the threshold", "later"])
def test_an_interrupted_parse_never_leaves_libcst_altered(fresh_libcst: None, monkeypatch: pytest.MonkeyPatch,
                                                         stage: str, how: str) -> None:
    """Ctrl-C at every point of a parse: making the changes, parsing, ending (in every frame: the
    token scan, the parser's node __init__s, what follows). Whatever point it lands on, libcst
    stays libcst for everyone else, and the next parse is whole."""
    table = parsing._plain_inits(cst.CSTNode)  # built once here: building is 30,000 traced events
    _OWN_INITS.update({cls: original for cls, original, _ in table})
    monkeypatch.setattr(parsing, "_plain_inits", lambda node: table)
    text = "x = f(1, *y)\n"
    events = 0
    while True:
        events += 1
        _restore_libcst()
        monkeypatch.setattr(parsing, "_PLAIN_INITS_AFTER", -1 if stage != "first parse" else 10**9)
        if stage == "later":
            parsing.parse_module("w = 0\n")
        if not _interrupted(events, how, text):
            break
        assert_libcst_is_libcst()
        assert _parse_elsewhere(text) == text, f"the parse after event {events} did not end"
        assert parsing.parse_module(VALIDATION_GAP).code == VALIDATION_GAP
        assert_libcst_is_libcst()
    assert events > 150  # every event of the parse, up to the one after its last


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
