"""Ready to publish: one version, a changelog for it, and a wheel and an sdist that `python -m build`
makes without the network, that `twine check` passes, and whose sdist holds every file of the
repository, so that its tests run.

The build tests need `build`, `setuptools` and `wheel` (and `twine` for its check) in the running
environment: the `package` tox environment has them, and runs this file; elsewhere they skip.
"""

from __future__ import annotations

import configparser
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import skiplint

REPO = Path(__file__).resolve().parent.parent
#: Files a checkout may hold that are not the project's (never in git, never in the sdist).
_NOT_SOURCES = re.compile(r"(^|/)(__pycache__|\.git|\.tox|\.venv[^/]*|\.ci-venv|venv|build|dist|[^/]*\.egg-info"
                          r"|\.mypy_cache|\.pytest_cache|\.hypothesis|benchmarks/out|fuzz-failures)(/|$)|\.py[cod]$")


def tracked_files() -> list[str]:
    """The repository's files: git's list in a clone, else (an unpacked sdist) what is on disk."""
    try:
        done = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, timeout=60)
    except OSError:
        done = None
    if done is not None and done.returncode == 0 and done.stdout:
        names = [name for name in done.stdout.decode().split("\0") if name]
        return sorted(name for name in names if (REPO / name).is_file())
    return sorted(str(path.relative_to(REPO).as_posix()) for path in REPO.rglob("*")
                  if path.is_file() and not _NOT_SOURCES.search(path.relative_to(REPO).as_posix())
                  and path.name not in ("PKG-INFO", "setup.cfg.orig"))


# -- one version ------------------------------------------------------------------------------------

def test_the_version_is_written_in_one_place() -> None:
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg", encoding="utf-8")
    assert setup["metadata"]["version"] == "attr: skiplint.__version__"
    assert "version" not in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assignments = [path.relative_to(REPO).as_posix() for path in (REPO / "skiplint").rglob("*.py")
                   if re.search(r"^__version__\s*=", path.read_text(encoding="utf-8"), re.M)]
    assert assignments == ["skiplint/__init__.py"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", skiplint.__version__)


def test_the_changelog_starts_with_this_version() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (\d+\.\d+\.\d+)\b", text, re.M)
    assert versions and versions[0] == skiplint.__version__


def test_the_manifest_grafts_every_top_level_directory() -> None:
    # A directory added to the repository and forgotten here would be missing from the sdist;
    # the build test below checks the whole list, this one needs no build.
    manifest = (REPO / "MANIFEST.in").read_text(encoding="utf-8")
    grafted = set(re.findall(r"^graft (\S+)$", manifest, re.M))
    included = {name for line in re.findall(r"^include (.+)$", manifest, re.M) for name in line.split()}
    for name in tracked_files():
        top = name.split("/")[0]
        assert (top in grafted) if "/" in name else (top in included | {"setup.cfg", "pyproject.toml",
                                                                          "MANIFEST.in"}), name


# -- the build ----------------------------------------------------------------------------------------

def _missing(*modules: str) -> list[str]:
    return [module for module in modules if importlib.util.find_spec(module) is None]


needs_build = pytest.mark.skipif(bool(_missing("build", "setuptools", "wheel")),
                                 reason="needs build, setuptools and wheel (tox -e package)")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(wheel, sdist) built from a copy of the repository's files, without the network."""
    root = tmp_path_factory.mktemp("package")
    source = root / "source"
    for name in tracked_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"),
                           str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheels = list((root / "dist").glob("*.whl"))
    sdists = list((root / "dist").glob("*.tar.gz"))
    assert [p.name for p in wheels] == [f"skiplint-{skiplint.__version__}-py3-none-any.whl"]
    assert [p.name for p in sdists] == [f"skiplint-{skiplint.__version__}.tar.gz"]
    return wheels[0], sdists[0]


@needs_build
def test_the_sdist_holds_every_file_of_the_repository(built: tuple[Path, Path]) -> None:
    _, sdist = built
    top = f"skiplint-{skiplint.__version__}/"
    with tarfile.open(sdist) as archive:
        members = {m.name[len(top):] for m in archive.getmembers() if m.isfile()}
    assert set(tracked_files()) - members == set()
    assert {"PKG-INFO", "CHANGELOG.md", "LICENSE", "tests/test_packaging.py", "docs/rules.md",
            "fixtures/skp101_undeclared_stash.py"} <= members
    assert not [name for name in members if name.endswith((".pyc", ".pyo"))]


@needs_build
def test_the_wheel_holds_the_package_its_entry_points_and_license(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    info = f"skiplint-{skiplint.__version__}.dist-info/"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(info + "entry_points.txt").decode()
        metadata = archive.read(info + "METADATA").decode()
    package = {name for name in tracked_files() if name.startswith("skiplint/")}
    assert {name for name in names if not name.startswith(info)} == package
    assert "skiplint = skiplint.cli:main" in entry_points
    assert "SKP = skiplint.flake8_plugin:SkiplintChecker" in entry_points
    assert "skiplint = skiplint.pytest_plugin" in entry_points
    assert f"Version: {skiplint.__version__}\n" in metadata
    assert "Requires-Dist: libcst>=1.1" in metadata and "Requires-Dist: flake8>=5.0.1" in metadata
    assert any(name.startswith(info) and name.endswith("/LICENSE") for name in names)


@needs_build
@pytest.mark.skipif(bool(_missing("twine")), reason="needs twine (tox -e package)")
def test_twine_check_passes(built: tuple[Path, Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


@needs_build
def test_the_sdists_own_tests_run(built: tuple[Path, Path], tmp_path: Path) -> None:
    # Unpacked, the sdist is a checkout: its docs, fixtures and tests are there, and its tests pass
    # against its own copy of the package.
    _, sdist = built
    with tarfile.open(sdist) as archive:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(tmp_path, **safe)  # type: ignore[arg-type]
    unpacked = tmp_path / f"skiplint-{skiplint.__version__}"
    fast = [f"tests/test_packaging.py::{name}" for name in (
        "test_the_version_is_written_in_one_place", "test_the_changelog_starts_with_this_version",
        "test_the_manifest_grafts_every_top_level_directory")]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_ruledoc.py",
         "tests/test_doc_samples.py", *fast],
        cwd=unpacked, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(unpacked)})
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " failed" not in done.stdout
