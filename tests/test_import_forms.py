"""Every import form reaches the project's skippable classes: through the CLI (-j 1, -j 2) and
flake8, each form composed in both directions (the wrong order is SKP201 + SKP202 on the two
layers, the right order is clean); and the prefilter's tokenizer-exact reader binds exactly what
the analysis' libcst reader binds."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skiplint import apiimports, engine, imports
from skiplint.project import ProjectIndex
from skiplint.session import Session

PARTS = '''from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Encoder(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Decoder(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip
'''


class Form(NamedTuple):
    """Files besides kit/parts.py; the model's path, its import block, and the two layer calls."""

    files: dict[str, str]
    model: str
    header: str
    decoder: str
    encoder: str


FORMS: dict[str, Form] = {
    "one line": Form({}, "m.py", "from kit.parts import Decoder, Encoder\n", "Decoder()", "Encoder()"),
    "black-wrapped relative module": Form(
        {}, "kit/m.py", "from . import (\n    parts,\n)\n", "parts.Decoder()", "parts.Encoder()"),
    "parenthesized with comments": Form(
        {}, "m.py", "from kit.parts import (  # the blocks\n    Decoder,\n    # between\n    Encoder,  # last\n)\n",
        "Decoder()", "Encoder()"),
    "backslash continuations": Form(
        {}, "m.py", "from kit.parts \\\n    import Decoder, \\\n    Encoder\n", "Decoder()", "Encoder()"),
    "as aliases": Form({}, "m.py", "from kit.parts import Decoder as D, Encoder as E\n", "D()", "E()"),
    "re-export under aliases": Form(
        {"kit/__init__.py": "from .parts import Decoder as Dec, Encoder as Enc\n"},
        "m.py", "from kit import Dec, Enc\n", "Dec()", "Enc()"),
    "aliases at every hop of a re-export chain": Form(
        {"kit/layers/__init__.py": "from ..parts import (\n    Decoder as D1,\n    Encoder as E1,\n)\n",
         "kit/__init__.py": "from .layers import D1 as Dec, E1 as Enc\n"},
        "m.py", "from kit import Dec as X, Enc as Y\n", "X()", "Y()"),
    "re-exported module under an alias": Form(
        {"kit/__init__.py": "from . import parts as p\n"}, "m.py", "from kit import p\n", "p.Decoder()", "p.Encoder()"),
    "star re-export": Form(
        {"kit/__init__.py": "from .parts import *\n"}, "m.py", "from kit import Decoder, Encoder\n",
        "Decoder()", "Encoder()"),
    "import pkg.mod as m": Form({}, "m.py", "import kit.parts as m\n", "m.Decoder()", "m.Encoder()"),
    "import pkg.mod": Form({}, "m.py", "import kit.parts\n", "kit.parts.Decoder()", "kit.parts.Encoder()"),
    "relative, three levels up": Form(
        {"kit/a/__init__.py": "", "kit/a/b/__init__.py": ""}, "kit/a/b/m.py",
        "from ...parts import Decoder, Encoder\n", "Decoder()", "Encoder()"),
    "relative parent package": Form(
        {"kit/a/__init__.py": ""}, "kit/a/m.py", "from .. import parts\n", "parts.Decoder()", "parts.Encoder()"),
    "after a semicolon": Form({}, "m.py", "import os; from kit.parts import Decoder, Encoder\n",
                              "Decoder()", "Encoder()"),
    "in a try block": Form({}, "m.py", "try:\n    from kit.parts import Decoder, Encoder\nexcept ImportError:\n    raise\n",
                           "Decoder()", "Encoder()"),
}


def build(tmp_path: Path) -> dict[str, tuple[str, int, int, int]]:
    """One project per form and direction; returns model path -> (direction, line, col a, col b)."""
    expected: dict[str, tuple[str, int, int, int]] = {}
    for number, (name, form) in enumerate(FORMS.items()):
        for direction in ("wrong", "right"):
            root = tmp_path / f"form{number:02d}_{direction}"
            (root / "kit").mkdir(parents=True)
            (root / "kit" / "__init__.py").write_text("")
            (root / "kit" / "parts.py").write_text(PARTS)
            for rel, text in form.files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            first, second = (form.decoder, form.encoder) if direction == "wrong" else (form.encoder, form.decoder)
            call = f"model = nn.Sequential({first}, {second})"
            source = "from torch import nn\n" + form.header + "\n" + call + "\n"
            (root / form.model).write_text(source)
            line = source.count("\n")
            expected[str(root / form.model)] = (direction, line, call.index(first), call.index(second))
    return expected


FINDING = re.compile(r"^(.*?):(\d+):(\d+): (SKP\d+) ")


def findings(output: str) -> dict[str, list[tuple[int, int, str]]]:
    out: dict[str, list[tuple[int, int, str]]] = {}
    for line in output.splitlines():
        match = FINDING.match(line)
        assert match, line
        path = match.group(1)[2:] if match.group(1).startswith("./") else match.group(1)
        out.setdefault(path, []).append((int(match.group(2)), int(match.group(3)), match.group(4)))
    return out


def expectations(tmp_path: Path, expected: dict[str, tuple[str, int, int, int]]) -> dict[str, list[tuple[int, int, str]]]:
    out = {}
    for path, (direction, line, first, second) in expected.items():
        if direction == "wrong":
            out[str(Path(path).relative_to(tmp_path))] = [(line, first + 1, "SKP201"), (line, second + 1, "SKP202")]
    return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[tuple[int, int, str]]]]:
    tmp_path = tmp_path_factory.mktemp("forms")
    expected = build(tmp_path)
    return tmp_path, expectations(tmp_path, expected)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cli_reads_every_import_form(tree: tuple[Path, dict[str, list[tuple[int, int, str]]]], jobs: str) -> None:
    root, expected = tree
    run = subprocess.run([sys.executable, "-m", "skiplint", "-j", jobs, "."], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert run.stderr == ""
    assert findings(run.stdout) == expected
    assert run.returncode == 1


def test_flake8_reads_every_import_form(tree: tuple[Path, dict[str, list[tuple[int, int, str]]]]) -> None:
    root, expected = tree
    run = subprocess.run([sys.executable, "-m", "flake8", "--select", "SKP", "."], cwd=root,
                         capture_output=True, text=True, timeout=300)
    assert findings(run.stdout) == expected
    assert run.returncode == 1


def test_each_form_in_process(tmp_path: Path) -> None:
    expected = build(tmp_path)
    for path, (direction, line, first, second) in expected.items():
        result = engine.check_file(path, session=Session(project=ProjectIndex()))
        got = [(d.line, d.col, d.code) for d in result.diagnostics]
        want = [(line, first, "SKP201"), (line, second, "SKP202")] if direction == "wrong" else []
        assert got == want, path


STATEMENTS = [
    "import a",
    "import a.b.c",
    "import a.b as m",
    "import a, b.c as d, e.f",
    "from a import b",
    "from a.b import c as d, e",
    "from . import x",
    "from .. import x as y",
    "from ...p.q import (r,\n    s as t,  # c\n)",
    "from .m import (a, b,)",
    "from \\\n  a \\\n  import \\\n  b",
    "from . import (\n    parts,\n)",
    "from .... import deep",
    "from .a import *",
]


@pytest.mark.parametrize("source", STATEMENTS)
def test_tokenizer_reader_binds_what_the_analysis_binds(source: str) -> None:
    statement = cst.parse_module(source + "\n").body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    small = statement.body[0]
    assert isinstance(small, (cst.Import, cst.ImportFrom))
    read = [(i.local, i.qualified) for i in apiimports.read_imports(source + "\n") if i.name != "*"]
    assert read == list(imports.import_bindings(small))


def test_lines_of_strings_that_look_like_imports_cost_little() -> None:
    assert apiimports.read_imports('x = """\n' + "from here on it's (open\n" * 2000 + '"""\n') == []


def test_reader_finds_statements_anywhere_and_skips_none() -> None:
    source = ("def f():\n    if x: import a.b as c\n    y = 1; from .d import (e,\n        f)\n"
              "class K:\n    from g import h\n")
    assert [(i.local, i.qualified) for i in apiimports.read_imports(source)] == [
        ("c", "a.b"), ("e", ".d.e"), ("f", ".d.f"), ("h", "g.h")]


_NAMES = st.sampled_from(["a", "b", "parts", "Enc", "_x", "mod2"])
_DOTTED = st.lists(_NAMES, min_size=1, max_size=3).map(".".join)
_SPACE = st.sampled_from([" ", "  ", "\t", " \\\n  "])


@st.composite
def import_statements(draw: st.DrawFn) -> str:
    """A random import statement in any layout Python accepts: spacing, continuations, parentheses
    with comments and trailing commas, aliases, relative levels."""
    sp = draw(_SPACE)
    aliases = st.one_of(st.just(""), _NAMES.map(lambda n: f"{sp}as{sp}{n}"))
    if draw(st.booleans()):
        items = draw(st.lists(st.tuples(_DOTTED, aliases), min_size=1, max_size=3))
        return "import" + sp + ("," + sp).join(d + a for d, a in items)
    dots = "." * draw(st.integers(0, 3))
    module = dots + (draw(_DOTTED) if not dots or draw(st.booleans()) else "")
    items = draw(st.lists(st.tuples(_NAMES, aliases), min_size=1, max_size=3))
    names = ("," + sp).join(n + a for n, a in items)
    if draw(st.booleans()):
        comment = draw(st.sampled_from(["", "  # why", "  # (not) import x"]))
        trailing = draw(st.sampled_from(["", ","]))
        names = f"({comment}\n    " + names.replace(" \\\n  ", "\n    ") + trailing + "\n)"
    return f"from{sp}{module}{sp}import{sp}{names}"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(import_statements(), st.sampled_from(["", "    ", "x = 1; ", "if x: "]),
       st.sampled_from(["", "; y = 2", "; import z as w", "  # it's (not) an import"]))
def test_random_import_layouts_read_as_libcst_reads_them(statement: str, prefix: str, suffix: str) -> None:
    source = (f"if True:\n{prefix}" if prefix == "    " else prefix) + statement + suffix + "\nafter = 1\n"
    module = cst.parse_module(source)
    expected = [binding for node in _imports_of(module) for binding in imports.import_bindings(node)]
    assert [(i.local, i.qualified) for i in apiimports.read_imports(source)] == expected


def _imports_of(module: cst.Module) -> list[cst.Import | cst.ImportFrom]:
    found: list[cst.Import | cst.ImportFrom] = []

    class Visitor(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            found.append(node)

    module.visit(Visitor())
    return found
