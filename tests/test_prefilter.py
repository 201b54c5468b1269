"""The prefilter: a file is parsed only when an import binds a name that can reach the API, in
whatever form Python accepts the import; and the CLI and flake8 then report what the analysis finds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skiplint import apiimports
from skiplint.session import Session


@pytest.mark.parametrize("source", [
    "from torchgpipe.skip import skippable\n",
    "    import fairscale.nn.pipe.skip as sk\n",
    "import os, torchgpipe\n",
    "from torch.distributed.pipeline import sync\n",
    "import torch.distributed.pipeline.sync.skip\n",
    "from torch.distributed import pipeline\n",
    "from torch.distributed import (\n    _pipeline,\n)\n",
    "from torch.distributed._pipeline.sync import Pipe\n",
    "try:\n    from fairscale.nn.pipe.skip import (\n        pop)\nexcept ImportError:\n    pass\n",
    # Forms the line pattern does not see; the import reader does.
    "try: from torchgpipe.skip import stash\nexcept ImportError: stash = None\n",
    "if TYPE_CHECKING: import fairscale\n",
    "def build(): from fairscale.nn import Pipe\n",
    "x = 1;import torchgpipe\n",
    "import os\n\x0cfrom torchgpipe.skip import pop\n",
    "from \\\n    torchgpipe.skip import pop\n",
    "from torch.distributed import rpc, pipeline\n",
    "from torch.distributed import rpc, _pipeline as old\n",
    "import torch\nPipe = torch.distributed.pipeline.sync.Pipe\n",
    "import torch as T\n@T . distributed.\\\n  _pipeline.sync.skip.skippable(stash=['a'])\nclass A: pass\n",
    "import torch.distributed as dist\nx = (dist\n     .pipeline)\n",
    "from torch import distributed\nx = distributed.pipeline.sync.skip.stash\n",
    "import torch\nx = mytorch.distributed.pipeline\ny = torch.distributed.pipeline.sync.Pipe\n",
])
def test_imports_of_the_api_pass(source: str) -> None:
    assert apiimports.mentions_api(source) and apiimports.mentions_api(source.encode())


@pytest.mark.parametrize("source", ["from torchgpipe.skip import stash\n", "import fairscale\n"])
def test_an_import_after_a_byte_order_mark_passes(source: str) -> None:
    assert apiimports.mentions_api("\ufeff" + source) and apiimports.mentions_api(b"\xef\xbb\xbf" + source.encode())


@pytest.mark.parametrize("source", [
    "# Inspiration: https://github.com/facebookresearch/fairscale/blob/main/x.py\n",
    '"""See torch.distributed.pipeline.sync.skip for the old API."""\n',
    "from torch.distributed import pipelining\n",
    "import torch.distributed.pipelining\n",
    "from cutlass import pipeline\n",
    'name = "torchgpipe"\n',
    "import torch\n# the data pipeline, then torchgpipe and fairscale in a comment\nx = 1\n",
    "import torch\nimport cutlass.pipeline\nx = cutlass.pipeline.PipelineAsync\n",
    "from torch import nn\nx = nn.pipeline\n",
    "import torch\nx = torch.distributed.pipelining.pipeline\n",
    "import torch\nx = mytorch.distributed.pipeline\ny = a.torch.distributed.pipeline\n",
])
def test_mentions_that_cannot_resolve_to_the_api_do_not(source: str) -> None:
    assert not apiimports.mentions_api(source) and not apiimports.mentions_api(source.encode())


@pytest.mark.parametrize("source", [
    "import cutlass.pipeline\nx = cutlass.pipeline.PipelineAsync\n",
    "from . import pipeline\n",
    '"""A data pipeline."""\nimport os\n',
])
def test_pipeline_alone_is_a_word_the_import_reader_is_spared(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way to the removed module also names `distributed`; torch's own sources say
    "pipeline" in 67 files, which the pattern and the import reader no longer go through."""
    from skiplint import apiimports

    read: list[object] = []
    monkeypatch.setattr(apiimports, "imports_api", lambda data: read.append(data) or False)
    assert not apiimports.mentions_api(source) and not apiimports.mentions_api(source.encode())
    assert read == []
    with_word = source + "# distributed\n"
    assert not apiimports.mentions_api(with_word) and not apiimports.mentions_api(with_word.encode())
    assert read == [with_word, with_word.encode()]


#: One layer with an undeclared stash (SKP101 at line 4 of the class) and an unused declaration
#: (SKP103), reached through each import form; {api} is how the decorator and stash are spelled.
_LAYER = """

@{api}skippable(stash=["a"])
class Layer(nn.Module):
    def forward(self, x):
        yield {api}stash("b", x)
        return x
"""

#: file -> (header, the API's spelling in the layer, the expected SKP401 line or 0)
_FORMS = {
    "after_try.py": ("try: from torchgpipe.skip import skippable, stash\nexcept ImportError: raise\n", "", 0),
    "form_feed.py": ("import os\n\x0cfrom torchgpipe.skip import skippable, stash\n", "", 0),
    "continued.py": ("from \\\n    fairscale.nn.pipe.skip import skippable, stash\n", "", 0),
    "among_names.py": ("from torch.distributed import rpc, pipeline\n", "pipeline.sync.skip.", 1),
    "torch_attribute.py": ("import torch\n", "torch.distributed.pipeline.sync.skip.", 0),
    "bom.py": ("\ufefffrom torchgpipe.skip import skippable, stash\n", "", 0),
}


def _form_tree(root: Path) -> dict[str, list[tuple[int, int, str]]]:
    expected: dict[str, list[tuple[int, int, str]]] = {}
    for name, (header, api, removed) in _FORMS.items():
        text = header + "from torch import nn\n" + _LAYER.format(api=api)
        (root / name).write_text(text, encoding="utf-8")
        lines = text.split("\n")  # not splitlines(): a form feed ends no line
        decorator = next(i for i, line in enumerate(lines, 1) if "skippable(" in line and "import" not in line)
        declared = lines[decorator - 1].index('"a"') + 1
        call = lines[decorator + 2].index(api + "stash(") + 1
        found = [(decorator, declared, "SKP103"), (decorator + 3, call, "SKP101")]
        expected[name] = ([(removed, 1, "SKP401")] if removed else []) + found
    return expected


def _reported(out: str) -> dict[str, list[tuple[int, int, str]]]:
    found: dict[str, list[tuple[int, int, str]]] = {}
    for line in out.splitlines():
        path, row, col, rest = line.split(":", 3)
        found.setdefault(Path(path).name, []).append((int(row), int(col), rest.split()[0]))
    return found


@pytest.mark.parametrize("door", ["cli -j 1", "cli -j 2", "flake8"])
def test_every_door_reports_what_each_import_form_reaches(tmp_path: Path, door: str) -> None:
    expected = _form_tree(tmp_path)
    command = ([sys.executable, "-m", "flake8", "--select", "SKP", "."] if door == "flake8" else
               [sys.executable, "-m", "skiplint", "-j", door[-1], "."])
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.stderr == ""
    assert _reported(run.stdout) == expected
    assert run.returncode == 1


def test_a_project_module_behind_a_byte_order_mark_and_try_is_learned(tmp_path: Path) -> None:
    from skiplint import engine
    from skiplint.project import ProjectIndex

    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "__init__.py").write_text("", encoding="utf-8")
    parts = ("\ufefftry: from torchgpipe.skip import skippable, stash, pop\nexcept ImportError: raise\n"
             "from torch import nn\n" + _LAYER.format(api="").replace('"b"', '"a"') +
             '\n\n@skippable(pop=["a"])\nclass Back(nn.Module):\n    def forward(self, x):\n'
             '        a = yield pop("a")\n        return x + a\n')
    (tmp_path / "kit" / "parts.py").write_text(parts, encoding="utf-8")
    model = tmp_path / "model.py"
    model.write_text("\ufefffrom torch import nn\nfrom kit.parts import Back, Layer\n\n"
                     "model = nn.Sequential(Back(), Layer())\n", encoding="utf-8")
    result = engine.check_file(str(model), session=Session(project=ProjectIndex()))
    assert [(d.line, d.col, d.code) for d in result.diagnostics] == [(4, 22, "SKP201"), (4, 30, "SKP202")]
    parts = str(tmp_path / "kit" / "parts.py")
    assert engine.check_file(parts, session=Session(project=ProjectIndex())).diagnostics == ()


# -- the prefilter never skips a file the analysis has findings in -----------------------------------
#: (import statement, the local name it binds, the attributes from that name to the skip module)
_BINDINGS = [
    ("import torch", "torch", ["distributed", "pipeline", "sync", "skip"]),
    ("import torch as T", "T", ["distributed", "pipeline", "sync", "skip"]),
    ("import torch.distributed", "torch", ["distributed", "_pipeline", "sync", "skip"]),
    ("import torch.distributed as D", "D", ["pipeline", "sync", "skip"]),
    ("from torch import distributed", "distributed", ["pipeline", "sync", "skip"]),
    ("from torch import (\n    distributed as D,\n)", "D", ["_pipeline", "sync", "skip"]),
    ("import torch.distributed.pipeline.sync.skip as S", "S", []),
    ("from torch.distributed.pipeline.sync import skip", "skip", []),
    ("import torchgpipe", "torchgpipe", ["skip"]),
    ("from torchgpipe import skip as S", "S", []),
    ("import fairscale", "fairscale", ["nn", "pipe", "skip"]),
    ("import fairscale.nn.pipe.skip as F", "F", []),
]
#: How an import statement may stand in a module.
_STATEMENTS = [
    "{}\n", "try:\n    {}\nexcept ImportError:\n    raise\n", "if True:\n    {}\n", "x = 1; {}\n",
    "{}  # the API\n", '"""Docstring."""\n{}\n', "\ufeff{}\n",
]
#: Between two parts of an attribute chain, outside brackets and inside them.
_OUTSIDE = [".", " . ", ".\\\n    ", " \\\n    . "]
_INSIDE = _OUTSIDE + ["\n    .", "  # a comment\n    .", ".  # a comment\n    "]


@st.composite
def _chain(draw: st.DrawFn, local: str, parts: list[str]) -> str:
    """`local.parts...` with blanks, continuations, comments and parentheses around a head of it."""
    names = [local, *parts]
    grouped = draw(st.integers(0, len(names)))  # the first `grouped` names in parentheses (0: none)
    out = "(" * (grouped > 0) + names[0]
    for index, name in enumerate(names[1:], 1):
        if index == grouped:
            out += ")"
        out += draw(st.sampled_from(_INSIDE if index < grouped else _OUTSIDE)) + name
    return out + (")" if grouped == len(names) else "")


@st.composite
def _api_modules(draw: st.DrawFn) -> str:
    statement, local, parts = draw(st.sampled_from(_BINDINGS))
    form = draw(st.sampled_from(_STATEMENTS))
    if form.startswith("if") or form.startswith("try"):
        statement = statement.replace("\n", "\n    ")
    skippable = draw(_chain(local, [*parts, "skippable"]))
    stash = draw(_chain(local, [*parts, "stash"]))
    return (form.format(statement) + "import torch.nn as nn\n\n\n"
            f"@{skippable}(stash=['a'])\nclass Layer(nn.Module):\n    def forward(self, x):\n"
            f"        yield {stash}('b', x)\n        return x\n")


_ISSUE_SPELLINGS = [
    "import torch\nimport torch.nn as nn\n\n\n@(torch.distributed).pipeline.sync.skip.skippable(stash=['a'])\n"
    "class Layer(nn.Module):\n    def forward(self, x):\n        yield torch.distributed.pipeline.sync.skip.stash('b', x)\n"
    "        return x\n",
    "import torch\nimport torch.nn as nn\n\n\n@(torch).distributed.pipeline.sync.skip.skippable(stash=['a'])\n"
    "class Layer(nn.Module):\n    def forward(self, x):\n        yield (torch\n    .distributed  # c\n    ).pipeline.sync.skip.stash('b', x)\n"
    "        return x\n",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_api_modules())
@example(_ISSUE_SPELLINGS[0])
@example(_ISSUE_SPELLINGS[1])
def test_the_prefilter_never_skips_a_file_the_analysis_has_findings_in(source: str) -> None:
    """Generated spellings of the API's imports, decorator and stash (parenthesised, spaced,
    continued, commented): a text the prefilter skips (as text and as bytes) has no finding when
    it is analysed all the same; every one of these has its two, so none may be skipped."""
    compile(source.encode("utf-8"), "m.py", "exec", dont_inherit=True)  # every spelling is valid Python
    from skiplint import engine, prefilter

    found = [d.code for d in engine.check_text(source, "m.py", prefiltered=True).diagnostics]
    if not prefilter.wanted(source, "m.py") or not prefilter.wanted(source.encode("utf-8"), "m.py"):
        assert found == [], source
    assert found in (["SKP103", "SKP101"], ["SKP401", "SKP103", "SKP101"], ["SKP103", "SKP401", "SKP101"]), source
