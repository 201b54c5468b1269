"""The pre-commit hook: a configuration naming a git copy of this repository's hook fails on a bad
file and passes a good one.

pre-commit installs skiplint from that copy into its own environment, which needs the package
index for libcst and flake8; the test is skipped without pre-commit or git. The environment is
installed once for the module (`pre-commit try-repo` would install it again for every run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pre_commit")
yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def test_hook_definition() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = [h for h in hooks if h["id"] == "skiplint"]
    assert hook["id"] == "skiplint"
    assert hook["entry"] == "skiplint"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    # One process for all the staged files: it checks them on every core itself, and pre-commit's
    # parallel batches would each start a pool (benchmarks/hook_jobs.py: 30 files, 9 interleaved
    # rounds, medians: serial 3.64 s, parallel batches 5.72 s, parallel batches with -j1 5.38 s).
    assert hook["require_serial"] is True


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=120,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"})


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A committed copy of the package, setup files and hook definition: what try-repo installs."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in ("setup.cfg", "pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, repo / name)
    shutil.copytree(REPO / "skiplint", repo / "skiplint",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "hook repository")
    return repo


@pytest.fixture(scope="module")
def hook_config(hook_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A user's .pre-commit-config.yaml for the hook at the copy's commit, and the PRE_COMMIT_HOME
    that keeps the hook's environment between runs."""
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, check=True, capture_output=True,
                         text=True, timeout=120).stdout.strip()
    where = tmp_path_factory.mktemp("hook-config")
    config = where / "pre-commit-config.yaml"
    config.write_text(f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: skiplint\n",
                      encoding="utf-8")
    return config, where / "pre-commit-home"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's repository holding one bad and one good fixture."""
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(FIXTURES / "skp101_undeclared_stash.py", project / "bad.py")
    shutil.copy(FIXTURES / "skp101_clean.py", project / "good.py")
    git(project, "init", "-q")
    git(project, "add", ".")
    return project


def run_hook(hook_config: tuple[Path, Path], project: Path, filename: str) -> subprocess.CompletedProcess[str]:
    config, home = hook_config
    env = {**os.environ, "PRE_COMMIT_HOME": str(home)}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--config", str(config), "skiplint", "--files", filename],
        cwd=project, capture_output=True, text=True, timeout=600, env=env,
    )


def _installed_or_skip(done: subprocess.CompletedProcess[str]) -> None:
    log = done.stdout + done.stderr
    if "An unexpected error has occurred" in log and ("pip" in log or "network" in log.lower()):
        pytest.skip("pre-commit could not install the hook environment (no package index?)")


def test_hook_fails_on_a_bad_file(hook_config: tuple[Path, Path], project: Path) -> None:
    done = run_hook(hook_config, project, "bad.py")
    _installed_or_skip(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "bad.py:10:15: SKP101 'extra' is stashed but not declared in stash=[...]" in done.stdout
    assert "Failed" in done.stdout


def test_hook_passes_a_good_file(hook_config: tuple[Path, Path], project: Path) -> None:
    done = run_hook(hook_config, project, "good.py")
    _installed_or_skip(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout
