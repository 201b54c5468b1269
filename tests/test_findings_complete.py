"""Every distinct skip mistake is its own finding (issue: findings swallowed by de-duplication).

A layer that stashes or pops two names gets a finding per name; a block built twice (a helper
called twice) is still one mistake at one place, reported once.
"""

from __future__ import annotations

import textwrap

from skiplint import engine

SOURCE = textwrap.dedent('''\
    import torch.nn as nn
    from torchgpipe import GPipe
    from torchgpipe.skip import Namespace, skippable, stash, pop


    @skippable(stash=["a", "b"])
    class S(nn.Module):
        def forward(self, x):
            yield stash("a", x)
            yield stash("b", x)
            return x


    @skippable(pop=["a", "b"])
    class P(nn.Module):
        def forward(self, x):
            a = yield pop("a")
            b = yield pop("b")
            return x + a + b

''')


def messages(body: str) -> list[str]:
    result = engine.check_text(SOURCE + textwrap.dedent(body), "t.py")
    return [f"{d.line}:{d.col + 1}: {d.message}" for d in result.diagnostics]


def test_two_skips_of_one_layer_are_two_findings() -> None:
    assert messages("""\
        model = GPipe(nn.Sequential(P(), S()), balance=[1, 1])
    """) == [
        "21:29: SKP201 layer 0 (P) pops 'a' but no earlier layer stashes it",
        "21:29: SKP201 layer 0 (P) pops 'b' but no earlier layer stashes it",
        "21:34: SKP202 layer 1 (S) stashes 'a' but no later layer pops it",
        "21:34: SKP202 layer 1 (S) stashes 'b' but no later layer pops it",
    ]


def test_two_restashes_of_one_layer_are_two_findings() -> None:
    assert messages("""\
        model = GPipe(nn.Sequential(S(), S(), P(), P()), balance=[2, 2])
    """) == [
        "21:34: SKP203 layer 1 (S) stashes 'a' again (first stashed by layer 0 (S)); isolate it "
        "with a Namespace",
        "21:34: SKP203 layer 1 (S) stashes 'b' again (first stashed by layer 0 (S)); isolate it "
        "with a Namespace",
        "21:44: SKP204 layer 3 (P) pops 'a' again (first popped by layer 2 (P)); isolate it "
        "with a Namespace",
        "21:44: SKP204 layer 3 (P) pops 'b' again (first popped by layer 2 (P)); isolate it "
        "with a Namespace",
    ]


def test_a_block_built_twice_is_one_mistake_per_skip() -> None:
    assert messages("""\
        def block():
            ns = Namespace()
            return nn.Sequential(P().isolate(ns), S().isolate(ns))


        first = GPipe(block(), balance=[1, 1])
        second = GPipe(block(), balance=[1, 1])
    """) == [
        "23:26: SKP201 layer 0 (P) pops 'a' in namespace ns but no earlier layer stashes it",
        "23:26: SKP201 layer 0 (P) pops 'b' in namespace ns but no earlier layer stashes it",
        "23:43: SKP202 layer 1 (S) stashes 'a' in namespace ns but no later layer pops it",
        "23:43: SKP202 layer 1 (S) stashes 'b' in namespace ns but no later layer pops it",
    ]
