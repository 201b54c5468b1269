"""Hostile input: the CLI reports each bad file in one SKP900 line, checks the rest, exits 2;
the flake8 plugin never raises.

The cases run the real CLI in a subprocess (a crash of libcst's native parser would kill an
in-process test run), each next to a good file with a known finding that must still be reported.
The cases share their subprocess: every case is a directory of one tree, the CLI runs once over
the tree (a batch: one for the cases refused, one for those checked), and each case's test reads
its own directory's lines.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skiplint import cli, config, engine, limits, sources
from skiplint.flake8_plugin import SkiplintChecker
from tests import inprocess
from tests.frames import plugin_frames
from tests.hazard import parser_hazard
from tests.messages import printed

GOOD = textwrap.dedent("""\
    from torchgpipe.skip import skippable, stash
    import torch.nn as nn


    @skippable(stash=["a"])
    class Layer(nn.Module):
        def forward(self, x):
            yield stash("b", x)
            yield stash("a", x)
            return x
""")
GOOD_FINDING = "good.py:8:15: SKP101 "
GOOD_LINE = GOOD_FINDING + "'b' is stashed but not declared in stash=[...]"
API = "from torchgpipe.skip import skippable, stash, pop\n"


def skiplint(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-j", "1", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def norm(out: str) -> list[str]:
    """Output lines with the `./` of paths found under `.` removed."""
    return [line[2:] if line.startswith("./") else line for line in out.splitlines()]


Make = Callable[[Path], None]


class Batch:
    """One run of `python -m skiplint -j 1` (the path door, in a subprocess of its own) over a tree
    holding many cases, each in a directory of its own: `walked` under `tree/` (the run names the
    folder), `named` under `alone/` (the run names the given files in them, not the folder)."""

    def __init__(self, root: Path, walked: dict[str, Make], named: dict[str, tuple[Make, Sequence[str]]]) -> None:
        for case, make in walked.items():
            (root / "tree" / case).mkdir(parents=True)
            make(root / "tree" / case)
        paths = ["tree"]
        for case, (make, files) in named.items():
            (root / "alone" / case).mkdir(parents=True)
            make(root / "alone" / case)
            paths.extend(f"alone/{case}/{name}" for name in files)
        # Each case had a minute of its own (the form feeds and the chains five): ten cover them all.
        self.done = skiplint(*paths, cwd=root, timeout=600)
        self.all = norm(self.done.stdout)

    def lines(self, case: str) -> list[str]:
        """The output lines about the files of one case, with paths relative to its directory."""
        assert "Traceback" not in self.done.stderr, self.done.stderr
        prefixes = (f"tree/{case}/", f"alone/{case}/")
        return [line.split("/", 2)[2] for line in self.all if line.startswith(prefixes)]


def check_case(batch: Batch, case: str, reason: Optional[str], where: str = ":1:1:") -> str:
    """A case of one good file and the hostile thing: return the bad file's SKP900 line, which is
    reported at `where` (line and column), or "" when it is checked (reason None: no line)."""
    lines = batch.lines(case)
    assert any(line.startswith(GOOD_FINDING) for line in lines), lines
    bad = [line for line in lines if "SKP900" in line]
    assert [line for line in lines if line not in bad] == [GOOD_LINE], lines
    if reason is None:
        assert not bad, lines
        return ""
    assert len(bad) == 1, lines
    assert reason in bad[0], bad[0]
    assert bad[0].count("\n") == 0 and f"{where} SKP900 could not check this file: " in bad[0]
    return bad[0]


def with_good(make: Make) -> Make:
    """The hostile thing next to good.py."""
    def make_both(root: Path) -> None:
        (root / "good.py").write_text(GOOD, encoding="utf-8")
        make(root)
    return make_both


#: The cases of the two batches, by directory name: REFUSED each give an SKP900 line (the run
#: exits 2), CHECKED none (the run exits 1: good.py's finding). Filled next to each test.
REFUSED: dict[str, Make] = {}
CHECKED: dict[str, Make] = {}
CHECKED_NAMED: dict[str, tuple[Make, Sequence[str]]] = {}


def case_id(request: pytest.FixtureRequest) -> str:
    return request.node.callspec.id  # type: ignore[no-any-return]


def batch_of(request: pytest.FixtureRequest, refused: bool) -> Batch:
    """The batch of the refused cases or of the checked ones (only that one is run)."""
    return request.getfixturevalue("refused" if refused else "checked")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Batch]:
    root = tmp_path_factory.mktemp("refused")
    try:
        yield Batch(root, REFUSED, {})
    finally:
        if (root / "tree" / "unreadable" / "secret.py").exists():
            (root / "tree" / "unreadable" / "secret.py").chmod(stat.S_IRUSR | stat.S_IWUSR)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    return Batch(tmp_path_factory.mktemp("checked"), CHECKED, CHECKED_NAMED)


def test_each_batch_exits_as_its_cases_say(refused: Batch, checked: Batch) -> None:
    """The exit status is the run's: 2 where a file could not be checked, else 1 (good.py's
    finding). Every refused case says SKP900; no checked case does, unless the running Python
    refuses the expression deep enough for a RecursionError in libcst (that test says which)."""
    assert (refused.done.returncode, refused.done.stderr) == (2, "")
    assert (checked.done.returncode, checked.done.stderr) == (2 if recursion_case_lines(checked) else 1, "")


def write(name: str, data: bytes) -> Callable[[Path], None]:
    def make(root: Path) -> None:
        (root / name).write_bytes(data)
    return make


# One policy for what cannot be analysed (prefilter.triage, docs/usage.md): a file whose bytes name
# no API module is not decoded or parsed, so it is reported no more than a syntax error in it
# would be (None: no SKP900); a file that names the API and cannot be decoded is SKP900.
BYTES_CASES = [
    pytest.param("blob.py", bytes(range(256)) * 64, None, id="binary-with-nul"),
    pytest.param("blob.py", bytes(range(128, 256)) * 64, None, id="binary-without-nul"),
    pytest.param("nul.py", API.encode() + b"x = 1\0\n", "contains NUL bytes", id="nul-in-api-file"),
    pytest.param("nul_plain.py", b"x = 1\n\0\n", None, id="nul-in-plain-file"),
    pytest.param("syntax_plain.py", b"x = (\n", None, id="syntax-error-in-plain-file"),
    pytest.param("latin.py", API.encode() + b"x = '\xe9t\xe9'\n", "not valid utf-8", id="non-utf8"),
    pytest.param("latin_plain.py", b"x = '\xe9t\xe9'\n", None, id="non-utf8-no-api"),
    pytest.param("cookie.py", b"# -*- coding: klingon -*-\n" + API.encode(), "encoding", id="unknown-cookie"),
    pytest.param("ascii.py", b"# coding: ascii\n" + API.encode() + "x = 'é'\n".encode(), "not valid ascii",
                 id="cookie-says-ascii"),
    pytest.param("bom.py", b"\xef\xbb\xbf# coding: latin-1\n" + API.encode(), "encoding",
                 id="bom-contradicts-cookie"),
    # Python cannot read this file either; its bytes do not spell an API module.
    pytest.param("utf16.py", API.encode("utf-16"), None, id="utf16-without-cookie"),
]


for _case in BYTES_CASES:
    _name, _data, _reason = _case.values
    (CHECKED if _reason is None else REFUSED)[f"bytes-{_case.id}"] = with_good(write(_name, _data))


@pytest.mark.parametrize(("name", "data", "reason"), BYTES_CASES)
def test_undecodable_bytes_are_one_skp900_line(request: pytest.FixtureRequest, name: str, data: bytes,
                                               reason: Optional[str]) -> None:
    check_case(batch_of(request, reason is not None), f"bytes-{case_id(request)}", reason)


LATIN1 = b"# -*- coding: latin-1 -*-\n" + API.encode() + b"x = '\xe9t\xe9'\n"
CHECKED["latin1-cookie"] = with_good(write("latin1.py", LATIN1))


def test_latin1_cookie_is_honoured_not_reported(checked: Batch) -> None:
    check_case(checked, "latin1-cookie", None)


#: Byte sequences that are not UTF-8: a lone lead byte, a continuation byte, a cut sequence, an
#: overlong form, an encoded surrogate, a code point past U+10FFFF, and latin-1 text.
NOT_UTF8 = [b"\xff", b"\x80", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe9t\xe9"]
#: Where they sit: comments (first line, after code, inside brackets, after a BOM or a utf-8
#: cookie, at the end without a newline, with CR line ends), and what Python decodes.
PLACES = {
    "comment-first-line": (b"# ", b"\nx = 1\n"),
    "comment-after-code": (b"x = 1\ny = 2  # ", b"\n"),
    "comment-in-brackets": (b"x = (1,  # ", b"\n     2)\n"),
    "comment-after-bom": (b"\xef\xbb\xbfx = 1\n# ", b"\n"),
    "comment-after-cookie": (b"# coding: UTF-8\nx = 1\n# ", b"\n"),
    "comment-at-the-end": (b"x = 1\n# ", b""),
    "comment-cr": (b"x = 1\ry = 2\r# ", b"\r"),
    "string": (b"x = 1\ny = '", b"'\n"),
    "docstring": (b'"""', b'"""\nx = 1\n'),
    "name": (b"x = 1\ny", b" = 2\n"),
    "cookie-utf8": (b"# coding: utf8\nx = 1\n# ", b"\n"),  # not utf-8 to Python's tokenizer: a codec
}


@pytest.mark.parametrize("bad", NOT_UTF8, ids=lambda bad: bad.hex())
@pytest.mark.parametrize("place", sorted(PLACES))
def test_bytes_that_are_not_utf8_are_refused_where_python_refuses_them(place: str, bad: bytes) -> None:
    """Python's compile (so every import) accepts them inside a comment of UTF-8 source, the
    same on 3.9 to 3.13, and refuses them elsewhere: so does skiplint, reading each as U+FFFD."""
    before, after = PLACES[place]
    data = before + bad + after
    try:
        compile(data, "m.py", "exec", dont_inherit=True)
        python_accepts = True
    except SyntaxError:
        python_accepts = False
    assert python_accepts is (place.startswith("comment")), place  # the same on every supported Python
    if python_accepts:
        text = sources.decode(data)
        assert text == data.decode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8", "replace")
    else:
        with pytest.raises(sources.SourceError, match=r"^(not valid utf-8: byte 0x[0-9a-f]{2} at offset \d+|"
                                                      r"not valid utf8: .*)$"):
            sources.decode(data)


IN_COMMENT = API.encode() + GOOD.split("\n", 1)[1].encode().replace(b"class Layer", b"# caf\xe9 \xff\nclass Layer")
CHECKED["not-utf8-in-a-comment"] = with_good(write("comment.py", IN_COMMENT))


def test_bytes_that_are_not_utf8_in_a_comment_are_checked(checked: Batch) -> None:
    assert checked.lines("not-utf8-in-a-comment") == [
        "comment.py:9:15: SKP101 'b' is stashed but not declared in stash=[...]", GOOD_LINE]


@functools.lru_cache(maxsize=None)
def generated_ten_megabytes() -> bytes:
    """A 10 MB generated module that uses the API (libcst would need minutes and gigabytes)."""
    unit = textwrap.dedent("""
        @skippable(stash=["s{i}"])
        class Stash{i}(nn.Module):
            def forward(self, x):
                yield stash("s{i}", x)
                return x * {i}
    """)
    parts = [API, "import torch.nn as nn\n"]
    size, i = 0, 0
    while size < 10_000_000:
        part = unit.format(i=i)
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts).encode()


@pytest.fixture(scope="module")
def ten_megabytes() -> bytes:
    return generated_ten_megabytes()


def write_huge(root: Path) -> None:
    (root / "huge.py").write_bytes(generated_ten_megabytes())


REFUSED["ten-megabytes"] = with_good(write_huge)


def test_ten_megabyte_module_is_refused_quickly(refused: Batch) -> None:
    line = check_case(refused, "ten-megabytes", "too large to check")
    assert "10.0 MB" in line


def test_read_cap_also_holds_for_a_file_growing_after_fstat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "grows.py"
    path.write_bytes(b"x = 1\n" * 100)
    monkeypatch.setattr(sources, "MAX_BYTES", 60)
    with pytest.raises(sources.SourceError, match="too large"):
        sources.read_bytes(str(path))


BRACKETS = "nested too deeply to parse (more than 200 levels of brackets)"
CHAIN = "nested too deeply to parse (an expression of more than 3,000 operators and operands)"
DEPTH = "nested too deeply to parse (more than 3,000 levels of operators, operands and elif branches at once)"
DEEP = [  # (source, where the SKP900 is reported, reason)
    pytest.param(API + "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n", "2:205", BRACKETS, id="parentheses-5000"),
    pytest.param(API + "x = " + "[" * 3000 + "]" * 3000 + "\n", "2:205", BRACKETS, id="lists-3000"),
    pytest.param(API + "x = " + "-" * 20000 + "1\n", "2:3005", CHAIN, id="unary-20000"),
    pytest.param(API + "x = " + "lambda: " * 10000 + "1\n", "2:12005", CHAIN, id="lambda-10000"),
    pytest.param(API + "x = " + "1 if a else " * 10000 + "1\n", "2:9005", CHAIN, id="conditional-10000"),
    pytest.param(API + "x = a" + "[0]" * 20000 + "\n", "2:3005", CHAIN, id="subscript-20000"),
    pytest.param(API + "x = " + "a + " * 2500 + "a\n", "2:6005", CHAIN, id="sum-2500"),
    pytest.param(API + "if a: pass\n" + "elif a: pass\n" * 20000, "2003:1",
                 "nested too deeply to parse (more than 2,000 elif branches in a row)", id="elif-20000"),
    pytest.param(API + "x = f'{" + "(" * 300 + "}'\n", "2:207", BRACKETS, id="f-string-field"),
    # Runs each under the limit, nested in one another: SIGSEGV in libcst's parser (10,000 levels).
    pytest.param(API + "x = " + "-" * 2500 + "(" + "-" * 2500 + "(" + "-" * 2500 + "(" + "-" * 2500 + "(x" + ")" * 4
                 + "\n", "2:3006", DEPTH, id="chains-in-brackets"),
    pytest.param(API + "if a: pass\n" + "elif a: pass\n" * 1999 + "elif a:\n    x = " + "-" * 1500 + "1\n",
                 "2003:1009", DEPTH, id="chain-in-elifs"),
    # Python stops at an earlier syntax error, or does not know the syntax: the scan still holds.
    pytest.param(API + "def f(:\n" + "x = a" + ".b" * 15000 + "\n", "3:3003", DEPTH, id="attributes-after-error"),
    pytest.param(API + "type A = int\n" + "x = a" + "[0]" * 5000 + "\n", "3:3005", CHAIN,
                 id="subscripts-after-new-syntax"),
]


REFUSED.update({f"deep-{case.id}": with_good(write("deep.py", case.values[0].encode())) for case in DEEP})


@pytest.mark.parametrize(("source", "where", "reason"), DEEP)
def test_nesting_that_kills_libcst_is_refused(refused: Batch, request: pytest.FixtureRequest, source: str,
                                              where: str, reason: str) -> None:
    """Each of these ends the process with SIGSEGV inside libcst 1.9's native parser, or keeps it
    busy for minutes; the token scan refuses them whatever Python thinks of the text."""
    line = check_case(refused, f"deep-{case_id(request)}", reason, where=f":{where}:")
    assert line == f"deep.py:{where}: SKP900 could not check this file: {reason}"


DEEP_BLOCKS = "import torch.nn as nn\n\nclass Block(nn.Module):\n    table = " + "(" * 1000 + ")" * 1000 + "\n"
MODEL = GOOD + "\nfrom blocks import Block\n\nmodel = nn.Sequential(Block(), Layer())\n"


def deep_sibling(blocks: str) -> Make:
    def make(root: Path) -> None:
        (root / "blocks.py").write_text(blocks, encoding="utf-8")
        (root / "model.py").write_text(MODEL, encoding="utf-8")
    return make


CHECKED_NAMED["sibling-model-named"] = (deep_sibling(DEEP_BLOCKS), ["model.py"])
CHECKED["sibling-walked"] = deep_sibling(DEEP_BLOCKS)  # blocks.py names no API module: not checked itself
REFUSED["sibling-uses-the-api"] = deep_sibling(API + DEEP_BLOCKS)


def test_deep_sibling_module_through_the_project_index(checked: Batch, refused: Batch, tmp_path: Path) -> None:
    """model.py is fine; the sibling it imports a layer from is not. The project index parses
    the sibling through the same guard, under skiplint and under flake8."""
    assert checked.lines("sibling-model-named") == [
        "model.py:8:15: SKP101 'b' is stashed but not declared in stash=[...]"]
    assert checked.lines("sibling-walked") == ["model.py:8:15: SKP101 'b' is stashed but not declared in stash=[...]"]
    assert refused.lines("sibling-uses-the-api") == [
        f"blocks.py:5:213: SKP900 could not check this file: {BRACKETS}",
        "model.py:8:15: SKP101 'b' is stashed but not declared in stash=[...]"]
    deep_sibling(API + DEEP_BLOCKS)(tmp_path)
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "-j", "1", "--select", "SKP", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (1, "")
    assert norm(done.stdout) == ["model.py:8:15: SKP101 'b' is stashed but not declared in stash=[...]"]


def recursion_in_forward(depth: int) -> str:
    """Valid Python that CPython accepts but that is too deep for libcst's Python-level visitors."""
    return API + textwrap.dedent(f"""
        import torch.nn as nn

        @skippable(stash=["a"])
        class Deep(nn.Module):
            def forward(self, x):
                yield stash("a", {" + ".join(["x"] * depth)})
                return x
    """)


#: Checked or refused, as the running Python allows: in the batch of the cases checked, whose exit
#: status then says which (test_each_batch_exits_as_its_cases_say).
CHECKED["recursion-error"] = with_good(write("deep.py", recursion_in_forward(1400).encode()))


def recursion_case_lines(checked: Batch) -> list[str]:
    return [line for line in checked.lines("recursion-error") if line.startswith("deep.py")]


def test_expression_deep_enough_for_recursion_error_in_libcst(checked: Batch) -> None:
    import libcst as cst

    source = recursion_in_forward(1400)
    module = cst.parse_module(source)  # parses, but any recursive walk of it gives up
    with pytest.raises(RecursionError):
        module.code  # noqa: B018
    lines = checked.lines("recursion-error")
    assert any(line.startswith(GOOD_FINDING) for line in lines)
    deep = recursion_case_lines(checked)
    assert lines == deep + [GOOD_LINE], lines
    # Either the file is fully checked (it is clean) or it is reported once as too deep.
    assert deep == [] or (len(deep) == 1 and "SKP900" in deep[0] and "RecursionError" in deep[0]), deep


#: Valid chains of 1,000 terms, inside the parser's limits (and CPython's): each nests libcst's
#: tree 1,000 levels deep, as deep as Python's default recursion limit.
CHAINS = {
    "unary": "-" * 1000 + "x",
    "attribute": "x" + ".b" * 1000,
    "not": "not " * 1000 + "x",
    "and": " and ".join(["x"] * 1000),
    "power": " ** ".join(["x"] * 1000),
}


def chain_in_forward(expression: str) -> str:
    return API + textwrap.dedent("""\
        import torch.nn as nn


        @skippable(stash=["a"])
        class Deep(nn.Module):
            def forward(self, x):
                y = {}
                yield stash("b", x)
                return y
        """).format(expression)


def write_chains(root: Path) -> None:
    for name, expression in CHAINS.items():
        (root / f"{name}.py").write_text(chain_in_forward(expression), encoding="utf-8")


#: Python 3.12's limit on nested C calls stops libcst's code generation: refused there.
CHAINS_REFUSED = sys.version_info[:2] == (3, 12)
(REFUSED if CHAINS_REFUSED else CHECKED)["chains"] = write_chains


def test_chains_of_a_thousand_terms_are_checked(request: pytest.FixtureRequest) -> None:
    """Each was "nested too deeply to analyse (RecursionError)": the analysis recurses once per
    level, and a deep tree now gets the room for it (limits.SHALLOW_DEPTH), in the CLI and in the
    flake8 plugin (called here from within pytest's own stack)."""
    source = chain_in_forward(CHAINS["unary"])
    found = [(line, col, message[:6]) for line, col, message, _ in
             SkiplintChecker(None, source.splitlines(keepends=True), "unary.py").run()]
    if CHAINS_REFUSED:
        assert batch_of(request, True).lines("chains") == [
            f"{name}.py:1:1: SKP900 could not check this file: nested too deeply to locate its findings "
            "(RecursionError with 12,000 frames of room; Python 3.12 also limits nested C calls)"
            for name in sorted(CHAINS)]
        assert found == [(1, 0, "SKP900")]
        return
    assert batch_of(request, False).lines("chains") == [
        line for name in sorted(CHAINS) for line in (
            printed(f"{name}.py", 5, 19, "SKP103", name="a"), printed(f"{name}.py", 9, 15, "SKP101", name="b"))]
    assert found == [(5, 18, "SKP103"), (9, 14, "SKP101")]


def test_parser_hazard_accepts_what_python_accepts() -> None:
    assert parser_hazard("x = " + "(" * 200 + "1" + ")" * 200 + "\n") is None
    assert parser_hazard("type X = int\n" * 200) is None  # newer than 3.11: left to libcst
    assert parser_hazard("x = " + "(" * 201 + ")" * 201 + "\n") == BRACKETS
    assert parser_hazard("x = " + "a + " * 1499 + "a\n") is None
    assert parser_hazard("x = " + "a + " * 1500 + "a\n") == CHAIN
    assert parser_hazard("x = [" + "a, " * 40_000 + "]\n") is None  # flat: no chain (80,000 tokens, under the budget)
    assert parser_hazard("x = '" + "(" * 5000 + "'\n# " + "[" * 5000 + "\n") is None


LONE = ("a line holding only a backslash before a change of indentation (Python 3.10+ puts the next "
        "statement in another block than libcst and Python 3.9 do)")


@pytest.mark.parametrize(("backslash", "following", "python_nests_it"), [
    ("\\", "    y = 2", False),         # Python indents it as the next line: out of the if block
    ("\\", "        y = 2", True),
    ("    \\", "    y = 2", False),     # as the backslash's line
    ("    \\", "        y = 2", False),
    ("        \\", "    y = 2", True),
    ("        \\", "        y = 2", True),
])
def test_lone_backslash_is_refused_where_libcst_nests_differently(backslash: str, following: str,
                                                                   python_nests_it: bool) -> None:
    """libcst keeps the statement after a line holding only a backslash in the block before it in
    every one of these cases, as Python 3.9 does; Python 3.10 and later do only where the flag
    says. The scan refuses exactly the others on every Python (the file's meaning depends on the
    Python that runs it), and accepts only where all of them and libcst agree."""
    import libcst as cst

    source = "def f(x):\n    if x:\n        x = 1\n" + backslash + "\n" + following + "\n    return x\n"
    in_if = len(ast.parse(source).body[0].body[0].body) == 2  # type: ignore[attr-defined]
    assert in_if is (python_nests_it if sys.version_info >= (3, 10) else True)
    if python_nests_it:
        assert parser_hazard(source) is None
        function = cst.parse_module(source).body[0]
        assert len(function.body.body[0].body.body) == 2  # type: ignore[attr-defined]
    else:
        assert parser_hazard(source) == LONE


def test_lone_backslash_before_a_comment_or_at_the_same_indentation_is_accepted() -> None:
    assert parser_hazard("def f(x):\n    if x:\n        x = 1\n    \\\n    # note\n    return x\n") is None
    assert parser_hazard("x = 1\n\\\ny = 2\n") is None
    # Two in a row at the same indentation: the second compares with the first statement's.
    assert parser_hazard("def f(x):\n    a = 1\n    \\\n    y = 1\n    \\\n    z = 2\n") is None
    assert parser_hazard("s = \'\'\'\n    \\\ny\'\'\'\n") is None  # inside a string: not code
    assert parser_hazard("x = (1,\n    \\\n2)\n") is None  # inside brackets: no indentation


def _blocks_by_python(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """Each assigned name with the names of the `def`s and `if`s around it, as Python reads them."""
    out: list[tuple[str, tuple[str, ...]]] = []

    def walk(body: list[ast.stmt], path: tuple[str, ...]) -> None:
        for statement in body:
            if isinstance(statement, ast.Assign):
                out.append((statement.targets[0].id, path))  # type: ignore[attr-defined]
            elif isinstance(statement, ast.If):
                walk(statement.body, path + (statement.test.id,))  # type: ignore[attr-defined]
            elif isinstance(statement, ast.FunctionDef):
                walk(statement.body, path + (statement.name,))
    walk(ast.parse(text).body, ())
    return out


def _blocks_by_libcst(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The same, as libcst reads them."""
    import libcst as cst

    out: list[tuple[str, tuple[str, ...]]] = []

    def walk(body: Sequence[cst.BaseStatement], path: tuple[str, ...]) -> None:
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                out.extend((small.targets[0].target.value, path)  # type: ignore[attr-defined]
                           for small in statement.body if isinstance(small, cst.Assign))
            elif isinstance(statement, cst.If):
                walk(statement.body.body, path + (statement.test.value,))  # type: ignore[attr-defined]
            elif isinstance(statement, cst.FunctionDef):
                walk(statement.body.body, path + (statement.name.value,))  # type: ignore[arg-type]
    walk(cst.parse_module(text).body, ())
    return out


@pytest.mark.parametrize("lines", [
    ["        \\", "        \\", "        y = 2"],   # two backslash lines in a row
    ["        \\", "    \\", "        y = 2"],   # the first one not in column 0 decides
    ["\\", "\\", "        y = 2"],             # all in column 0: the statement's own line decides
    ["        \\", "\x0c    y = 2"],           # a form feed after the backslash line
    ["\\", "\x0c        y = 2"],
    ["\x0c        \\", "        y = 2"],       # a form feed before the backslash
    ["  \x0c        \\", "\\", "        y = 2"],
])
def test_lone_backslashes_where_every_python_and_libcst_agree_are_accepted(lines: list[str]) -> None:
    """Several backslash lines in a row, or form feeds around one, put the statement where Python
    3.10+ (the first backslash not in column 0, else the statement's own columns, a form feed
    counting from 0) and libcst (the block of the line before) both do: nothing to refuse."""
    source = "def f(x):\n    if x:\n        a = 1\n" + "\n".join(lines) + "\n    z = 3\n"
    assert parser_hazard(source) is None
    assert _blocks_by_libcst(source) == _blocks_by_python(source) == [
        ("a", ("f", "x")), ("y", ("f", "x")), ("z", ("f",))]


BACKSLASHES_IN_A_ROW = API + textwrap.dedent("""\
        from torch import nn


        @skippable(stash=["skip"])
        class Stash(nn.Module):
            def forward(self, x):
                x = x + 1
                \\
                \\
                yield stash("other", x)
                \\
        \x0c        return x
        """)
CHECKED["backslashes-in-a-row"] = write("m.py", BACKSLASHES_IN_A_ROW.encode())


def test_lone_backslashes_in_a_row_are_judged_by_their_first(checked: Batch) -> None:
    """A finding after two backslash lines is reported where it is, not refused (SKP900)."""
    assert checked.lines("backslashes-in-a-row") == [
        printed("m.py", 5, 19, "SKP103", name="skip"), printed("m.py", 11, 15, "SKP101", name="other")]


@pytest.mark.skipif(sys.version_info < (3, 10), reason="Python 3.9 reads lone backslashes as libcst does")
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "    ", "        ", "\t", "\x0c", "\x0c    ", "    \x0c",
                                            "    \x0c    ", "  ", "\x0c        ", "        \x0c"]),
                          st.sampled_from(["\\", "\\", "y{} = 1", "if c{}:", "# c", ""])),
                min_size=1, max_size=6))
def test_lone_backslashes_are_refused_exactly_where_python_and_libcst_disagree(
        lines: list[tuple[str, str]]) -> None:
    """Generated blocks with lone backslashes and form feeds: of those Python and libcst both
    read, the scan refuses exactly the ones whose blocks they read differently."""
    body = [indent + line.format(number) for number, (indent, line) in enumerate(lines)]
    source = "def f(x):\n    if x:\n        a = 1\n" + "\n".join(body) + "\n    z = 3\n"
    try:
        python = _blocks_by_python(source)
        libcst = _blocks_by_libcst(source)
    except Exception:  # noqa: BLE001 - not valid Python, or a form feed libcst cannot read
        return
    refused = parser_hazard(source)
    assert (refused == LONE) is (python != libcst), (source, refused)


# libcst (and Python 3.9) read this `yield stash(...)` as inside the `if` block, which would be
# an SKP111 (stashed on some paths only); Python 3.10 and later run it on every path.
INVENTED = API + textwrap.dedent("""\
        from torch import nn


        @skippable(stash=["skip"])
        class Stash(nn.Module):
            def forward(self, x):
                if x is None:
                    x = x + 1
                \\
                yield stash("skip", x)
                return x
        """)
REFUSED["backslash-inventing-a-finding"] = write("m.py", INVENTED.encode())


def test_lone_backslash_that_would_invent_a_finding_is_one_skp900_line(refused: Batch) -> None:
    assert refused.lines("backslash-inventing-a-finding") == [f"m.py:10:9: SKP900 could not check this file: {LONE}"]


FUTURE = API + "x = settings.timeout ?? 10\n"  # PEP 505, which no Python has (yet)
REFUSED["syntax-newer-than-the-parser"] = with_good(write("future.py", FUTURE.encode()))


def test_syntax_newer_than_the_parser_is_one_line(refused: Batch) -> None:
    line = check_case(refused, "syntax-newer-than-the-parser", "syntax error", where=":2:22:")
    assert line == "future.py:2:22: SKP900 could not check this file: syntax error: invalid syntax"


#: libcst reads Python 3.14's `except A, B:` and t-strings from 1.8.4 on (1.8.2 does not; the
#: oldest libcst skiplint supports, 1.1.0, reads 3.12's type parameters and aliases).
LIBCST_READS_314 = tuple(int(p) for p in importlib.metadata.version("libcst").split(".")[:3]) >= (1, 8, 4)


MODERN = API + "type Alias = list[int]\n\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\n"
CHECKED["syntax-newer-than-the-interpreter"] = with_good(write("modern.py", MODERN.encode()))


def test_syntax_newer_than_the_interpreter_is_checked(checked: Batch) -> None:
    """Python 3.12 syntax is read by every supported libcst, even on an older interpreter."""
    check_case(checked, "syntax-newer-than-the-interpreter", None)


NEWEST = API + "try:\n    pass\nexcept ValueError, TypeError:\n    pass\nmsg = t'{x}'\n"
(CHECKED if LIBCST_READS_314 else REFUSED)["syntax-newer-than-libcst"] = with_good(write("newest.py", NEWEST.encode()))


def test_syntax_newer_than_libcst_is_one_line_or_checked(request: pytest.FixtureRequest) -> None:
    """Python 3.14 syntax: checked where the installed libcst reads it, else one SKP900 line."""
    if LIBCST_READS_314:
        check_case(batch_of(request, False), "syntax-newer-than-libcst", None)
        return
    try:  # where the running Python puts the error, as the report must
        compile(NEWEST, "newest.py", "exec", dont_inherit=True)
        where = ":1:1:"
    except SyntaxError as error:
        where = f":{error.lineno}:{error.offset}:"
    check_case(batch_of(request, True), "syntax-newer-than-libcst", "syntax error", where)


if hasattr(os, "mkfifo"):
    REFUSED["named-pipe"] = with_good(lambda root: os.mkfifo(root / "pipe.py"))


def test_named_pipe_is_not_read(refused: Batch) -> None:
    """A FIFO named like a module: opening it for reading would block forever (and block the whole
    batch: its timeout tells)."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    check_case(refused, "named-pipe", "a named pipe, not a source file")


ROOT_READS_ANY_FILE = not hasattr(os, "geteuid") or os.geteuid() == 0


def write_unreadable(root: Path) -> None:
    (root / "secret.py").write_text(API, encoding="utf-8")
    (root / "secret.py").chmod(0)  # made readable again when the batch has run (refused)


if not ROOT_READS_ANY_FILE:
    REFUSED["unreadable"] = with_good(write_unreadable)


@pytest.mark.skipif(ROOT_READS_ANY_FILE, reason="root reads any file")
def test_unreadable_file(refused: Batch) -> None:
    check_case(refused, "unreadable", "permission denied")


def test_unreadable_file_as_reported_by_the_os(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The same as test_unreadable_file where tests run as root: the OS refuses the open."""
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "secret.py").write_text(API, encoding="utf-8")
    real_open = os.open

    def refusing_open(path: str, *args: int, **kwargs: int) -> int:
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.chdir(tmp_path)
    status = cli.main(["--isolated", "-j", "1", "."])
    out = norm(capsys.readouterr().out)
    assert status == 2
    assert [line for line in out if "SKP900" in line] == [
        "secret.py:1:1: SKP900 could not check this file: permission denied"]
    assert any(line.startswith(GOOD_FINDING) for line in out)


def test_symlink_loop(tmp_path: Path) -> None:
    """In this process: finding and reading the files is plain Python I/O, with no parser to crash."""
    def make(root: Path) -> None:
        os.symlink("b.py", root / "a.py")
        os.symlink("a.py", root / "b.py")
        (root / "sub").mkdir()
        os.symlink("..", root / "sub" / "up")  # a directory loop: not followed, never reported
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    make(tmp_path)
    done = inprocess.skiplint(["--isolated", "-j", "1", "."], cwd=tmp_path)
    bad = sorted(line for line in norm(done.stdout) if "SKP900" in line)
    assert bad == [
        "a.py:1:1: SKP900 could not check this file: symbolic link loop",
        "b.py:1:1: SKP900 could not check this file: symbolic link loop",
    ], done.stdout
    assert any(line.startswith(GOOD_FINDING) for line in norm(done.stdout))
    assert done.returncode == 2


def test_symlink_loop_named_on_the_command_line(tmp_path: Path) -> None:
    os.symlink("self.py", tmp_path / "self.py")
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    done = inprocess.skiplint(["--isolated", "-j", "1", "self.py", "good.py"], cwd=tmp_path)
    assert "self.py:1:1: SKP900 could not check this file: symbolic link loop" in norm(done.stdout)
    assert "good.py:8:15: SKP101" in done.stdout
    assert done.returncode == 2


REFUSED["dangling-symlink"] = with_good(lambda root: os.symlink("deleted.py", root / "gone.py"))


def test_dangling_symlink_is_a_vanished_file(refused: Batch) -> None:
    check_case(refused, "dangling-symlink", "no such file or directory")


def test_file_that_vanishes_during_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Discovered, then deleted before it is read (another process cleaning up the tree)."""
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    (tmp_path / "vanishing.py").write_text(API, encoding="utf-8")
    real_read = sources.read_bytes

    def read_after_delete(path: str) -> bytes:
        if path.endswith("vanishing.py") and os.path.exists(path):
            os.unlink(path)
        return real_read(path)

    monkeypatch.setattr(sources, "read_bytes", read_after_delete)
    monkeypatch.chdir(tmp_path)
    status = cli.main(["--isolated", "-j", "1", "."])
    out = norm(capsys.readouterr().out)
    assert status == 2
    assert [line for line in out if "SKP900" in line] == [
        "vanishing.py:1:1: SKP900 could not check this file: no such file or directory"]
    assert any(line.startswith(GOOD_FINDING) for line in out)


def test_directory_named_like_a_module_and_unlistable_directory(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()  # walked into, not read
    (tmp_path / "pkg.py" / "inner.py").write_text("x = 1\n", encoding="utf-8")
    found = config.Finder(isolated=True).discover([str(tmp_path)])
    assert sorted(os.path.relpath(p, tmp_path) for p, _ in found) == [os.path.join("pkg.py", "inner.py")]
    with pytest.raises(sources.SourceError, match="is a directory"):
        sources.read_bytes(str(tmp_path / "pkg.py"))


def test_discovery_visits_each_directory_once(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "m.py").write_text("x = 1\n", encoding="utf-8")
    found = list(config.Finder(isolated=True).discover([str(tmp_path), str(tmp_path / "a"), str(tmp_path)]))
    assert len(found) == 1


def test_stale_project_index_entry_is_refreshed(tmp_path: Path) -> None:
    """A module edited between two checks in one process (an editor integration, `fix` re-linting)
    is summarized again: the index keys its entries by size and mtime."""
    from skiplint.project import ProjectIndex

    blocks = tmp_path / "blocks.py"
    blocks.write_text("import torch.nn as nn\n\nclass Plain(nn.Module):\n    pass\n", encoding="utf-8")
    index = ProjectIndex()
    before = index.summary(str(blocks))
    assert before is not None and before.classes["Plain"].kind == "plain"
    blocks.write_text(API + "import torch.nn as nn\n\n@skippable(stash=['a'])\nclass Plain(nn.Module):\n"
                      "    def forward(self, x):\n        yield stash('a', x)\n        return x\n",
                      encoding="utf-8")
    os.utime(blocks, (1, 1))
    after = index.summary(str(blocks))
    assert after is not None and after.classes["Plain"].kind == "skippable"


# -- the flake8 plugin never raises -----------------------------------------------------------------
PLUGIN_TEXTS = [
    pytest.param(API + "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n", id="parentheses-5000"),
    pytest.param(recursion_in_forward(1400), id="recursion-error"),
    pytest.param(API + "x = a ?? b\n", id="future-syntax"),
    pytest.param(API + "x = '\ufffd\ufffd'\n\x0c\n", id="replacement-chars"),
    pytest.param(API + "def f(:\n", id="syntax-error"),
    pytest.param("\ufeff" + API, id="bom-left-in"),
    pytest.param(API + "x = 1\r\ny = 2\r", id="mixed-newlines"),
    pytest.param("", id="empty"),
]


def _compiles(text: str) -> bool:
    try:
        compile(text, "<t>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@pytest.mark.parametrize("text", PLUGIN_TEXTS)
def test_flake8_plugin_never_raises(text: str) -> None:
    lines = text.splitlines(keepends=True)
    results = list(SkiplintChecker(None, lines, "hostile.py").run())
    # flake8 shows E999 for what Python cannot compile; a valid text the analysis refuses is SKP900
    refused = [message for _, _, message, _ in results if message.startswith("SKP900 ")]
    assert not refused or _compiles(text), refused
    # an analyzer bug is shown, not raised: it must not be what this text meets
    assert [message for _, _, message, _ in results if message.startswith("SKP902 ")] == []


def test_flake8_plugin_on_ten_megabytes_returns_quickly(tmp_path: Path, ten_megabytes: bytes) -> None:
    """flake8 hands the plugin whatever it read; the plugin gives up on what the CLI refuses, with
    the CLI's SKP900."""
    (tmp_path / "huge.py").write_bytes(ten_megabytes)
    code = ("import sys; from skiplint.flake8_plugin import SkiplintChecker; "
            "lines = open(sys.argv[1], encoding='utf-8').readlines(); "
            "print([result[:3] for result in SkiplintChecker(None, lines, sys.argv[1]).run()])")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "huge.py")], capture_output=True,
                          text=True, timeout=15)
    assert done.returncode == 0, done.stderr
    reason = sources.too_large(len(ten_megabytes))
    assert done.stdout.strip() == repr([(1, 0, f"SKP900 could not check this file: {reason}")])


def _nul_is_a_value_error() -> bool:
    """Python 3.9 and 3.10 raise ValueError for a NUL byte in source (flake8 then crashes on its
    own); later versions raise SyntaxError, which flake8 reports as E999."""
    try:
        ast.parse("x = 1\0\n")
    except ValueError:
        return True
    except SyntaxError:
        return False
    return False


def test_plugin_frames_are_found_by_module_not_by_the_folder_a_clone_is_in() -> None:
    flake8_crash = ('Traceback (most recent call last):\n'
                    '  File "/home/u/skiplint/.tox/lowest/lib/python3.9/site-packages/flake8/checker.py", '
                    'line 1, in run\n'
                    '  File "/home/u/skiplint/.tox/lowest/lib/python3.9/ast.py", line 47, in parse\n'
                    'ValueError: source code string cannot contain null bytes\n')
    assert plugin_frames(flake8_crash) == []
    plugin_crash = flake8_crash.replace(
        "ast.py", "site-packages/skiplint/flake8_plugin.py").replace(
        "/lib/python3.9/site-packages/flake8/checker.py", "/skiplint/interpret/core.py")
    assert plugin_frames(plugin_crash) == [
        "/home/u/skiplint/.tox/lowest/skiplint/interpret/core.py",
        "/home/u/skiplint/.tox/lowest/lib/python3.9/site-packages/skiplint/flake8_plugin.py"]


def test_flake8_run_over_hostile_tree_reports_no_plugin_failure(tmp_path: Path) -> None:
    for name, data in (("nul.py", API.encode() + b"\0\n"), ("latin.py", API.encode() + b"x = '\xe9'\n"),
                       ("deep.py", (API + "x = " + "(" * 5000 + ")" * 5000 + "\n").encode()),
                       ("future.py", (API + "x = a ?? b\n").encode())):
        (tmp_path / name).write_bytes(data)
    (tmp_path / "good.py").write_text(GOOD, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "-j", "1", "--select", "SKP,E9", "."],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "failed during execution" not in done.stderr, done.stderr
    if "Traceback" in done.stderr:  # flake8 itself, where this Python's ast.parse raises ValueError on NUL
        assert _nul_is_a_value_error() and plugin_frames(done.stderr) == [], done.stderr
        assert done.stderr.rstrip().endswith("ValueError: source code string cannot contain null bytes")
        (tmp_path / "nul.py").unlink()
        done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "-j", "1", "--select", "SKP,E9",
                               "."], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    assert "./good.py:8:15: SKP101" in done.stdout, done.stdout


def test_engine_check_text_never_raises_on_hostile_text() -> None:
    for param in PLUGIN_TEXTS:
        (text,) = param.values
        result = engine.check_text(text, "hostile.py", engine.EVERYTHING)
        assert [d for d in result.diagnostics if d.code == "SKP902"] == [], param.id
        assert result.error is None or "internal error" not in result.error, param.id


def form_feeds_everywhere(functions: int, every: int, newline: str = "\n") -> str:
    """A module whose every function has a form feed before the indentation of a statement, with
    a skippable class whose forward holds a line of only a backslash and a form feed, and yields
    a non-command (SKP108) after them, every `every` functions."""
    parts = ["from torch import nn\nfrom torchgpipe.skip import skippable, stash\n\n\n"]
    for i in range(functions):
        parts.append(f"def f{i}(x):\n    y = x + {i}\n\x0c    return y\n\n\n")
        if i % every == every - 1:
            parts.append(f"@skippable(stash=['skip'])\nclass C{i}(nn.Module):\n    def forward(self, x):\n"
                         "        z = x\n\\\n        yield stash('skip', z)\n\x0c        yield x * 2\n"
                         "        return x\n\n\n")
    return "".join(parts).replace("\n", newline)


def python_skp108(text: str) -> list[tuple[int, int]]:
    """(line, 1-based column) of each `yield x * 2` statement, as Python's parser places them."""
    tree = ast.parse(text)
    return [(node.lineno, node.col_offset + 1) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Yield)
            and isinstance(node.value.value, ast.BinOp)]


BIG_FORM_FEEDS = form_feeds_everywhere(6000, 1000)
CHECKED["form-feeds-in-a-large-module"] = write("big.py", BIG_FORM_FEEDS.encode("utf-8"))


def test_form_feeds_in_a_large_module_are_located_without_hanging(checked: Batch) -> None:
    # libcst's generated code differs from this 280 KB source in 6,006 places; aligning the two
    # character by character took hours. The batch's timeout only guards against a hang.
    expected = [f"big.py:{line}:{column}: SKP108 forward of a @skippable class yields 'x * 2', which is not a "
                "stash/pop command" for line, column in python_skp108(BIG_FORM_FEEDS)]
    assert len(expected) == 6 and expected[0].startswith("big.py:5011:10:")
    assert checked.lines("form-feeds-in-a-large-module") == expected


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_locating_past_form_feeds_aligns_lines_not_characters(monkeypatch: pytest.MonkeyPatch,
                                                              newline: str) -> None:
    # The generated code and the source are compared without what libcst drops or repeats (in
    # linear time); only lines that still differ (the last one of a CR-only file, whose final CR
    # libcst leaves out) are aligned character by character, within limits.MAX_ALIGN_CHARS.
    import difflib

    from skiplint import positions

    compared: list[int] = []

    class Counting(difflib.SequenceMatcher):  # type: ignore[type-arg]
        def __init__(self, junk: None, a: str, b: str, autojunk: bool = True) -> None:
            compared.append(len(a) + len(b))
            super().__init__(junk, a, b, autojunk)

    monkeypatch.setattr(positions.difflib, "SequenceMatcher", Counting)
    text = form_feeds_everywhere(1500, 500, newline)
    diagnostics = engine.check_text(text, "big.py").diagnostics
    assert [(d.line, d.col + 1, d.code) for d in diagnostics] == [
        (line, column, "SKP108") for line, column in python_skp108(text)]
    assert len(diagnostics) == 3
    assert sum(compared) <= limits.MAX_ALIGN_CHARS
    assert (compared != []) == (newline == "\r")


def test_texts_too_different_to_align_are_not_aligned(monkeypatch: pytest.MonkeyPatch) -> None:
    from skiplint import positions

    monkeypatch.setattr(positions.difflib, "SequenceMatcher", None)  # never called past the limit
    many = "".join(f"x{i} = {i}\n" for i in range(limits.MAX_ALIGN_CHARS))
    assert positions._aligned(many, many.replace("=", " =")) is None
    assert positions._aligned(many + "y = 1\n", "\x0c" + many + "y = 1\n\\\n") is not None
    through = positions._aligned("a\x0c\nb = 1\n", "a\n\\\n\x0cb = 1\n")
    assert through is not None
    assert [through(offset) for offset in range(9)] == [0, None, 1, 5, 6, 7, 8, 9, 10]
