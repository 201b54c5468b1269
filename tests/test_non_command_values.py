"""SKP108 on yielded values whose kind is known from the forward itself (issue 14 item 1): the
forward's input, values computed from it, torch functions and torch.nn layers stored by __init__
are not commands; a name bound to a command or to anything unknown is not reported."""

from __future__ import annotations

import textwrap

import pytest

from skiplint import engine

HEADER = ("import torch\nimport torch.nn.functional as F\nfrom torch import nn\n"
          "from torchgpipe.skip import pop, skippable, stash\n\n\n")


def findings(body: str) -> list[tuple[int, int, str]]:
    source = HEADER + textwrap.dedent(body)
    result = engine.check_text(source, "m.py")
    return [(d.line - 6, d.col, d.message) for d in result.diagnostics]


def skp108(what: str) -> str:
    return f"SKP108 forward of a @skippable class yields {what}, which is not a stash/pop command"


def test_yielding_the_input_is_reported_at_the_yield() -> None:
    assert findings('''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                yield stash("a", x)
                yield x
                return x
    ''') == [(5, 8, skp108("'x'"))]


@pytest.mark.parametrize("expression", ["x.relu()", "x.view(4, -1).t()", "F.relu(x)", "torch.cat([x, x])",
                                        "x[0]", "x.T", "self.lin(x)", "h"])
def test_values_computed_from_the_input_are_reported(expression: str) -> None:
    assert findings(f'''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)

            def forward(self, x):
                h = x * 2
                h = h.relu()
                yield stash("a", x)
                yield {expression}
                return x
    ''') == [(11, 8, skp108(repr(expression).replace('"', "'")))]


@pytest.mark.parametrize("setup, value", [
    ("cmd = stash('a', x)", "cmd"),
    ("cmd = self.make(x)", "cmd"),
    ("cmd = make(x)", "cmd"),
    ("", "self.body(x)"),
    ("", "self.other(x)"),
    ("", "GLOBAL"),
    ("for cmd in [x]: pass", "cmd"),
    ("x = make(x)", "x"),
    ("", "scale"),
    ("", "rest"),
    ("popped = yield pop('b')", "popped"),
])
def test_names_bound_to_commands_or_unknown_values_are_not_reported(setup: str, value: str) -> None:
    found = findings(f'''\
        def make(x):
            return stash("a", x)


        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential()
                self.other = make

            def forward(self, x, scale=1.0, *rest):
                {setup or "pass"}
                yield {value}
                return x
    ''')
    assert [f for f in found if f[2].startswith("SKP108")] == []


def test_a_layer_reassigned_outside_init_is_unknown() -> None:
    assert findings('''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(8, 8)

            def replace(self, fn):
                self.lin = fn

            def forward(self, x):
                yield stash("a", x)
                yield self.lin(x)
                return x
    ''') == []
