"""The installed sources of torchgpipe and fairscale lint clean with the default selection.

tox installs both with `pip install --no-deps` (their sources only, no torch); without them the
test is skipped.
"""

from __future__ import annotations

import importlib.util

import pytest

from skiplint import config, engine, prefilter, sources
from skiplint.session import Session

LIBRARIES = ("torchgpipe", "fairscale")


def package_dir(name: str) -> str | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


@pytest.mark.parametrize("name", LIBRARIES)
def test_library_lints_clean(name: str) -> None:
    root = package_dir(name)
    if root is None:
        pytest.skip(f"{name} is not installed (pip install --no-deps torchgpipe==0.0.7 fairscale==0.4.13)")
    files = [path for path, _ in config.Finder(isolated=True).discover([root])]
    assert len(files) > 10
    session = Session()
    results = [engine.check_file(path, session=session) for path in files]
    unchecked = [(r.path, r.error) for r in results if r.error is not None]
    findings = [f"{d.path}:{d.line}:{d.col + 1}: {d.message}" for r in results for d in r.diagnostics]
    assert not unchecked
    assert not findings, "\n".join(findings)


@pytest.mark.parametrize("name", LIBRARIES)
def test_library_is_really_analysed(name: str) -> None:
    """Guard against a vacuous pass: some of the library's modules get past the prefilter."""
    root = package_dir(name)
    if root is None:
        pytest.skip(f"{name} is not installed")
    files = config.Finder(isolated=True).discover([root])
    texts = [sources.decode(sources.read_bytes(p)) for p, _ in files]
    assert sum(prefilter.mentions_api(text) for text in texts) >= 5
