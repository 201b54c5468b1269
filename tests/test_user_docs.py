"""The docs a user reads first say what to expect and how to get it: the pre-commit `rev` is the
release's tag, torch's CPU wheels are installed from PyTorch's own index, the editor setups cover
old and new clients, the CHANGELOG lists the language server, and no page reads like a lab notebook
(dated runs and machine loads belong in docs/performance.md and the CHANGELOG)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

import skiplint

REPO = Path(__file__).resolve().parent.parent
#: The pages a user reads first: what to expect, not when or on how busy a machine it was measured.
USER_PAGES = ["README.md", "docs/usage.md", "docs/runtime.md", "docs/editors.md", "docs/configuration.md",
              "docs/layout.md"]
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"


def read(name: str) -> str:
    return (REPO / name).read_text(encoding="utf-8")


def skiplint_revs(text: str) -> list[str]:
    """The `rev` of every pre-commit repository entry that points at skiplint's repository."""
    return re.findall(r"- repo: https://github\.com/skiplint/skiplint\n\s+rev: (\S+)", text)


@pytest.mark.parametrize("name", ["README.md", "docs/usage.md"])
def test_the_pre_commit_rev_is_the_release_tag(name: str) -> None:
    revs = skiplint_revs(read(name))
    assert revs, f"{name} shows no pre-commit entry for skiplint"
    assert set(revs) == {f"v{skiplint.__version__}"}


def test_the_rev_finder_reads_a_pre_commit_entry() -> None:
    entry = "repos:\n  - repo: https://github.com/skiplint/skiplint\n    rev: v9.9.9\n    hooks: []\n"
    assert skiplint_revs(entry) == ["v9.9.9"]


@pytest.mark.parametrize("name", USER_PAGES)
def test_no_user_page_reads_like_a_lab_notebook(name: str) -> None:
    text = read(name)
    found = re.findall(r"\b20\d\d-\d\d-\d\d\b|load average|loaded machine|quiet machine|interpreter starts",
                       text, re.I)
    assert found == [], f"{name}: move dated runs and machine loads to docs/performance.md or CHANGELOG.md"


def test_the_notebook_scan_finds_what_it_looks_for() -> None:
    note = "Latest run (2026-11-24, at a load average of 6), 301 interpreter starts"
    assert len(re.findall(r"\b20\d\d-\d\d-\d\d\b|load average|interpreter starts", note, re.I)) == 3


def test_the_readme_has_one_table_of_figures_each_with_its_command() -> None:
    readme = read("README.md")
    start = readme.index("## Performance\n")
    section = readme[start:readme.index("\n## ", start + 1)]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header, rule, *figures = rows
    assert header.split("|")[1:-1] == [" what ", " target ", " latest figure ", " measured by "]
    assert len([line for line in rows if set(line) <= set("|-")]) == 1  # one table
    assert figures and all(row.split("|")[-2].strip().startswith("`python benchmarks/") for row in figures)


@pytest.mark.parametrize("name", ["README.md", "docs/runtime.md"])
def test_torch_is_installed_from_pytorchs_cpu_index(name: str) -> None:
    assert f"pip install torch {CPU_INDEX}" in read(name) or f"pip install torch==2.13.0 {CPU_INDEX}" in read(name)


def test_tox_keeps_its_torch_pin() -> None:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO / "tox.ini", encoding="utf-8")
    assert "torch==2.13.0" in tox["testenv:runtime"]["deps"].split()
    assert "torch==2.13.0" in read("constraints.txt").splitlines()


def test_the_editor_setups_cover_old_and_new_neovim_and_helix() -> None:
    editors = read("docs/editors.md")
    assert 'vim.lsp.config("skiplint", {' in editors and 'vim.lsp.enable("skiplint")' in editors  # 0.11
    assert "vim.lsp.start_client({" in editors and "vim.lsp.buf_attach_client(" in editors  # 0.7 to 0.10
    helix = editors[editors.index("### Helix"):]
    assert "`languages.toml`" in helix
    assert '[language-server.skiplint]\ncommand = "skiplint"\nargs = ["server"]' in helix


def test_the_changelog_lists_the_language_server() -> None:
    changelog = read("CHANGELOG.md")
    release = changelog[changelog.index(f"## {skiplint.__version__}"):]
    release = release[:release.index("\n## ", 1)] if "\n## " in release[1:] else release
    assert "### The language server" in release and "`skiplint server`" in release
