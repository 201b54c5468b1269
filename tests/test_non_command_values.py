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


# The walk decides by the value a name holds where it is yielded (flow-sensitively), not by every
# binding of the name in the function (issue 37 item 3): these were not reported before.
@pytest.mark.parametrize("setup, value", [
    ("h = make(x)\nh = x * 2", "h"),  # the name is rebound to a tensor before the yield
    ("h = self.double(x)", "h"),  # a method of the module run with the input
    ("a, b = x * 2, x * 3", "a"),
    ("h = x * 2 if cond else x * 3", "h"),
    ("h = x * 2\nh[0] = 1", "h"),  # still the same tensor (as before)
])
def test_the_value_a_name_holds_at_the_yield_decides(setup: str, value: str) -> None:
    assert findings(f'''\
        def make(x):
            return stash("a", x)


        @skippable(stash=["a"])
        class L(nn.Module):
            def double(self, t):
                return t * 2

            def forward(self, x, cond=False):
                yield stash("a", x)
{textwrap.indent(setup, " " * 16)}
                yield {value}
                return x
    ''') == [(13 + setup.count("\n"), 8, skp108(f"'{value}'"))]


@pytest.mark.parametrize("call", ["self.helper(x)", "self.helper(t=x)"])
def test_a_helper_delegated_to_yields_the_input_it_is_given(call: str) -> None:
    assert findings(f'''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def helper(self, t):
                yield stash("a", t)
                yield t

            def forward(self, x):
                yield from {call}
                return x
    ''') == [(5, 8, skp108("'t'"))]


@pytest.mark.parametrize("setup, value", [
    # a name the loop rebinds holds, on the next iteration, what the previous one bound
    ("h = x * 2\nfor i in range(3):\n    yield h\n    h = self.cmd(x)", "None"),
    ("h = x * 2\nwhile cond:\n    yield h\n    h = make(x)", "None"),
    ("h = x * 2\nfor i in range(3):\n    yield h\n    with make(x) as h:\n        pass", "None"),
    ("h = x * 2\nfor i in range(3):\n    yield h\n    import os as h", "None"),
    ("h = x * 2\nfor i in range(3):\n    yield h\n"
     "    def f():\n        nonlocal h\n        h = make(x)\n    f()", "None"),
    ("for i in range(2):\n    yield x\n    x = self.cmd(x)", "None"),
    ("cmd = x * 2\nfor i in range(2):\n    yield cmd\n    cmd = stash('a', x)", "None"),
    # a method or function returning a command
    ("h = self.cmd(x)", "h"),
    ("h = make(x)", "h"),
    # a name bound by `with ... as`, a walrus, an import, except ... as
    ("with make(x) as x:\n    pass", "x"),
    ("h = x * 2\nif (h := make(x)):\n    pass", "h"),
    ("h = x * 2\nimport os as h", "h"),
    ("try:\n    pass\nexcept Exception as x:\n    pass", "x"),
    # parameters other than the input
    ("pass", "cond"),
    ("pass", "kw"),
    ("pass", "rest"),
    ("pass", "more"),
    # bound to a command before the statement that raised
    ("h = x * 2\ntry:\n    h = make(x)\n    foo()\n    h = x * 3\nexcept Exception:\n    pass", "h"),
    # bound to a command on a branch the walk decides away (it runs in eval mode)
    ("h = x * 2\nif not self.training:\n    h = make(x)", "h"),
    ("h = x * 2 if self.training else make(x)", "h"),
    ("p = yield pop('b')\nh = x * 2\nif p is None:\n    h = make(x)", "h"),
    # set by a method: the walk does not follow what a call stores on self
    ("self.h = x * 2\nself.reset()", "self.h"),
    # an item of a tuple holding a command; a name rebound by an assignment the dataflow does not follow
    ("t = (x, make(x))", "t[1]"),
    ("h = x * 2\nh, *rest = make(x)", "h"),
    ("h = x * 2\nh, g = (make(x), x, x)", "h"),
])
def test_no_report_where_the_value_may_be_a_command(setup: str, value: str) -> None:
    found = findings(f'''\
        def make(x):
            return stash("a", x)


        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def cmd(self, x):
                return stash("a", x)

            def reset(self):
                self.h = stash("a", None)

            def forward(self, x, cond=False, *rest, kw=None, **more):
{textwrap.indent(setup, " " * 16)}
                yield {value}
                return x
    ''')
    assert [f for f in found if f[2].startswith("SKP108") and f[2] != skp108("None")] == []


@pytest.mark.parametrize("body", [
    # where the walk's dataflow does not go: a match, a finally after a return, a helper delegated
    # to with `**kwargs`; it was reported before (the name's only binding is arithmetic): now
    # nothing is said there
    "match x:\n    case _:\n        h = x * 2\n        yield h",
    "try:\n    yield stash('a', x)\n    return x\nfinally:\n    yield x",
    "yield from self.helper(**{'t': x})",
])
def test_no_report_where_the_walk_has_no_value(body: str) -> None:
    found = findings(f'''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def helper(self, t):
                h = t * 2
                yield h

            def forward(self, x):
{textwrap.indent(body, " " * 16)}
                return x
    ''')
    assert [f for f in found if f[2].startswith("SKP108")] == []


def test_a_conditional_expression_the_walk_decides_reports_both_branches() -> None:
    # the branch that runs only in eval mode is walked for what it yields, too
    assert findings('''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                h = x * 2
                (yield h) if self.training else (yield h)
                return x
    ''') == [(1, 18, "SKP103 'a' is declared in stash=[...] but no path of forward stashes it"),
            (5, 9, skp108("'h'")), (5, 41, skp108("'h'"))]


def test_a_branch_that_runs_only_in_eval_mode_is_walked_for_what_it_yields() -> None:
    assert findings('''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                h = x * 2
                if self.training:
                    yield stash("a", x)
                else:
                    yield h
                return x
    ''') == [(3, 4, "SKP111 'a' is stashed on some paths through forward but not all (line 11)"),
            (8, 12, skp108("'h'"))]


def test_a_name_bound_in_both_branches_of_a_decided_if_is_known_by_both() -> None:
    body = '''\
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                if self.training:
                    h = x * 2
                else:
                    h = {other}
                yield stash("a", x)
                yield h
                return x
    '''
    assert [f for f in findings(body.format(other="x * 3")) if f[2].startswith("SKP108")] == [(9, 8, skp108("'h'"))]
    assert [f for f in findings(body.format(other="make(x)")) if f[2].startswith("SKP108")] == []
    early = body.format(other="x * 3").replace("h = x * 3", "return x")
    assert [f for f in findings(early) if f[2].startswith("SKP108")] == [(9, 8, skp108("'h'"))]


def test_a_name_rebound_under_a_context_manager_that_may_swallow_is_not_known() -> None:
    # contextlib.suppress may swallow what check() raises before h is rebound: h may be make()'s
    body = '''\
        import contextlib

        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                h = make(x)
                with {manager}:
                    check(x)
                    h = x * 2
                yield stash("a", x)
                yield h
                return x
    '''
    assert [f for f in findings(body.format(manager="contextlib.suppress(ValueError)"))
            if f[2].startswith("SKP108")] == []
    assert [f for f in findings(body.format(manager="torch.no_grad()")) if f[2].startswith("SKP108")] == [
        (11, 8, skp108("'h'"))]
