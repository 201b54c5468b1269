"""Facts extracted from source: declarations, commands and the paths through forward."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from skiplint import engine
from skiplint.facts import SkippableClass
from skiplint.skippables import extract

HEADER = "from torch import nn\nfrom torchgpipe.skip import skippable, stash, pop\n"


def only_class(body: str, header: str = HEADER) -> SkippableClass:
    source = header + textwrap.dedent(body)
    facts = extract(cst.parse_module(source), "m.py", source)
    assert len(facts.skippables) == 1
    return facts.skippables[0]


def exits(cls: SkippableClass) -> set[frozenset[tuple[str, str]]] | None:
    assert cls.forward is not None
    return None if cls.forward.exits is None else set(cls.forward.exits)


def test_declarations_from_literals_constants_and_concatenation() -> None:
    cls = only_class('''
        NAMES = ("a",) + ("b",)
        POP = "c"

        @skippable(stash=NAMES, pop=[POP])
        class L(nn.Module):
            def forward(self, x):
                return x
    ''')
    assert [d.name for d in cls.stash.names or ()] == ["a", "b"]
    assert [d.name for d in cls.pop.names or ()] == ["c"]
    assert cls.stash.bare_string is None


def test_bare_string_declares_the_string_and_remembers_it() -> None:
    cls = only_class('''
        @skippable(pop="skip")
        class L(nn.Module):
            def forward(self, x):
                y = yield pop("skip")
                return y
    ''')
    assert cls.pop.bare_string == "skip"
    assert cls.pop.name_set == {"skip"}


@pytest.mark.parametrize("expr", ["[n for n in 'ab']", "names()", "NAMES", "[f'x{i}']", "['a', name]"])
def test_computed_declarations_are_unknown(expr: str) -> None:
    cls = only_class(f'''
        @skippable(stash={expr})
        class L(nn.Module):
            def forward(self, x):
                return x
    ''')
    assert not cls.stash.known


def test_straight_line_forward_has_one_exit_with_every_command() -> None:
    cls = only_class('''
        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def forward(self, x):
                yield stash("a", x)
                b = yield pop("b")
                return x + b
    ''')
    assert exits(cls) == {frozenset({("stash", "a"), ("pop", "b")})}
    assert cls.forward is not None and cls.forward.repeats == ()


def test_if_without_else_gives_two_exits_and_names_the_if() -> None:
    cls = only_class('''
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    yield stash("a", x)
                return x
    ''')
    assert exits(cls) == {frozenset(), frozenset({("stash", "a")})}
    assert cls.forward is not None
    (key, site), = cls.forward.branches
    assert key == ("stash", "a") and site.position == (7, 8)


def test_raise_paths_are_not_exits_and_early_returns_are() -> None:
    cls = only_class('''
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                if x is None:
                    raise ValueError
                if x.dim() == 0:
                    return x
                yield stash("a", x)
                return x
    ''')
    assert exits(cls) == {frozenset(), frozenset({("stash", "a")})}
    assert cls.forward is not None and cls.forward.early_exit is not None
    assert cls.forward.early_exit.position == (9, 8)


@pytest.mark.parametrize("loop, expected_exits, repeats", [
    ("for i in range(1):", {frozenset({("stash", "a")})}, 0),
    ("for i in range(0):", {frozenset()}, 0),
    ("for i in reversed(range(2)):", {frozenset({("stash", "a")})}, 1),
    ("for i in xs:", {frozenset(), frozenset({("stash", "a")})}, 1),
    ("while x.sum() > 0:", {frozenset(), frozenset({("stash", "a")})}, 1),
])
def test_loops(loop: str, expected_exits: set[frozenset[tuple[str, str]]], repeats: int) -> None:
    cls = only_class(f'''
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x, xs=()):
                {loop}
                    yield stash("a", x)
                return x
    ''')
    assert exits(cls) == expected_exits
    assert cls.forward is not None and len(cls.forward.repeats) == repeats


def test_while_true_with_break_runs_once() -> None:
    cls = only_class('''
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                while True:
                    yield stash("a", x)
                    break
                return x
    ''')
    assert exits(cls) == {frozenset({("stash", "a")})}
    assert cls.forward is not None and cls.forward.repeats == ()


def test_try_handlers_start_from_any_point_of_the_body_and_finally_always_runs() -> None:
    cls = only_class('''
        @skippable(stash=["a", "b"])
        class L(nn.Module):
            def forward(self, x):
                try:
                    yield stash("a", x)
                    x = x.relu()
                except RuntimeError:
                    pass
                finally:
                    yield stash("b", x)
                return x
    ''')
    assert exits(cls) == {frozenset({("stash", "a"), ("stash", "b")}), frozenset({("stash", "b")})}


def test_yield_from_a_helper_method_is_followed() -> None:
    cls = only_class('''
        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def forward(self, x):
                b = yield from self.merge(x)
                return b

            def merge(self, x):
                yield stash("a", x)
                b = yield pop("b")
                return x + b
    ''')
    assert exits(cls) == {frozenset({("stash", "a"), ("pop", "b")})}
    assert cls.forward is not None
    assert {(c.kind, c.name) for c in cls.forward.commands} == {("stash", "a"), ("pop", "b")}


def test_yield_from_a_module_function_is_followed() -> None:
    cls = only_class('''
        def merge(x):
            yield stash("a", x)
            b = yield pop("b")
            return x + b

        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def forward(self, x):
                merge = x
                b = yield from merge(x)
                return b
    ''')
    assert cls.forward is not None and "stash" in cls.forward.unknown_kinds  # a local `merge`: not the function
    cls = only_class('''
        def merge(x):
            yield stash("a", x)
            b = yield pop("b")
            return x + b

        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def forward(self, x):
                return (yield from merge(x))
    ''')
    assert exits(cls) == {frozenset({("stash", "a"), ("pop", "b")})}
    assert cls.forward is not None and not cls.forward.unknown_kinds
    assert {(c.kind, c.name) for c in cls.forward.commands} == {("stash", "a"), ("pop", "b")}


@pytest.mark.parametrize("line", [
    "yield from helper(x)",          # a function bound nowhere in the module: not followed
    "yield self.make(x)",            # may build a command
    "cmd = make(x); yield cmd",
    "yield stash(name, x)",          # computed name
])
def test_unknowable_forwards_abstain(line: str) -> None:
    cls = only_class(f'''
        name = compute()

        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                {line}
                return x
    ''')
    assert cls.forward is not None
    assert "stash" in cls.forward.unknown_kinds


def test_unyielded_commands_are_recorded_but_do_nothing_on_any_path() -> None:
    cls = only_class('''
        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def forward(self, x):
                stash("a", x)
                b = pop("b")
                return x + b
    ''')
    assert cls.forward is not None
    assert [(c.kind, c.name, c.yielded) for c in cls.forward.commands] == [
        ("stash", "a", False), ("pop", "b", False)]
    assert exits(cls) == {frozenset()}


def test_a_command_assigned_then_yielded_counts_as_yielded() -> None:
    cls = only_class('''
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                cmd = stash("a", x)
                yield cmd
                return x
    ''')
    assert cls.forward is not None
    assert [(c.name, c.yielded) for c in cls.forward.commands] == [("a", True)]
    assert cls.forward.unknown_kinds == frozenset()


def test_arity_and_discarded_pop() -> None:
    cls = only_class('''
        @skippable(stash=["a"], pop=["b"])
        class L(nn.Module):
            def forward(self, x):
                yield stash("a")
                yield pop("b", x)
                yield pop(name="b")
                return x
    ''')
    assert cls.forward is not None
    assert [(c.kind, c.arity_problem, c.discarded) for c in cls.forward.commands] == [
        ("stash", "is missing the tensor to stash: write stash(name, tensor)", False),
        ("pop", "takes only the skip name, but 2 arguments were given", True),
        ("pop", None, True),
    ]


def test_too_many_paths_abstains() -> None:
    branches = "\n".join(f"        if c{i}:\n            yield stash('n{i}', x)" for i in range(10))
    source = HEADER + "@skippable(stash=[%s])\nclass L(nn.Module):\n    def forward(self, x):\n%s\n        return x\n" % (
        ", ".join(f"'n{i}'" for i in range(10)), branches)
    facts = extract(cst.parse_module(source), "m.py", source)
    forward = facts.skippables[0].forward
    assert forward is not None and forward.exits is None


def test_skippable_call_form_and_nested_classes() -> None:
    source = HEADER + textwrap.dedent('''
        def build():
            class Block(nn.Module):
                def forward(self, x):
                    yield stash("a", x)
                    return x
            Block = skippable(stash=["a"])(Block)
            return Block()

        if __name__ == "__main__":
            @skippable(pop=["a"])
            class Tail(nn.Module):
                def forward(self, x):
                    a = yield pop("a")
                    return a
    ''')
    facts = extract(cst.parse_module(source), "m.py", source)
    assert [(c.name, sorted(c.stash.name_set), sorted(c.pop.name_set)) for c in facts.skippables] == [
        ("Block", ["a"], []), ("Tail", [], ["a"])]
    assert (facts.findings, facts.misuses, facts.undecorated_yields) == ((), (), ())


def test_extraction_records_facts_and_makes_no_finding() -> None:
    """What is wrong outside a skippable class is recorded as facts (the rules make the findings)."""
    source = HEADER + textwrap.dedent('''
        from torch.distributed.pipeline.sync.skip import Namespace

        @skippable
        class Bare(nn.Module):
            pass

        @skippable(stash=["a"])
        def function(x):
            return x

        class Plain(nn.Module):
            def forward(self, x):
                yield pop("a")
                return x

        @skippable(stash=["a"])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash("a", x)
                return x

        layer = Stash().isolate(Namespace(), only=["a", "b"])
    ''')
    module = cst.parse_module(source)
    facts = extract(module, "m.py", source)
    assert facts.findings == ()
    assert [(m.function, m.site.position if m.site else None) for m in facts.misuses] == [
        (None, (6, 0)), ("function", (10, 0))]
    assert [(y.cls, y.kind, y.site.position if y.site else None) for y in facts.undecorated_yields] == [
        ("Plain", "pop", (16, 8))]
    assert [(r.module, r.brings) for r in facts.removed_imports] == [
        ("torch.distributed.pipeline.sync.skip", ("skip",))]
    assert [(n.name, n.cls) for n in facts.isolate_names] == [("b", "Stash")]


@pytest.mark.parametrize("dead", ["if False: return x", "if 0: return x", "while False: return x"])
def test_constant_false_branches_never_run(dead: str) -> None:
    cls = only_class(f'''
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                {dead}
                yield stash("a", x)
                return x
    ''')
    assert exits(cls) == {frozenset({("stash", "a")})}


def test_constant_true_branch_always_runs() -> None:
    cls = only_class('''
        @skippable(stash=["a"])
        class L(nn.Module):
            def forward(self, x):
                if True:
                    yield stash("a", x)
                return x
    ''')
    assert exits(cls) == {frozenset({("stash", "a")})}


@pytest.mark.parametrize("wrap", [
    "make = lambda: skippable(stash=['skip'])(Impl)",
    "def make():\n    return lambda: skippable(stash=['skip'])(Impl)",
    "import functools\nmake = functools.partial(skippable(stash=['skip']), Impl)",
    "from functools import partial\nmake = partial(skippable(stash=['skip']), Impl)",
])
def test_wrapping_through_a_lambda_or_partial_is_followed(wrap: str) -> None:
    body = "class Impl(nn.Module):\n    def forward(self, x, y):\n        yield stash('skip', x)\n" \
           "        return x\n\n" + wrap + "\n"
    facts = extract(cst.parse_module(HEADER + body), "t.py")
    assert [(c.name, sorted(c.stash.name_set)) for c in facts.skippables] == [("Impl", ["skip"])]
    result = engine.check_text(HEADER + body, "t.py", engine.Selection())
    assert [(d.code, d.line - HEADER.count("\n"), d.col) for d in result.diagnostics] == [("SKP114", 2, 4)]


def test_concrete_libcst_node_classes_have_no_subclasses() -> None:
    """The hot walks (skippables, the interpreter, syntax.SCOPE_TYPES) compare a node's type by
    identity, which equals isinstance only while no concrete node class has a subclass."""
    import inspect

    concrete = [cls for cls in vars(cst).values()
                if inspect.isclass(cls) and issubclass(cls, cst.CSTNode) and not inspect.isabstract(cls)
                and not cls.__name__.startswith("Base")]
    assert len(concrete) > 100
    assert [cls.__name__ for cls in concrete if cls.__subclasses__()] == []


def test_the_extractor_and_the_dataflow_are_rooms_of_one_purpose() -> None:
    """No module of the extractor, the dataflow or the interpreter is over 600 lines, and the
    interpreter's shared state is a few named parts (issue 39)."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "skiplint"
    assert not (package / "skippables.py").exists() and not (package / "gradflow.py").exists()
    for folder in ("skippables", "gradflow", "interpret"):
        for path in sorted((package / folder).glob("*.py")):
            assert len(path.read_text(encoding="utf-8").splitlines()) <= 600, path.name
    core = ast.parse((package / "interpret" / "core.py").read_text(encoding="utf-8"))
    init = next(node for node in ast.walk(core) if isinstance(node, ast.FunctionDef) and node.name == "__init__"
                and any(isinstance(c, ast.ClassDef) and c.name == "Core" and node in c.body for c in ast.walk(core)))
    stored = {node.attr for node in ast.walk(init) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id == "self"}
    assert len(stored) <= 17, sorted(stored)
