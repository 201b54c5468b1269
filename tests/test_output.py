"""What a user reads is exact: valid Python is checked, unchecked files say where Python says,
lines are Python's lines, and no name or path can forge, break or crash an output format."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import engine, formats, parsing, sources
from tests import inprocess

API = "from torchgpipe.skip import skippable, stash\nimport torch.nn as nn\n"
LAYER = API + """

@skippable(stash=["a"])
class Layer(nn.Module):
    def forward(self, x):
        yield stash("b", x)
        yield stash("a", x)
        return x
"""


def skiplint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return inprocess.skiplint(["--isolated", "-j", "1", *args], cwd)  # what a subprocess would print


# -- valid Python is checked (issue: false SKP900) ---------------------------------------------------

@pytest.mark.parametrize("statement", [
    "(scale): float = 1.0", "((scale)): float", "(self.scale): int = 2", "( # why\n            x\n        ) : int = 3",
])
def test_parenthesized_annotated_target_is_checked(statement: str) -> None:
    text = LAYER.replace('yield stash("b", x)', f'{statement}\n        yield stash("b", x)')
    ast.parse(text)
    assert parsing.parse_module(text).code == text  # byte for byte, so fix can rewrite it
    line = next(node.lineno for node in ast.walk(ast.parse(text))
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "stash")
    result = engine.check_text(text, "m.py")
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(line, 14, "SKP101")]
    assert result.error is None


# -- an unchecked file is always said, where Python says it ------------------------------------------

def python_says(text: str) -> tuple[int, int, str]:
    try:
        compile(text, "m.py", "exec")
    except SyntaxError as error:
        return error.lineno or 1, error.offset or 1, error.msg
    raise AssertionError("compiles")


def test_syntax_error_is_reported_where_python_reports_it_whatever_is_selected(tmp_path: Path) -> None:
    text = "from torchgpipe.skip import skippable\n\nx = (\n"
    (tmp_path / "broken.py").write_text(text, encoding="utf-8")
    line, col, message = python_says(text)
    if sys.version_info >= (3, 10):
        assert (line, col, message) == (3, 5, "'(' was never closed")
    for select in ("SKP1", "SKP9", "SKP2"):
        done = skiplint("--select", select, "broken.py", cwd=tmp_path)
        assert (done.returncode, done.stderr) == (2, "")
        assert done.stdout == f"broken.py:{line}:{col}: SKP900 could not check this file: syntax error: {message}\n"


def test_valid_but_too_deep_is_reported_at_the_offending_bracket(tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text(API + "x = " + "(" * 201 + ")" * 201 + "\n", encoding="utf-8")
    done = skiplint("--select", "SKP1", "--format", "json", "deep.py", cwd=tmp_path)
    assert done.returncode == 2
    payload = json.loads(done.stdout)
    assert [(d["line"], d["column"], d["code"]) for d in payload["diagnostics"]] == [(3, 205, "SKP900")]
    assert payload["unchecked"] == [{"path": "deep.py", "reason": "nested too deeply to parse (more than "
                                                                   "200 levels of brackets)"}]


# -- Python's own lines ------------------------------------------------------------------------------

def stash_lines(text: str) -> list[int]:
    """Lines of the `stash("b", ...)` calls, as ast counts them."""
    return sorted(node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)
                  and getattr(node.func, "id", "") == "stash" and isinstance(node.args[0], ast.Constant)
                  and node.args[0].value == "b")


ODD_LINES = [
    pytest.param(LAYER.replace("\n", "\r"), id="cr-only"),
    pytest.param(LAYER.replace("\n", "\r\n"), id="crlf"),
    pytest.param(LAYER.replace("import torch.nn as nn", "import torch.nn as nn  # a\rb = 1"), id="lone-cr"),
    pytest.param(LAYER.replace("import torch.nn as nn", "import torch.nn as nn  # a\x0c\u2028\u2029\x1c\x1d\x1eb"),
                 id="breaks-python-does-not-count"),
    pytest.param(LAYER.replace("import torch.nn as nn", "import torch.nn as nn\nS = '\x0c\u2028\x1e'"),
                 id="breaks-in-a-string"),
]


@pytest.mark.parametrize("text", ODD_LINES)
def test_lines_are_pythons_lines(text: str, tmp_path: Path) -> None:
    (line,) = stash_lines(text)
    result = engine.check_text(text, "m.py")
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(line, 14, "SKP101")]
    assert sources.lines(text)[line - 1].strip() == 'yield stash("b", x)'
    # noqa on that line (as Python counts it) suppresses it; --show-source and SARIF show it.
    noqa = text.replace('yield stash("b", x)', 'yield stash("b", x)  # noqa: SKP101')
    assert engine.check_text(noqa, "m.py").diagnostics == ()
    (tmp_path / "m.py").write_bytes(text.encode("utf-8"))
    done = skiplint("--show-source", "m.py", cwd=tmp_path)
    assert done.stdout.splitlines()[:3] == [
        f"m.py:{line}:15: SKP101 'b' is stashed but not declared in stash=[...]",
        '        yield stash("b", x)', "              ^"]
    done = skiplint("--show-source", "--format", "sarif", "m.py", cwd=tmp_path)
    (result_,) = json.loads(done.stdout)["runs"][0]["results"]
    region = result_["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": line, "startColumn": 15, "endLine": line, "endColumn": 28,
                      "snippet": {"text": '        yield stash("b", x)'}}


def test_line_function_matches_the_tokenizer() -> None:
    text = "a\rb\r\nc\nd\x0ce\u2028f\x1cg\x85h\n\ni"
    assert sources.lines(text) == ["a", "b", "c", "d\x0ce\u2028f\x1cg\x85h", "", "i"]
    assert sources.line_starts(text) == [0, 2, 5, 7, 17, 18]
    assert sources.lines("") == [] and sources.lines("x\n") == ["x"]


# -- names and paths that could forge or break the output --------------------------------------------

HOSTILE = API + """

@skippable(stash=["a"])
class Layer(nn.Module):
    def forward(self, x):
        yield stash("evil\\nfake.py:1:1: SKP999 injected", x)
        yield stash("\\udc80\\x1b[2J", x)
        yield stash("a", x)
        return x
"""
NEWLINE_NAME = r"'evil\nfake.py:1:1: SKP999 injected'"
SURROGATE_NAME = r"'\udc80\x1b[2J'"


@pytest.mark.parametrize("fmt", sorted(formats.FORMATS))
def test_names_are_escaped_in_every_format(fmt: str, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(HOSTILE, encoding="utf-8")
    done = skiplint("--format", fmt, "m.py", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "")
    assert "fake.py:1:1" not in [line[:11] for line in done.stdout.splitlines()]
    assert "\x1b" not in done.stdout
    if fmt == "text":
        assert done.stdout.splitlines() == [
            f"m.py:8:15: SKP101 {NEWLINE_NAME} is stashed but not declared in stash=[...]",
            f"m.py:9:15: SKP101 {SURROGATE_NAME} is stashed but not declared in stash=[...]"]
    elif fmt == "github":
        assert [line.rsplit("::", 1)[1] for line in done.stdout.splitlines()] == [
            f"{NEWLINE_NAME} is stashed but not declared in stash=[...]",
            f"{SURROGATE_NAME} is stashed but not declared in stash=[...]"]
    else:
        payload = json.loads(done.stdout)
        found = payload["diagnostics"] if fmt == "json" else payload["runs"][0]["results"]
        texts = [d["message"] if fmt == "json" else d["message"]["text"] for d in found]
        assert texts == [f"{NEWLINE_NAME} is stashed but not declared in stash=[...]",
                         f"{SURROGATE_NAME} is stashed but not declared in stash=[...]"]


@pytest.mark.skipif(sys.platform == "darwin" or os.name == "nt", reason="file names must be bytes")
@pytest.mark.parametrize("fmt", sorted(formats.FORMATS))
def test_non_utf8_file_name_in_every_format_and_output_file(fmt: str, tmp_path: Path) -> None:
    name = b"bad\xff.py"
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as handle:
        handle.write(LAYER.encode("utf-8"))
    done = skiplint("--format", fmt, "--output", "out.txt", ".", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "")
    written = (tmp_path / "out.txt").read_text(encoding="utf-8")
    if fmt == "text":
        assert written == "./bad\\udcff.py:8:15: SKP101 'b' is stashed but not declared in stash=[...]\n"
    elif fmt == "github":
        assert written.startswith("::error file=./bad\\udcff.py,line=8,col=15,")
    elif fmt == "json":
        assert [d["path"] for d in json.loads(written)["diagnostics"]] == ["./bad\\udcff.py"]
    else:
        (result,) = json.loads(written)["runs"][0]["results"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "bad%FF.py"


# -- end positions, fixability, help text ------------------------------------------------------------

def test_json_and_sarif_carry_end_positions_and_fixability(tmp_path: Path) -> None:
    text = API + """

@skippable(stash="ab")
class Layer(nn.Module):
    def forward(self, x):
        stash("ab",
              x)
        return x
"""
    (tmp_path / "m.py").write_text(text, encoding="utf-8")
    done = skiplint("--format", "json", "m.py", cwd=tmp_path)
    got = [(d["code"], d["line"], d["column"], d["end_line"], d["end_column"], d["fixable"])
           for d in json.loads(done.stdout)["diagnostics"]]
    assert got == [("SKP106", 5, 18, 5, 22, True), ("SKP107", 8, 9, 9, 17, True)] + [
        row for row in got if row[0] not in ("SKP106", "SKP107")]
    done = skiplint("--format", "sarif", "m.py", cwd=tmp_path)
    run = json.loads(done.stdout)["runs"][0]
    first = run["results"][0]
    assert first["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 5, "startColumn": 18, "endLine": 5, "endColumn": 22}
    assert first["properties"] == {"fixable": True}
    for rule in run["tool"]["driver"]["rules"]:
        assert ". See https://" in rule["help"]["text"] and ".. See" not in rule["help"]["text"]


def test_formats_import_without_libcst() -> None:
    code = "import sys, skiplint.formats; print('libcst' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_names_are_escaped_through_flake8(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(HOSTILE, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "-j", "1", "--select", "SKP", "m.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout.splitlines() == [
        f"m.py:8:15: SKP101 {NEWLINE_NAME} is stashed but not declared in stash=[...]",
        f"m.py:9:15: SKP101 {SURROGATE_NAME} is stashed but not declared in stash=[...]"]
