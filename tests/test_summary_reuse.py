"""A module the run has analysed is summarized for the project index from that analysis, not parsed
again, and only while the file on disk still holds the analysed text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from skiplint import engine, project
from skiplint.project import ProjectIndex
from skiplint.session import Session

BLOCKS = '''\
from torch import nn
from torchgpipe.skip import pop, skippable, stash
from .parts import Helper as Reexported
from .more import *


@skippable(stash=["skip"])
class Down(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Up(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip


@skippable(pop=["skip", name])
class Odd(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip


class Stack(nn.Sequential):
    pass


class Plain(nn.Module):
    pass
'''
MODEL = '''\
from torch import nn
from torchgpipe import GPipe
from .blocks import Down, Up

model = GPipe(nn.Sequential(Up(), Down()), balance=[1, 1], chunks=2)
'''


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str]]:
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "blocks.py").write_text(BLOCKS)
    (tmp_path / "model.py").write_text(MODEL)
    parsed: list[str] = []
    summarize = project.summarize

    def counting(path: str, data: bytes, *rest: Any) -> project.ModuleSummary:
        parsed.append(os.path.basename(path))
        return summarize(path, data, *rest)

    monkeypatch.setattr(project, "summarize", counting)
    monkeypatch.chdir(tmp_path)
    return tmp_path, parsed


def findings(index: ProjectIndex, path: str) -> list[tuple[int, int, str]]:
    return [(d.line, d.col, d.code) for d in engine.check_file(path, session=Session(project=index)).diagnostics]


def test_a_checked_module_is_summarized_from_its_analysis(tree: tuple[Path, list[str]]) -> None:
    root, parsed = tree
    index = ProjectIndex()
    assert findings(index, "blocks.py") == []
    assert findings(index, "model.py") == [(5, 28, "SKP201"), (5, 34, "SKP202")]
    assert parsed == []
    learned = index.summary(str(root / "blocks.py"))
    assert learned == project.summarize(str(root / "blocks.py"), (root / "blocks.py").read_bytes())
    assert learned is not None and learned.classes["Odd"].pop is None and learned.classes["Stack"].kind == "sequential"
    assert learned.imports["Reexported"] == ".parts.Helper" and learned.stars == (".more",)


def test_a_module_changed_since_its_analysis_is_parsed_again(tree: tuple[Path, list[str]]) -> None:
    root, parsed = tree
    index = ProjectIndex()
    assert findings(index, "blocks.py") == []
    (root / "blocks.py").write_text(BLOCKS.replace('@skippable(pop=["skip"])\nclass Up', 'class Up'))
    assert findings(index, "model.py") == [(5, 34, "SKP202")]
    assert parsed == ["blocks.py"]


def test_text_that_is_not_the_file_is_not_taken_for_it(tree: tuple[Path, list[str]]) -> None:
    # A buffer checked under the file's name (stdin, an editor) says nothing of the file on disk.
    root, parsed = tree
    index = ProjectIndex()
    edited = BLOCKS.replace('@skippable(pop=["skip"])\nclass Up', 'class Up')
    result = engine.check_text(edited, "blocks.py", session=Session(project=index))
    assert [d.code for d in result.diagnostics] == ["SKP109"]
    assert findings(index, "model.py") == [(5, 28, "SKP201"), (5, 34, "SKP202")]
    assert parsed == ["blocks.py"]
