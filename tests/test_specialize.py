"""Classes whose skip names come from a factory's parameters, a loop's variable or a class
attribute: each class statement's executions are checked with their own values (SKP1xx), and a
variable forward reads after it was rebound is SKP117, one finding for the one mistake."""

from __future__ import annotations

import textwrap

from skiplint import engine

HEADER = """\
from torch import nn
from torchgpipe.skip import pop, skippable, stash
"""


def report(body: str) -> list[tuple[int, int, str, str]]:
    """(line, column, code, message) of every finding, SKP901 selected too; lines of `body`."""
    text = HEADER + textwrap.dedent(body)
    offset = HEADER.count("\n")
    result = engine.check_text(text, "t.py", engine.Selection(extend_select=("SKP901",)))
    assert result.error is None
    return [(d.line - offset, d.col, d.code, d.message) for d in result.diagnostics]


def test_a_factory_called_with_literals_is_checked_per_call() -> None:
    found = report("""
        def make(declared, used):
            @skippable(stash=[declared])
            class Stash(nn.Module):
                def forward(self, x):
                    yield stash(used, x)
                    return x

            return Stash


        Good = make("a", "a")
        Bad = make("b", "c")
    """)
    assert found == [
        (3, 22, "SKP103", "SKP103 'b' is declared in stash=[...] but no path of forward stashes it"),
        (6, 18, "SKP101", "SKP101 'c' is stashed but not declared in stash=[...]"),
    ]


def test_an_uncalled_factory_still_abstains() -> None:
    found = report("""
        def make(name):
            @skippable(stash=[name])
            class Stash(nn.Module):
                def forward(self, x):
                    yield stash(name, x)
                    return x

            return Stash
    """)
    assert [(line, code) for line, _, code, _ in found] == [(3, "SKP901"), (6, "SKP901")]


def test_a_factory_called_with_a_computed_name_abstains_for_that_call() -> None:
    found = report("""
        import os

        def make(name):
            @skippable(stash=[name])
            class Stash(nn.Module):
                def forward(self, x):
                    yield stash(name, x)
                    return x

            return Stash


        Env = make(os.environ["SKIP"])
    """)
    assert [(line, code) for line, _, code, _ in found] == [(5, "SKP901"), (8, "SKP901")]


def test_late_binding_in_a_loop_is_one_skp117_for_the_classes_made_early() -> None:
    found = report("""
        MADE = {}
        for name in ("enc0", "enc1", "enc2"):
            @skippable(stash=[name])
            class Stasher(nn.Module):
                def forward(self, x):
                    yield stash(name, x)
                    return x

            MADE[name] = Stasher
    """)
    assert found == [(7, 18, "SKP117", "SKP117 forward reads 'name' when it runs, when it holds 'enc2', not "
                                       "the 'enc0', 'enc1' it held when the class was made: bind the name when "
                                       "the class is made (a class attribute, read as self.<attribute>)")]


def test_late_binding_of_a_pop_inside_a_builder_function() -> None:
    found = report("""
        def build():
            made = []
            for skip in ["a", "b"]:
                @skippable(pop=[skip])
                class Popper(nn.Module):
                    def forward(self, x):
                        value = yield pop(skip)
                        return x + value

                made.append(Popper)
            return made
    """)
    assert [(line, col, code) for line, col, code, _ in found] == [(8, 30, "SKP117")]
    assert "holds 'b', not the 'a' it held" in found[0][3]


def test_a_class_attribute_binds_the_name_when_the_class_is_made() -> None:
    assert report("""
        MADE = {}
        for name in ("enc0", "enc1"):
            @skippable(stash=[name])
            class Stasher(nn.Module):
                skip_name = name

                def forward(self, x):
                    yield stash(self.skip_name, x)
                    return x

            MADE[name] = Stasher
    """) == []


def test_an_attribute_that_a_method_reassigns_is_not_the_class_attribute() -> None:
    found = report("""
        MADE = {}
        for name in ("enc0", "enc1"):
            @skippable(stash=[name])
            class Stasher(nn.Module):
                skip_name = name

                def __init__(self, skip_name):
                    super().__init__()
                    self.skip_name = skip_name

                def forward(self, x):
                    yield stash(self.skip_name, x)
                    return x

            MADE[name] = Stasher
    """)
    assert [(line, code) for line, _, code, _ in found] == [(13, "SKP901")]


def test_a_variable_rebound_under_an_unknown_condition_abstains() -> None:
    found = report("""
        import random

        name = "a"

        @skippable(stash=[name])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash(name, x)
                return x

        if random.random() > 0.5:
            name = "b"
    """)
    assert [(line, code) for line, _, code, _ in found] == [(9, "SKP901")]


def test_past_the_budget_of_executions_the_class_abstains() -> None:
    # Budget.specializations is 64: a class statement run 70 times is not checked call by call.
    found = report("""
        MADE = []
        for i in range(70):
            name = "skip" + str(i)

            @skippable(stash=[name])
            class Stasher(nn.Module):
                def forward(self, x):
                    yield stash(name, x)
                    return x

            MADE.append(Stasher)
    """)
    assert [(line, code) for line, _, code, _ in found] == [(6, "SKP901"), (9, "SKP901")]


def test_a_discarded_pop_of_a_factory_class_across_partitions_is_skp305() -> None:
    found = report("""
        from torchgpipe import GPipe

        def make(name, merge):
            @skippable(pop=[name])
            class Pop(nn.Module):
                def forward(self, x):
                    if merge:
                        skip = yield pop(name)
                        return x + skip
                    yield pop(name)
                    return x

            return Pop


        @skippable(stash=["a"])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash("a", x)
                return x


        drops = GPipe(nn.Sequential(Stash(), nn.ReLU(), make("a", False)()), balance=[2, 1])
        merges = GPipe(nn.Sequential(Stash(), nn.ReLU(), make("a", True)()), balance=[2, 1])
    """)
    assert [(line, col, code) for line, col, code, _ in found] == [(11, 18, "SKP305")]
