"""skiplint.parsing.parse_module gives libcst's own trees, built without validating again the nodes
of libcst's parser; every node built outside that parse, or by another thread, is validated."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from skiplint import parsing

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
#: What libcst's validation refuses in a hand-built node (Name._validate: an empty identifier).
INVALID_NAME = ""


def _parses() -> list[Path]:
    return sorted(FIXTURES.rglob("*.py"))


def test_trees_are_the_ones_libcst_builds_with_validation() -> None:
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
    assert compared > 100
    assert gaps == ["parse_libcst_validation_gap.py"]


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
    assert inside == [parsing._validate_elsewhere]
    assert cst.CSTNode.__dict__["__post_init__"] is original
    assert parsing._UNCHECKED_THREAD is None
    with pytest.raises(cst.CSTValidationError):
        cst.Name(INVALID_NAME)


def test_only_the_parsing_thread_skips_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    real_parse = cst.parse_module
    here: list[cst.Name] = []
    there: list[BaseException] = []

    def parse_beside_another_thread(text: str) -> cst.Module:
        here.append(cst.Name(INVALID_NAME))  # this thread, inside the parse: not validated

        def build() -> None:
            try:
                cst.Name(INVALID_NAME)
            except cst.CSTValidationError as error:
                there.append(error)

        other = threading.Thread(target=build)
        other.start()
        other.join()
        return real_parse(text)

    monkeypatch.setattr(cst, "parse_module", parse_beside_another_thread)
    assert parsing.parse_module("y = 2\n").code == "y = 2\n"
    assert [name.value for name in here] == [INVALID_NAME]
    assert len(there) == 1 and isinstance(there[0], cst.CSTValidationError)


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
