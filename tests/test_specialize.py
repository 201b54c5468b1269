"""Classes whose skip names come from a factory's parameters, a loop's variable or a class
attribute: each class statement's executions are checked with their own values (SKP1xx), and a
variable forward reads after it was rebound is SKP117, one finding for the one mistake."""

from __future__ import annotations

import textwrap

from skiplint import engine
from tests.messages import said

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
        (3, 22, "SKP103", said("SKP103", name="b")),
        (6, 18, "SKP101", said("SKP101", name="c")),
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


# -- variables rebound from another scope: `nonlocal` and `global` ---------------------------------

FACTORY = """
    def make(name):
        @skippable(stash=[name])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash(name, x)
                return x

        def rename():
            nonlocal name
            name = "renamed"

{calls}
        return Stash


    Made = make("a")
"""


def _late(var: str, made: str, now: str) -> str:
    return (f"SKP117 forward reads '{var}' when it runs, when it holds '{now}', not the '{made}' it held when "
            f"the class was made: bind the name when the class is made (a class attribute, read as "
            f"self.<attribute>)")


def test_a_factory_variable_rebound_through_nonlocal_is_skp117() -> None:
    found = report(FACTORY.format(calls="        rename()"))
    assert found == [(6, 18, "SKP117", _late("name", "a", "renamed"))]


def test_a_loop_variable_advanced_through_nonlocal_is_skp117_for_the_early_class() -> None:
    found = report("""
        def make():
            made = []
            name = None

            def advance(new):
                nonlocal name
                name = new

            for new in ["a", "b"]:
                advance(new)

                @skippable(pop=[name])
                class Pop(nn.Module):
                    def forward(self, x):
                        skip = yield pop(name)
                        return x + skip

                made.append(Pop)
            return made


        first, second = make()
    """)
    assert found == [(16, 29, "SKP117", _late("name", "a", "b"))]


def test_a_module_variable_rebound_through_global_is_skp117() -> None:
    found = report("""
        NAME = "a"


        @skippable(stash=[NAME])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash(NAME, x)
                return x


        def rename():
            global NAME
            NAME = "renamed"


        rename()
    """)
    assert found == [(8, 14, "SKP117", _late("NAME", "a", "renamed"))]


def test_a_global_that_its_rebinder_reads_first_is_the_module_variable() -> None:
    """The rebinder reads the variable before it rebinds it: the module's value."""
    found = report("""
        NAME = "a"


        @skippable(stash=[NAME])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash(NAME, x)
                return x


        def suffix():
            global NAME
            NAME = NAME + "b"


        suffix()
    """)
    assert found == [(8, 14, "SKP117", _late("NAME", "a", "ab"))]


#: The declaration and the stash of FACTORY, computed at run time.
ABSTAINS = [(3, 21, "SKP901"), (6, 24, "SKP901")]


def _codes(found: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str]]:
    return [(line, col, code) for line, col, code, _ in found]


def test_a_rebinder_called_under_an_unknown_condition_abstains() -> None:
    found = report(FACTORY.format(calls="        if len(dir()):\n            rename()"))
    assert _codes(found) == [(6, 24, "SKP901")]


def test_a_rebinder_called_in_a_loop_the_interpreter_cannot_run_abstains() -> None:
    found = report(FACTORY.format(calls="        while len(dir()):\n            rename()"))
    assert _codes(found) == [(6, 24, "SKP901")]


def test_a_rebinder_called_after_a_possible_return_abstains() -> None:
    found = report(FACTORY.format(calls="        if len(dir()):\n            return Stash\n        rename()"))
    assert _codes(found) == [(6, 24, "SKP901")]


def test_a_rebinder_that_escapes_abstains_for_the_whole_frame() -> None:
    for calls in ("        keep = [rename]", "        Stash.rename = rename", "        later = lambda: rename()",
                  "        [rename() for _ in range(1)]", "        def later():\n            rename()"):
        found = report(FACTORY.format(calls=calls))
        assert _codes(found) == ABSTAINS, calls


def test_a_decorated_or_nested_rebinder_abstains() -> None:
    decorated = FACTORY.replace("        def rename():", "        @staticmethod\n        def rename():")
    assert _codes(report(decorated.format(calls="        rename()"))) == [(3, 21, "SKP901"), (6, 24, "SKP901")]
    nested = FACTORY.replace("        def rename():\n            nonlocal name\n            name = \"renamed\"\n",
                             "        if True:\n            def rename():\n                nonlocal name\n"
                             "                name = \"renamed\"\n")
    assert nested != FACTORY
    assert _codes(report(nested.format(calls="        rename()"))) == ABSTAINS


def test_a_global_rebinder_that_a_builder_calls_or_nobody_calls_abstains() -> None:
    module = """
        NAME = "a"


        @skippable(stash=[NAME])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash(NAME, x)
                return x


        def rename():
            global NAME
            NAME = "renamed"
    """
    assert _codes(report(module)) == [(8, 20, "SKP901")]  # run on its own: when, nobody knows
    assert _codes(report(module + "\n\n        def build():\n            rename()\n")) == [(5, 17, "SKP901"), (8, 20, "SKP901")]


def test_a_class_body_that_rebinds_a_global_abstains() -> None:
    found = report("""
        NAME = "a"


        @skippable(stash=[NAME])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash(NAME, x)
                return x


        class Config:
            global NAME
            NAME = "renamed"
    """)
    assert _codes(found) == [(5, 17, "SKP901"), (8, 20, "SKP901")]


def test_the_interpreter_holds_the_class_facts_themselves() -> None:
    """One model of what a class does (issue 37): a layer the interpreter builds holds the extracted
    facts.SkippableClass itself, not a copy; an execution of a class statement whose decorator reads
    a variable holds the same facts with the names of that moment declared."""
    import libcst as cst

    from skiplint import skippables
    from skiplint.interpret.interpreter import Interpreter
    from skiplint.limits import BUDGET
    from skiplint.positions import Locator

    text = HEADER + textwrap.dedent("""
        @skippable(stash=["skip"])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x


        def make(name):
            @skippable(pop=[name])
            class Pop(nn.Module):
                def forward(self, x):
                    skip = yield pop(name)
                    return x + skip

            return Pop


        model = nn.Sequential(Stash(), make("skip")())
    """)
    module = cst.parse_module(text)
    index = skippables.ModuleIndex(module)
    locator = Locator(module, text)
    facts = skippables.extract(module, "t.py", text, index, locator)
    run = Interpreter(index, facts, locator, BUDGET)
    run.run()
    (_, stash_layer, _), (_, pop_layer, _) = run.built.sequences[0].children
    assert stash_layer.info is facts.skippables[0]
    assert facts.skippables[1].names("pop") is None
    assert pop_layer.info.names("pop") == frozenset({"skip"})
    assert pop_layer.info.forward is facts.skippables[1].forward
