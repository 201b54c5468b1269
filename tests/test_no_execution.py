"""The static analyzer reads user code; it never imports or executes it.

The package below, if imported, writes a marker file and kills the process (os._exit), and every
module of it tries again at import time. It is generated into tmp_path: it uses the API across
modules (blocks in one module, the composition and the pipe in another, a re-export through
`__init__`), so the project index has every reason to look at all of it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skiplint import config, engine
from skiplint.session import Session

TRAP = textwrap.dedent("""\
    import os as _os
    with open({marker!r}, "a") as _handle:
        _handle.write(__name__ + "\\n")
    _os._exit(77)
""")

FILES = {
    "__init__.py": "{trap}from .blocks import Stash, Pop\n",
    "blocks.py": textwrap.dedent("""\
        {trap}
        import torch.nn as nn
        from torchgpipe.skip import pop, skippable, stash


        @skippable(stash=["skip"])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x


        @skippable(pop=["skip"])
        class Pop(nn.Module):
            def forward(self, x):
                y = yield pop("skip")
                return x + y
    """),
    "model.py": textwrap.dedent("""\
        {trap}
        import torch.nn as nn
        from torchgpipe import GPipe
        from torchgpipe.skip import skippable, stash

        from no_exec_pkg import Pop, Stash


        @skippable(stash=["lost"])
        class Leaky(nn.Module):
            def forward(self, x):
                yield stash("other", x)
                return x


        model = nn.Sequential(Stash(), Pop(), Leaky())
        pipe = GPipe(model, balance=[1, 1, 1], chunks=2)
    """),
    "conftest.py": "{trap}",
    "setup.py": "{trap}",
    "__main__.py": "{trap}",
}


@pytest.fixture()
def trap_package(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "EXECUTED"
    package = tmp_path / "src" / "no_exec_pkg"
    package.mkdir(parents=True)
    trap = TRAP.format(marker=str(marker))
    for name, body in FILES.items():
        (package / name).write_text(body.replace("{trap}", trap), encoding="utf-8")
    return package, marker


def test_the_trap_works(trap_package: tuple[Path, Path]) -> None:
    """Importing the package really would write the marker and exit."""
    package, marker = trap_package
    done = subprocess.run([sys.executable, "-c", "import no_exec_pkg"], cwd=package.parent,
                          capture_output=True, timeout=60)
    assert done.returncode == 77
    assert marker.read_text().splitlines() == ["no_exec_pkg"]
    marker.unlink()


def test_cli_reads_without_importing(trap_package: tuple[Path, Path]) -> None:
    package, marker = trap_package
    for jobs in ("1", "2"):
        done = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-j", jobs, "src"],
                              cwd=package.parent.parent, capture_output=True, text=True, timeout=120)
        assert not marker.exists(), marker.read_text()
        assert done.returncode == 1, done.stdout + done.stderr
        assert "SKP101" in done.stdout and "SKP103" in done.stdout, done.stdout
        assert "Traceback" not in done.stderr


def test_flake8_plugin_reads_without_importing(trap_package: tuple[Path, Path]) -> None:
    package, marker = trap_package
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "SKP", "src"],
                          cwd=package.parent.parent, capture_output=True, text=True, timeout=120)
    assert not marker.exists(), marker.read_text()
    assert "SKP101" in done.stdout, done.stdout + done.stderr


def test_engine_in_process_imports_nothing_new(trap_package: tuple[Path, Path]) -> None:
    package, marker = trap_package
    before = set(sys.modules)
    session = Session()
    files = config.Finder(isolated=True).discover([str(package)])
    results = [engine.check_file(path, session=session) for path, _ in files]
    assert not marker.exists()
    assert not {name for name in set(sys.modules) - before if "no_exec" in name or name in ("blocks", "model")}
    assert any(d.code == "SKP101" for r in results for d in r.diagnostics)


def test_layout_subcommand_reads_without_importing(trap_package: tuple[Path, Path]) -> None:
    """`skiplint layout` is static too; only `skiplint verify` runs models, and only when asked."""
    package, marker = trap_package
    done = subprocess.run([sys.executable, "-m", "skiplint", "layout", str(package / "model.py")],
                          cwd=package.parent.parent, capture_output=True, text=True, timeout=120)
    assert not marker.exists(), marker.read_text()
    assert "Traceback" not in done.stderr, done.stderr
    assert os.path.exists(package / "model.py")
