"""Reported positions: the locator generates code once for the reported nodes and must agree
with libcst's PositionProvider (which positions every node of the module) on every node kind
skiplint reports."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from skiplint import parsing
from skiplint.positions import Locator, _by_statement

REPO = Path(__file__).resolve().parent.parent
#: PositionProvider rebuilds every node as it visits, and libcst's validation refuses one node of
#: the validation-gap fixture (tests/test_parsing.py checks that file's positions).
FIXTURES = sorted(p for p in (REPO / "fixtures").rglob("*.py") if p.name != "parse_libcst_validation_gap.py")
#: Every node type a finding can be reported at (commands, yields, declarations, decorators,
#: defs and classes, imports, layer expressions inside compositions, pipe calls, arguments).
REPORTED = (cst.Call, cst.Name, cst.Attribute, cst.Yield, cst.Arg, cst.FunctionDef, cst.ClassDef,
            cst.Decorator, cst.Import, cst.ImportFrom, cst.SimpleString, cst.ConcatenatedString,
            cst.List, cst.Tuple, cst.Set, cst.BinaryOperation, cst.Subscript, cst.Integer,
            cst.Lambda, cst.Dict, cst.UnaryOperation, cst.ListComp, cst.GeneratorExp, cst.If)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(REPO)))
def test_locator_agrees_with_position_provider(path: Path) -> None:
    module = parsing.parse_module(path.read_text(encoding="utf-8"))  # the tree skiplint analyses
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [node for node in positions if isinstance(node, REPORTED)]
    locator = Locator(module)
    locator.locate(nodes)
    got = {id(node): locator.position(node) for node in nodes}
    want = {id(node): (positions[node].start.line, positions[node].start.column) for node in nodes}
    assert got == want


def test_decorated_def_is_at_its_keyword_and_parenthesized_node_inside_its_parentheses() -> None:
    module = cst.parse_module("@dec\n@dec2(1)\nasync def f(x):\n    return ((yield x))\n")
    func = module.body[0]
    assert isinstance(func, cst.FunctionDef)
    ret = func.body.body[0].body[0]  # type: ignore[attr-defined]
    locator = Locator(module)
    assert locator.position(func) == (3, 0)
    assert locator.position(ret.value) == (4, 13)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(REPO)))
def test_locator_given_the_source_agrees_with_position_provider(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    module = parsing.parse_module(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [node for node in positions if isinstance(node, REPORTED)]
    want = {id(node): (positions[node].start.line, positions[node].start.column) for node in nodes}
    whole = Locator(module)  # the whole module's code: the ends the fast path must give too
    whole.locate(nodes)
    scanned = parsing.StatementParts().top_level_starts(text)
    for chosen in (nodes, nodes[::7], nodes[-3:]):  # every node at once, a few, the last ones
        expected = {id(n): want[id(n)] for n in chosen}
        locator = Locator(module, text, scanned)
        locator.locate(chosen)
        assert {id(node): locator.position(node) for node in chosen} == expected
        if chosen:  # from the statements that hold them, not from the whole module's code
            fast = _by_statement(module, text, scanned, {id(n): n for n in chosen})
            assert fast is not None and fast[0] == expected
            assert fast[1] == {id(n): whole.end(n) for n in chosen}


@pytest.mark.parametrize("text", [
    "# header\n\n@dec\n\n# between\n@dec2(\n    1,\n)\n# after\nclass A:\n    x = (f(1))\n\n\n# lead\ny = g(2); z = h(3)\n",
    "if True:\n    a = f(1)\n    # indented trailer\n# dedented\nb = f(2)\n",
    "x = f(1)\r\ny = f(2)\r\n",
    "x = f(1)\ny = f(2)",
    "x = '''\nf(9)\n'''\n@d\n\\\n\ndef g(): return f(3)\n",
])
def test_locator_given_the_source_on_layouts_that_shift_lines(text: str) -> None:
    module = cst.parse_module(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [node for node in positions if isinstance(node, REPORTED)]
    for node in nodes:
        locator = Locator(module, text)
        start = positions[node].start
        assert locator.position(node) == (start.line, start.column), type(node).__name__
