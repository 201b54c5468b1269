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
    result = engine.check_file(model, session=engine.Session(project=index))
    # A module-level model: the pop fails when run; verified by an importer's pipe, so does the stash.
    assert [(d.line, d.code) for d in result.diagnostics] == [(4, "SKP201"), (4, "SKP202")]


def test_prefilter_reads_only_what_is_imported(tmp_path: Path) -> None:
    pkg = make_package(tmp_path)
    index = ProjectIndex()
    assert engine.check_file(str(pkg / "unrelated.py"), session=engine.Session(project=index)).diagnostics == ()
    assert index.reads == 0  # no import of a project module: nothing else read
    engine.check_file(str(pkg / "sub" / "model.py"), session=engine.Session(project=index))
    reads = index.reads
    engine.check_file(str(pkg / "sub" / "model.py"), session=engine.Session(project=index))
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
    forced = engine.check_text(text, str(model), session=engine.Session(project=ProjectIndex()), prefiltered=True)
    if root == "kit":
        assert scan.imports_project_skippables(str(model), text)
        assert [(d.line, d.col, d.code) for d in forced.diagnostics] == [(4, 22, "SKP201"), (4, 32, "SKP202")]
    else:
        assert not scan.imports_project_skippables(str(model), text) and scan.reads == 0
        assert forced.diagnostics == ()
    result = engine.check_file(str(model), session=engine.Session(project=ProjectIndex()))
    assert result.diagnostics == forced.diagnostics


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


# -- the session: what one analysis is handed, and nothing another one reads ------------------------

MODEL = '''from torch import nn
from torchgpipe import GPipe

from .blocks import Down, Up


def helper(x):
    return x + 1


class Plain(nn.Module):
    def forward(self, x):
        return helper(x)


model = GPipe(nn.Sequential(Up(), Plain(), Down()), balance=[2, 1], chunks=2)
'''


def test_editing_a_document_that_imports_a_module_reparses_only_the_edited_statements(tmp_path: Path) -> None:
    """The language server's memo of a document is handed to the parse of that document only:
    parsing the module it imports (the project index's summary of blocks.py) leaves it alone, so
    every edit re-parses the touched statements and keeps the others, node for node."""
    from skiplint import config, reparse
    from skiplint.lsp import features

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "blocks.py").write_text(BLOCKS)
    path = str(pkg / "model.py")
    (pkg / "model.py").write_text(MODEL)
    memo = reparse.Memo()
    text = MODEL
    memo.target = text
    first = features.check(text, path, config.Config(), memo)
    assert [d.code for d in first.diagnostics] == ["SKP201", "SKP202"]
    assert memo.text is text and memo.reused == 0
    for edit in range(1, 6):
        before = memo.module
        assert before is not None
        text = text.replace(f"return x + {edit}", f"return x + {edit + 1}")
        memo.target = text
        result = features.check(text, path, config.Config(), memo)
        assert [d.code for d in result.diagnostics] == ["SKP201", "SKP202"]
        assert memo.reused == edit and memo.text is text
        after = memo.module
        assert after is not None and after.code == text
        kept = [a is b for a, b in zip(before.body, after.body)]
        # the helper and its neighbours are parsed again; the statements further away are the same nodes
        assert kept == [True, True, False, False, False, True], kept


def test_two_sessions_with_their_own_configurations_interleaved_in_one_process(tmp_path: Path) -> None:
    """The same text checked by two doors at once, each with its own configuration (an api-alias
    that makes `mypkg.skip` the API, max-unroll) and its own session: each gives its own findings,
    whatever order their steps run in, and each keeps only its own compositions."""
    from skiplint import config, parallel

    text = ("from mypkg.skip import skippable, stash\nfrom torch import nn\n\n\n"
            "@skippable(stash=['declared'])\nclass Layer(nn.Module):\n    def forward(self, x):\n"
            "        yield stash('other', x)\n        return x\n\n\nmodel = nn.Sequential(Layer())\n")
    path = str(tmp_path / "m.py")
    aliased = config.Config(api_aliases=(("mypkg.skip.skippable", "torchgpipe.skip.skippable"),
                                         ("mypkg.skip.stash", "torchgpipe.skip.stash")), max_unroll=2)
    plain = config.Config(max_unroll=50)
    kept: dict[str, dict[str, object]] = {"aliased": {}, "plain": {}}
    found: dict[str, list[list[tuple[int, str]]]] = {"aliased": [], "plain": []}
    for name in ("aliased", "plain", "plain", "aliased", "aliased", "plain"):
        settings = aliased if name == "aliased" else plain
        session = engine.Session(kept=kept[name])  # type: ignore[arg-type]
        result = parallel.check_source(text, path, settings, session)
        found[name].append([(d.line, d.code) for d in result.diagnostics])
    assert found["aliased"] == [[(5, "SKP103"), (8, "SKP101"), (12, "SKP202")]] * 3
    assert found["plain"] == [[]] * 3
    assert list(kept["aliased"]) == [path] and kept["plain"] == {}
