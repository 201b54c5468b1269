"""The checks live with their rules: registered by the fact they consume, run by drivers that name
no code, and no other module writes a code number or makes a finding or a Diagnostic."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from skiplint import checks, engine, rules
from skiplint.facts import Finding, ModuleFacts, SkippableClass
from skiplint.rules import base, one_class, pipe

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "skiplint"


def _modules() -> Iterator[Path]:
    """Every module of the package outside the rules (the fixer, the runtime companion included)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if not path.relative_to(PACKAGE).as_posix().startswith("rules/"):
            yield path


def test_importing_the_rules_loads_no_libcst_and_no_analysis() -> None:
    code = ("import sys, skiplint.rules; "
            "heavy = [m for m in ('libcst', 'skiplint.facts', 'skiplint.pipes', 'skiplint.checks', 'skiplint.gradflow') "
            "if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("path", list(_modules()), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_code_literal_and_no_finding_made_outside_the_rules(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not re.findall(r"[\"']SKP\d{3}[\"']", text)
    assert not re.findall(r"(?<![\w.])(?:Finding|Diagnostic)\(", text)
    # A finding is made from a rule's value (`RULE.at(...)`, `RULE.diagnostic(...)`) in the rules
    # package only; the extractor, the interpreter and the doors record facts (a file not checked,
    # an analyzer bug: skiplint.findings.Unchecked, AnalyzerBug).
    assert re.findall(r"\b[A-Z][A-Z_]+\.(?:at|diagnostic)\(", text) == []


def test_every_check_belongs_to_a_family_and_reports_known_rules() -> None:
    assert set(base.CHECKS) <= {"module", "class", "composition", "pipe", "model", "unchecked", "bug"}
    for registered in (check for each in base.CHECKS.values() for check in each):
        assert registered.function.__module__.startswith("skiplint.rules.")
        assert registered.rules and all(rules.RULES[rule.code] is rule for rule in registered.rules)


def test_the_drivers_name_no_code() -> None:
    text = (PACKAGE / "checks.py").read_text(encoding="utf-8")
    assert "code ==" not in text and "SKP" not in text


def test_a_new_check_is_found_by_its_fact() -> None:
    """Registering a check of a fact is all it takes for the module's findings to have its findings."""
    def everything_named_odd(cls: SkippableClass) -> Iterator[Finding]:
        if cls.name == "Odd":
            yield one_class.FORWARD_ARITY.at(cls.site, cls=cls.name, count=9)

    module = engine.analyze(textwrap.dedent("""\
        from torch import nn
        from torchgpipe.skip import skippable, stash

        @skippable(stash=["a"])
        class Odd(nn.Module):
            def forward(self, x):
                yield stash("a", x)
                return x
        """), "m.py")
    assert module is not None
    assert [f.code for f in checks.module_findings(module)] == []
    base.checks("class", one_class.FORWARD_ARITY)(everything_named_odd)
    try:
        found = list(checks.module_findings(module))
    finally:
        base.CHECKS["class"].remove(base.CHECKS["class"][-1])
    assert [(f.code, f.arg("count"), [o.name for o in f.owners]) for f in found] == [("SKP114", "9", ["Odd"])]


def test_a_superseding_finding_replaces_the_other_at_its_node() -> None:
    """SKP305 supersedes SKP116 (`Rule.supersedes`): one mistake, one diagnostic."""
    assert one_class.DISCARDED_POP.code in pipe.DISCARDED_CROSS_PARTITION_POP.supersedes
    source = textwrap.dedent("""\
        from torch import nn
        from torchgpipe import GPipe
        from torchgpipe.skip import pop, skippable, stash

        @skippable(stash=["a"])
        class S(nn.Module):
            def forward(self, x):
                yield stash("a", x)
                return x

        @skippable(pop=["a"])
        class P(nn.Module):
            def forward(self, x):
                yield pop("a")
                return x

        model = GPipe(nn.Sequential(S(), nn.ReLU(), P()), balance=[1, 2], chunks=2)
        """)
    every = rules.Selection(extend_select=(one_class.DISCARDED_POP.code,))
    codes = [d.code for d in engine.check_text(source, "m.py", every).diagnostics]
    assert codes == [pipe.DISCARDED_CROSS_PARTITION_POP.code]
    alone = rules.Selection(select=(one_class.DISCARDED_POP.code,))
    assert [d.code for d in engine.check_text(source, "m.py", alone).diagnostics] == []


def test_late_binding_supersedes_the_disagreements_it_causes_and_lists_every_class() -> None:
    source = textwrap.dedent("""\
        from torch import nn
        from torchgpipe.skip import skippable, stash

        layers = []
        for name in ["a", "b", "c"]:
            @skippable(stash=[name])
            class S(nn.Module):
                def forward(self, x):
                    yield stash(name, x)
                    return x
            layers.append(S())
        """)
    module = engine.analyze(source, "m.py")
    assert module is not None
    found = [f for f in checks.module_findings(module)]
    late = [f for f in found if f.code == one_class.LATE_BOUND_SKIP_NAME.code]
    assert [f.code for f in found if f.code in one_class.LATE_BOUND_SKIP_NAME.supersedes] == []
    assert len(late) == 1 and late[0].arg("made") == "'a', 'b'" and len(late[0].owners) == 2


def test_module_facts_without_classes_run_the_module_checks() -> None:
    assert list(checks.module_findings(ModuleFacts("m.py"))) == []


def test_a_family_lists_only_its_own_rules() -> None:
    """A check may make a finding of another family's rule (SKP901 for a computed name), but the rule
    is listed once, in its family, in the order of the codes."""
    assert list(rules.RULES) == sorted(rules.RULES)
    for family in rules.FAMILIES:
        prefix = {one_class: "SKP1", pipe: "SKP3"}.get(family)
        if prefix is not None:
            assert all(rule.code.startswith(prefix) for rule in vars(family).values() if isinstance(rule, rules.Rule))
