"""The benchmark's interleaved pairs (benchmarks/run.py): A and B take turns at going first, and
each pair's ratio is A's time over B's whichever ran first."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional, Sequence

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def run() -> Any:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import run as module
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    return module


def test_pairs_take_turns_at_going_first(run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []
    seconds = {"A": 2.0, "B": 4.0}

    def run_once(argv: Sequence[str], cwd: str, env: Optional[dict], limit_s: float) -> tuple[Any, ...]:
        order.append(argv[0])
        return seconds[argv[0]], 10.0, 0, "", seconds[argv[0]] / 2

    monkeypatch.setattr(run, "run_once", run_once)
    monkeypatch.setattr(run, "log", lambda message: None)
    pair = run.paired("A against B", 1.0, ("a", ["A"]), ("b", ["B"]), 4, None, 60.0)
    assert order == ["A", "B"] + ["A", "B", "B", "A", "A", "B", "B", "A"]  # the warm-ups, then the pairs
    assert pair.ratios == [0.5] * 4 and pair.cpu_ratios == [0.5] * 4
    assert (pair.a_seconds, pair.b_seconds, pair.median, pair.holds) == ([2.0] * 4, [4.0] * 4, 0.5, True)
