"""The differential oracle on a fixed budget: generated programs run against the real torchgpipe
and fairscale (CPU) and checked by skiplint; every disagreement must be a documented known gap,
and every known gap must still show (benchmarks/oracle.py has the generator, runner and list)."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("torchgpipe")
pytest.importorskip("fairscale")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import oracle  # noqa: E402
from oracle_programs import generate, generate_many  # noqa: E402

#: Programs per run: seed 0, the first BUDGET programs, plus the probes of every known gap.
BUDGET = 120


@pytest.fixture(scope="module")
def results() -> list[oracle.Result]:
    return oracle.evaluate(generate_many(BUDGET, seed=0) + oracle.probes(), jobs=2)


def test_every_disagreement_is_a_documented_gap(results: list[oracle.Result]) -> None:
    problems = oracle.unexplained(results)
    assert not problems, "\n\n".join(oracle.describe(r) for r in problems)


def test_abstentions_stay_under_three_percent(results: list[oracle.Result]) -> None:
    abstained = [r for r in results if r.outcome == "abstained"]
    assert len(abstained) * 100 < 3 * len(results), "\n\n".join(oracle.describe(r) for r in abstained)


def test_every_known_gap_still_shows(results: list[oracle.Result]) -> None:
    assert oracle.stale_gaps(results) == []


def test_the_budget_runs_both_libraries_every_style_and_real_failures(results: list[oracle.Result]) -> None:
    programs = [r.program for r in results]
    assert {p.library for p in programs} == {"torchgpipe", "fairscale"}
    assert {p.class_style for p in programs} == {"decorator", "call_form", "factory", "class_loop"}
    assert {p.composition for p in programs} == {"literal", "list_loop", "ordered_dict", "add_module", "helper",
                                                 "stages", "children"}
    assert {p.partitions for p in programs} == {1, 2, 3}
    stages = {r.stage for r in results if not r.runtime_ok}
    assert {"define", "pipe", "forward", "backward", "eval"} <= stages
    assert sum(r.outcome == "agree-clean" for r in results) >= BUDGET // 5
    assert sum(r.outcome == "agree-bug" for r in results) >= BUDGET // 3


def test_a_crashing_program_costs_only_itself() -> None:
    crash = generate(7)
    crash = type(crash)(**{**crash.__dict__, "ident": "crash",
                           "source": "import os\nos._exit(3)\n", "pipe_line": 2})
    hang = type(crash)(**{**crash.__dict__, "ident": "hang", "source": "while True:\n    pass\n", "pipe_line": 2})
    fine = generate(1, "clean")
    broken = generate(2, "pop-twice")
    out = oracle.run_batch([crash, fine, hang, broken], timeout=5.0)
    assert out["crash"] == {"ok": False, "stage": "crash", "error": "worker exited with status 3"}
    assert out["hang"] == {"ok": False, "stage": "timeout", "error": "no result in 5 s"}
    assert out[fine.ident] == {"ident": fine.ident, "ok": True, "stage": "", "error": ""}
    assert out[broken.ident] == {"ident": broken.ident, "ok": False, "stage": "forward",
                                 "error": "KeyError: 'hidden3'"}


def test_outcomes_are_the_product_of_the_two_verdicts() -> None:
    assert [oracle.outcome_of(s, ok) for s in ("clean", "bug", "abstain", "error") for ok in (True, False)] == [
        "agree-clean", "false-negative", "false-positive", "agree-bug", "abstained", "abstained",
        "analyzer-error", "analyzer-error"]


def test_known_gaps_match_by_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    gap = oracle.KnownGap((("planted", "profiled-skippable"), ("library", "fairscale")), "false-negative",
                          "issue 0", "an example")
    monkeypatch.setattr(oracle, "KNOWN_GAPS", (gap,))
    program = generate(1, "clean")
    labelled = type(program)(**{**program.__dict__, "planted": "profiled-skippable", "library": "fairscale"})
    assert gap.matches(labelled) and not gap.matches(program)
    assert oracle.known_gap(labelled, "false-negative") is gap
    assert oracle.known_gap(labelled, "abstained") is None
    torchgpipe = type(program)(**{**labelled.__dict__, "library": "torchgpipe"})
    assert oracle.known_gap(torchgpipe, "false-negative") is None
