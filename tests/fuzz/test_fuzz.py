"""The fuzz suite's fixed small budget (about a minute): one seed of each generator."""

from __future__ import annotations

import sys

import pytest

from tests.fuzz import generate

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [
    pytest.param(seed, id=g.__name__) for seed, g in enumerate(generate.GENERATORS)])
def test_fuzz_input_ends_cleanly(seed: int) -> None:
    name, tree = generate.case(seed)
    assert generate.check_case(name, tree) == [], (name, sorted(tree))
