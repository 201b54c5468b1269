"""The project index: imported layer classes resolved from sibling modules, cached by stat."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import engine
from skiplint.project import ProjectIndex
from skiplint.apiimports import Imported, read_imports
from skiplint.projectscan import ProjectScan

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "fixtures" / "compositions" / "unet_pkg"

BLOCKS = '''
from torch import nn
from torchgpipe.skip import pop, skippable, stash

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
'''


def make_package(tmp_path: Path) -> Path:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .blocks import Down, Up\n")
    (pkg / "blocks.py").write_text(BLOCKS)
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "model.py").write_text(
        "from torch import nn\nfrom ..blocks import Down\nfrom pkg import Up\n"
        "model = nn.Sequential(Up(), Down())\n")
    (pkg / "unrelated.py").write_text("from torch import nn\nmodel = nn.Sequential(nn.ReLU())\n")
    return pkg


def test_relative_absolute_and_reexported_classes(tmp_path: Path) -> None:
    pkg = make_package(tmp_path)
    index = ProjectIndex()
    model = str(pkg / "sub" / "model.py")
    assert index.resolve_class(model, "..blocks.Down").kind == "skippable"
    up = index.resolve_class(model, "pkg.Up")
    assert up is not None and up.pop == frozenset({"skip"})
    assert index.resolve_class(model, "pkg.Missing") is None
    assert index.resolve_class(model, "numpy.ndarray") is None
    result = engine.check_file(model, project=index)
    # A module-level model: the pop fails when run; verified by an importer's pipe, so does the stash.
    assert [(d.line, d.code) for d in result.diagnostics] == [(4, "SKP201"), (4, "SKP202")]


def test_prefilter_reads_only_what_is_imported(tmp_path: Path) -> None:
    pkg = make_package(tmp_path)
    index = ProjectIndex()
    assert engine.check_file(str(pkg / "unrelated.py"), project=index).diagnostics == ()
    assert index.reads == 0  # no import of a project module: nothing else read
    engine.check_file(str(pkg / "sub" / "model.py"), project=index)
    reads = index.reads
    engine.check_file(str(pkg / "sub" / "model.py"), project=index)
    assert index.reads == reads  # cached by path, size and mtime


@pytest.mark.parametrize("root", ["kit", "torch"])
def test_the_walk_follows_no_name_of_torch_as_the_analysis_resolves_none(tmp_path: Path, root: str) -> None:
    """A checkout of torch itself (or a package of that name) is a project whose classes the
    composition analysis never resolves through `torch.*` names; the prefilter's walk reads nothing
    for them and the forced analysis finds nothing either."""
    (tmp_path / root).mkdir()
    (tmp_path / root / "__init__.py").write_text("from .blocks import Down, Up\n")
    (tmp_path / root / "blocks.py").write_text(BLOCKS)
    model = tmp_path / "model.py"
    model.write_text(f"import {root}\nfrom {root}.blocks import Down\nfrom torch import nn\n"
                     f"model = nn.Sequential({root}.Up(), Down())\n")
    scan = ProjectScan()
    text = model.read_text()
    forced = engine.check_text(text, str(model), project=ProjectIndex(), prefiltered=True)
    if root == "kit":
        assert scan.imports_project_skippables(str(model), text)
        assert [(d.line, d.col, d.code) for d in forced.diagnostics] == [(4, 22, "SKP201"), (4, 32, "SKP202")]
    else:
        assert not scan.imports_project_skippables(str(model), text) and scan.reads == 0
        assert forced.diagnostics == ()
    assert engine.check_file(str(model), project=ProjectIndex()).diagnostics == forced.diagnostics


def test_cache_follows_changes(tmp_path: Path) -> None:
    pkg = make_package(tmp_path)
    index = ProjectIndex()
    model = str(pkg / "sub" / "model.py")
    assert index.resolve_class(model, "..blocks.Down").kind == "skippable"
    blocks = pkg / "blocks.py"
    blocks.write_text(BLOCKS.replace('stash=["skip"]', 'stash=["other"]').replace('"skip", x', '"other", x'))
    stat = blocks.stat()
    os.utime(blocks, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert index.resolve_class(model, "..blocks.Down").stash == frozenset({"other"})


def test_cli_and_flake8_agree_on_the_package_fixture() -> None:
    target = str(PKG.relative_to(REPO))
    cli = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", target], cwd=REPO,
                         capture_output=True, text=True)
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "SKP", "-j", "2", target],
                            cwd=REPO, capture_output=True, text=True)
    lines = sorted(line.split(" ")[0] + line.split(" ")[1] for line in cli.stdout.splitlines())
    assert lines and lines == sorted(line.split(" ")[0] + line.split(" ")[1] for line in flake8.stdout.splitlines())


def test_the_walk_keeps_imports_out_of_the_cycle_collectors_view(tmp_path: Path) -> None:
    """A flake8 worker keeps every module's imports for its whole run: kept as class instances,
    each full collection of the worker went through all of them again."""
    module = tmp_path / "mod.py"
    module.write_text("import os.path as p\nfrom .blocks import Down as D, Up\nfrom x import *\n")
    scanned = ProjectScan().scan(str(module))
    assert scanned is not None
    gc.collect()  # untracks the tuples of strings,
    gc.collect()  # then the tuple that holds them
    assert not gc.is_tracked(scanned.imports)
    assert not any(gc.is_tracked(fields) for fields in scanned.imports)
    assert list(scanned.imported()) == read_imports(module.read_text())
    assert [(i.local, i.module, i.name, i.renamed) for i in scanned.imported()] == [
        ("p", "os.path", None, True), ("D", ".blocks", "Down", False), ("Up", ".blocks", "Up", False),
        ("*", "x", "*", False)]
    assert scanned.binding("D") == [Imported("D", ".blocks", "Down")]
    assert scanned.binding("Down") == [] and scanned.binding("os") == []
    assert scanned.starred() == ["x"]
