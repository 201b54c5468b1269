"""The fix and encodings fuzz's fixed small budget: a few seeds of each generator (tests/fuzz/fixfs.py)."""

from __future__ import annotations

import sys

import pytest

from tests.fuzz import fixfs

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="resource limits and links are POSIX")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_fix_and_encodings_fuzz_input_ends_cleanly(seed: int) -> None:
    name, spec = fixfs.case(seed)
    assert fixfs.check_case(name, spec) == [], (name, spec)


def test_the_hostile_plans_reach_every_step_and_change() -> None:
    """The generator's first 400 seeds make every failing step, error and change happen."""
    plans = [fixfs.case(seed)[1] for seed in range(0, 400, 2)]
    assert {p["fail"]["step"] for p in plans if "fail" in p} == set(fixfs.STEPS)
    assert {p["fail"]["error"] for p in plans if "fail" in p} == set(fixfs.ERRORS)
    assert {c for p in plans for c in p.get("change", {}).values()} == set(fixfs.CHANGES)
    assert any("fsize" in p for p in plans) and any(p["links"] for p in plans)
