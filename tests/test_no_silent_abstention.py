"""No silent abstention: every composition the analysis meets is checked whole or carries a
finding that says why not, and every skippable class is specialized or, generic, carries its
SKP901. Checked over the oracle's generated programs (static side only: no torch needed)."""

from __future__ import annotations

import os
import sys

import pytest

from skiplint import engine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import oracle  # noqa: E402
from oracle_programs import CLASS_STYLES, generate, generate_many  # noqa: E402


def silent(program) -> list[str]:
    result = engine.check_text(program.source, "p.py", engine.Selection(extend_select=("SKP901",)))
    return oracle.silent_abstentions(program.source, "p.py", {d.code for d in result.diagnostics})


def test_generated_programs_leave_nothing_unchecked_in_silence() -> None:
    programs = generate_many(150, seed=11)
    problems = [(p.ident, p.planted, p.style, why) for p in programs for why in silent(p)]
    assert problems == []


@pytest.mark.parametrize("style", CLASS_STYLES)
def test_isolate_naming_an_undeclared_skip_is_reported_for_every_class_style(style: str) -> None:
    for seed in range(4):
        program = generate(seed, "isolate-unknown-name", class_style=style)
        result = engine.check_text(program.source, "p.py")
        assert [d.code for d in result.diagnostics] == ["SKP115"], program.source
        assert silent(program) == []


def test_an_unchecked_composition_with_no_finding_is_caught() -> None:
    # The invariant itself: a layer that cannot be known, with nothing reported about it.
    source = ("from torch import nn\nfrom torchgpipe.skip import skippable\nimport mystery\n\n"
              "model = nn.Sequential(mystery.Layer(), nn.ReLU())\n")
    both = engine.analyze_models(source, "p.py")
    assert both is not None
    assert oracle.unchecked_compositions(both[1]) == [("model", "layer 0 (mystery.Layer()) cannot be known")]
    assert oracle.silent_abstentions(source, "p.py", set()) == [
        "composition model: layer 0 (mystery.Layer()) cannot be known"]
    assert oracle.silent_abstentions(source, "p.py", {"SKP901"}) == []
