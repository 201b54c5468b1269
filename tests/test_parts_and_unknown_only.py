"""A Sequential spread into a larger one is checked as part of it, not alone; a layer isolated
with `only=` names that cannot be known hides only its own names, the rest is still checked."""

from __future__ import annotations

import textwrap

from skiplint import engine

SOURCE = textwrap.dedent('''\
    import torch.nn as nn
    from torchgpipe import GPipe
    from torchgpipe.skip import Namespace, skippable, stash, pop


    @skippable(stash=["a"])
    class S(nn.Module):
        def forward(self, x):
            yield stash("a", x)
            return x


    @skippable(pop=["a"])
    class P(nn.Module):
        def forward(self, x):
            a = yield pop("a")
            return x + a


    @skippable(pop=["b"])
    class PB(nn.Module):
        def forward(self, x):
            b = yield pop("b")
            return x + b

''')
OFFSET = SOURCE.count("\n")


def found(body: str) -> list[tuple[int, int, str]]:
    result = engine.check_text(SOURCE + textwrap.dedent(body), "t.py", engine.Selection(extend_select=("SKP302",)))
    return [(d.line - OFFSET, d.col + 1, d.message) for d in result.diagnostics]


def test_stages_spread_into_one_pipe_are_one_model() -> None:
    assert found("""\
        s0 = nn.Sequential(S(), nn.ReLU())
        s1 = nn.Sequential(nn.ReLU(), P())
        model = GPipe(nn.Sequential(*s0, *s1), balance=[2, 2])
    """) == [(3, 9, "SKP302 skip 'a' crosses from partition 0 (layer 0) to partition 1 (layer 3)")]


def test_stages_joined_through_lists_are_one_model() -> None:
    assert found("""\
        s0 = nn.Sequential(S())
        s1 = nn.Sequential(P())
        layers = list(s0)
        layers.extend(s1)
        model = GPipe(nn.Sequential(*layers), balance=[1, 1])
    """) == [(5, 9, "SKP302 skip 'a' crosses from partition 0 (layer 0) to partition 1 (layer 1)")]


def test_a_part_in_the_wrong_order_is_reported_in_the_whole() -> None:
    assert found("""\
        s1 = nn.Sequential(P())
        s0 = nn.Sequential(S())
        model = GPipe(nn.Sequential(*s1, *s0), balance=[1, 1])
    """) == [
        (1, 20, "SKP201 layer 0 (P) pops 'a' but no earlier layer stashes it"),
        (2, 20, "SKP202 layer 1 (S) stashes 'a' but no later layer pops it"),
    ]


def test_a_part_also_given_to_a_pipe_is_checked_alone_too() -> None:
    assert found("""\
        s1 = nn.Sequential(P())
        alone = GPipe(s1, balance=[1])
        model = GPipe(nn.Sequential(*nn.Sequential(S()), *s1), balance=[2])
    """) == [(1, 20, "SKP201 layer 0 (P) pops 'a' but no earlier layer stashes it")]


def test_iterating_a_model_does_not_make_it_a_part() -> None:
    assert found("""\
        model = nn.Sequential(P())
        for layer in model:
            pass
        for index, layer in enumerate(model):
            pass
    """) == [(1, 23, "SKP201 layer 0 (P) pops 'a' but no earlier layer stashes it")]


def test_isolate_with_unknown_only_names_keeps_checking_the_rest(  # issue 14 item 5
) -> None:
    assert found("""\
        def build(names):
            ns = Namespace()
            return nn.Sequential(S().isolate(ns, only=names), P(), PB())


        model = GPipe(build(names_from_config()), balance=[2, 1])
    """) == [(3, 60, "SKP201 layer 2 (PB) pops 'b' but no earlier layer stashes it")]


def test_isolate_with_unknown_only_names_says_nothing_about_its_names() -> None:
    assert found("""\
        def build(names):
            ns = Namespace()
            return nn.Sequential(S().isolate(ns, only=names), P(), P())


        model = GPipe(build(names_from_config()), balance=[2, 1])
    """) == []
