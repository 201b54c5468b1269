"""SKP1xx checks as pure functions of hand-built facts: no parsing involved."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from skiplint import checks
from skiplint.facts import (
    Command, Declaration, Declared, Finding, Forward, Key, ModuleFacts, NonCommandYield, Site,
    SkippableClass,
)


class FakeLocator:
    """Positions handed out by hand: each Site says where it is."""

    def __init__(self) -> None:
        self.where: dict[int, tuple[int, int]] = {}

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.where[id(node)]


LOCATOR = FakeLocator()


def at(line: int, col: int = 0) -> Site:
    node = cst.Name(f"n{line}_{col}")
    LOCATOR.where[id(node)] = (line, col)
    return Site(node, LOCATOR)  # type: ignore[arg-type]


def declared(kind: str, *names: str, line: int = 1) -> Declaration:
    names_ = tuple(Declared(n, at(line, 20 + 10 * i)) for i, n in enumerate(names))
    return Declaration(kind, names_, at(line, 10))  # type: ignore[arg-type]


def unknown(kind: str, line: int = 1) -> Declaration:
    return Declaration(kind, None, at(line, 10))  # type: ignore[arg-type]


def stash(name: Optional[str], line: int, **kw: object) -> Command:
    return Command("stash", name, at(line, 14), at(line, 20), **kw)  # type: ignore[arg-type]


def pop(name: Optional[str], line: int, **kw: object) -> Command:
    return Command("pop", name, at(line, 14), at(line, 18), **kw)  # type: ignore[arg-type]


def forward(*commands: Command, exits: Optional[set[frozenset[Key]]] = None, **kw: object) -> Forward:
    if exits is None:
        exits = {frozenset((c.kind, c.name) for c in commands if c.name is not None and c.yielded)}
    return Forward(at(3, 4), commands, exits=frozenset(exits), **kw)  # type: ignore[arg-type]


def cls(stash_decl: Declaration = Declaration("stash", ()), pop_decl: Declaration = Declaration("pop", ()),
        fwd: Optional[Forward] = None) -> SkippableClass:
    return SkippableClass("Layer", stash_decl, pop_decl, fwd, at(2))


def found(skippable: SkippableClass) -> list[tuple[str, tuple[int, int], dict[str, str]]]:
    return sorted((f.code, f.site.position if f.site else (0, 0), dict(f.args))
                  for f in checks.class_findings(skippable))


def codes(skippable: SkippableClass) -> list[str]:
    return sorted(f.code for f in checks.class_findings(skippable))


# -- SKP101-SKP104 ---------------------------------------------------------------------------------

def test_clean_class_has_no_findings() -> None:
    layer = cls(declared("stash", "a"), declared("pop", "b"), forward(stash("a", 4), pop("b", 5)))
    assert found(layer) == []


def test_undeclared_stash_and_pop_at_the_call() -> None:
    layer = cls(declared("stash", "a"), declared("pop", "b"),
                forward(stash("a", 4), stash("x", 5), pop("b", 6), pop("y", 7)))
    assert found(layer) == [
        ("SKP101", (5, 14), {"name": "x"}),
        ("SKP102", (7, 14), {"name": "y"}),
    ]


def test_typo_reports_both_sides() -> None:
    layer = cls(declared("stash", "skip", line=1), fwd=forward(stash("skp", 4)))
    assert found(layer) == [
        ("SKP101", (4, 14), {"name": "skp"}),
        ("SKP103", (1, 20), {"name": "skip"}),
    ]


def test_unused_declarations_at_the_declared_name() -> None:
    layer = cls(declared("stash", "a", "b"), declared("pop", "c", line=2), forward(stash("a", 4)))
    assert found(layer) == [
        ("SKP103", (1, 30), {"name": "b"}),
        ("SKP104", (2, 20), {"name": "c"}),
    ]


def test_no_forward_no_forward_checks() -> None:
    assert codes(cls(declared("stash", "a"), fwd=None)) == []


def test_unknown_declaration_silences_what_depends_on_it() -> None:
    layer = cls(unknown("stash"), declared("pop", "p"), forward(stash("anything", 4), pop("p", 5)))
    assert found(layer) == [("SKP901", (1, 10), {"what": "the stash= declaration"})]


def test_computed_command_name_silences_the_unused_check_of_its_kind() -> None:
    fwd = forward(stash(None, 4), exits=set(), unknown_kinds=frozenset({"stash"}))
    layer = cls(declared("stash", "a"), fwd=fwd)
    assert found(layer) == [("SKP901", (4, 20), {"what": "the name of this stash()"})]


# -- SKP105, SKP106 --------------------------------------------------------------------------------

def test_both_declared_reported_once_at_the_later_declaration() -> None:
    layer = cls(declared("stash", "x", line=1), declared("pop", "x", line=2), forward())
    assert found(layer) == [("SKP105", (2, 20), {"name": "x"})]


def test_both_declared_earlier_pop_reports_at_the_stash() -> None:
    layer = cls(declared("stash", "x", line=5), declared("pop", "x", line=4), forward(stash("x", 7)))
    assert found(layer) == [("SKP105", (5, 20), {"name": "x"})]


def test_bare_string_stands_alone() -> None:
    decl = Declaration("stash", (Declared("skip", at(1, 17)),), at(1, 17), bare_string="skip")
    layer = cls(decl, fwd=forward(stash("skip", 4)))
    assert found(layer) == [("SKP106", (1, 17), {
        "arg": "stash", "value": "skip", "chars": "'i', 'k', 'p', 's'"})]


# -- SKP107, SKP108, SKP110-SKP112, SKP114, SKP116 -------------------------------------------------

def test_command_not_yielded() -> None:
    layer = cls(declared("stash", "a"), declared("pop", "b"),
                forward(stash("a", 4, yielded=False), pop("b", 5, yielded=False), exits={frozenset()}))
    assert found(layer) == [
        ("SKP107", (4, 14), {"kind": "stash", "name": "'a'", "fix": "'yield stash(...)'"}),
        ("SKP107", (5, 14), {"kind": "pop", "name": "'b'", "fix": "'x = yield pop(...)'"}),
    ]


def test_non_command_yield() -> None:
    fwd = Forward(at(3, 4), (), (NonCommandYield("nothing (a bare yield)", at(6, 8)),), frozenset({frozenset()}))
    assert found(cls(fwd=fwd)) == [("SKP108", (6, 8), {"what": "nothing (a bare yield)"})]


def test_repeated_command_reported_at_the_second_and_not_also_as_conditional() -> None:
    first, second = pop("p", 4), pop("p", 6)
    fwd = forward(first, second, exits={frozenset({("pop", "p")})}, repeats=(second,))
    assert found(cls(pop_decl=declared("pop", "p"), fwd=fwd)) == [
        ("SKP110", (6, 14), {"name": "p", "verb": "popped"}),
    ]


def test_conditional_command_at_forward_naming_the_branch_line() -> None:
    command = stash("a", 5)
    fwd = forward(command, exits={frozenset(), frozenset({("stash", "a")})},
                  branches=((("stash", "a"), at(4, 8)),))
    assert found(cls(declared("stash", "a"), fwd=fwd)) == [
        ("SKP111", (3, 4), {"name": "a", "verb": "stashed", "line": "4"}),
    ]


def test_conditional_command_after_an_early_return_names_the_return_branch() -> None:
    fwd = forward(pop("p", 6), exits={frozenset(), frozenset({("pop", "p")})}, early_exit=at(4, 8))
    assert found(cls(pop_decl=declared("pop", "p"), fwd=fwd)) == [
        ("SKP111", (3, 4), {"name": "p", "verb": "popped", "line": "4"}),
    ]


def test_unknown_paths_abstain_from_skp111() -> None:
    fwd = Forward(at(3, 4), (stash("a", 5),), exits=None)
    assert found(cls(declared("stash", "a"), fwd=fwd)) == []


def test_arity_is_independent_of_the_name() -> None:
    """The latent bug: `foo = yield stash("foo")` in a class declaring only pop=["foo"]."""
    command = stash("foo", 4, arity_problem="is missing the tensor to stash: write stash(name, tensor)")
    layer = cls(pop_decl=declared("pop", "foo", line=1), fwd=forward(command))
    assert found(layer) == [
        ("SKP101", (4, 14), {"name": "foo"}),
        ("SKP104", (1, 20), {"name": "foo"}),
        ("SKP112", (4, 14), {"kind": "stash",
                             "problem": "is missing the tensor to stash: write stash(name, tensor)"}),
    ]


def test_forward_arity() -> None:
    fwd = Forward(at(3, 4), (), exits=frozenset({frozenset()}), required_inputs=2)
    assert found(cls(fwd=fwd)) == [("SKP114", (3, 4), {"cls": "Layer", "count": "2"})]


def test_discarded_pop() -> None:
    layer = cls(pop_decl=declared("pop", "p"), fwd=forward(pop("p", 4, discarded=True)))
    assert found(layer) == [("SKP116", (4, 14), {"name": "p"})]


# -- module level ----------------------------------------------------------------------------------

def test_module_findings_are_the_recorded_ones_then_each_class() -> None:
    recorded = Finding("SKP401", (("module", "torch.distributed.pipeline.sync"),), at(1))
    layer = cls(declared("stash", "a"), fwd=forward())
    facts = ModuleFacts("m.py", (layer,), (recorded,))
    assert [f.code for f in checks.module_findings(facts)] == ["SKP401", "SKP103"]


def test_every_finding_formats_with_its_rule_template() -> None:
    from skiplint import rules

    layer = cls(declared("stash", "a", "b"), declared("pop", "a", "c"),
                forward(stash("a", 4), stash("z", 5, yielded=False), pop("q", 6, discarded=True,
                                                                         arity_problem="takes x")))
    for finding in checks.class_findings(layer):
        message = rules.RULES[finding.code].format(**dict(finding.args))
        assert message.startswith(finding.code + " ")
