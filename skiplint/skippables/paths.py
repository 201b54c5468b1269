"""The paths through a forward: which commands each path that leaves it performs, the commands
repeated on one path, and the branches that make a command conditional."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import libcst as cst

from skiplint import syntax
from skiplint.facts import Command, Key, Locator
from skiplint.imports import Scope
from skiplint.limits import MAX_STATES
from skiplint.skippables.commands import Commands, Event
from skiplint.skippables.index import ClassInfo, ModuleIndex
from skiplint.skippables.names import NameResolver


class _TooManyPaths(Exception):
    pass


@dataclass
class _Paths:
    normal: set[frozenset[Key]] = field(default_factory=set)
    returns: set[frozenset[Key]] = field(default_factory=set)
    breaks: set[frozenset[Key]] = field(default_factory=set)
    continues: set[frozenset[Key]] = field(default_factory=set)


_BRANCHING = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


class _PathWalk:
    """The paths through a forward: the set of commands run so far on each path, statement by
    statement (branches, loops, try, early exits), and what the paths say: the commands some path
    repeats, the branch each command is first run under, the early returns."""

    def __init__(self, index: ModuleIndex, reader: Commands) -> None:
        self.index = index
        self.reader = reader
        self.repeats: dict[int, Command] = {}
        self.first_branch: dict[Key, cst.CSTNode] = {}
        self.early_exits: list[cst.CSTNode] = []
        self._stack: list[cst.CSTNode] = []
        self._observers: list[set[frozenset[Key]]] = []

    def run(self, func: cst.FunctionDef) -> frozenset[frozenset[Key]]:
        """The commands run on each path out of `func` (raises _TooManyPaths past MAX_STATES)."""
        out = self._block(syntax.statements(func.body), {frozenset()}, self.index.scopes[id(func)])
        return frozenset(out.normal | out.returns)

    # -- statements ------------------------------------------------------------------------
    def _block(self, stmts: Sequence[cst.CSTNode], states: set[frozenset[Key]], scope: Scope) -> _Paths:
        out = _Paths(normal=set(states))
        for stmt in stmts:
            if not out.normal:
                break  # the rest is unreachable
            for observer in self._observers:
                observer.update(out.normal)
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if not out.normal:
                        break
                    _continue_with(out, self._small(small, out.normal, scope))
            elif isinstance(stmt, cst.BaseSmallStatement):
                _continue_with(out, self._small(stmt, out.normal, scope))
            elif isinstance(stmt, cst.BaseCompoundStatement):
                self._stack.append(stmt)
                try:
                    _continue_with(out, self._compound(stmt, out.normal, scope))
                finally:
                    self._stack.pop()
            self._check_size(out.normal)
        return out

    def _small(self, small: cst.BaseSmallStatement, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        events = self.reader.events(small, scope)
        states = self.apply(events, states, scope)
        if type(small) is cst.Return:
            if self._stack:
                self.early_exits.append(self._stack[0])
            return _Paths(returns=states)
        if type(small) is cst.Raise:
            return _Paths()
        if type(small) is cst.Break:
            return _Paths(breaks=states)
        if type(small) is cst.Continue:
            return _Paths(continues=states)
        return _Paths(normal=states)

    def _compound(self, stmt: cst.BaseCompoundStatement, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        if isinstance(stmt, cst.If):
            states = self.apply(self.reader.events(stmt.test, scope), states, scope)
            constant = _constant_truth(stmt.test)
            if constant is True:  # `if True:` / `if 1:`: the other branch never runs
                return self._suite(stmt.body, states, scope)
            out = self._suite(stmt.body, states, scope) if constant is None else _Paths()
            if isinstance(stmt.orelse, cst.If):
                other = self._compound(stmt.orelse, states, scope)
            elif isinstance(stmt.orelse, cst.Else):
                other = self._suite(stmt.orelse.body, states, scope)
            else:
                other = _Paths(normal=set(states))
            return _merge(out, other)
        if isinstance(stmt, (cst.For, cst.While)):
            return self._loop(stmt, states, scope)
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                states = self.apply(self.reader.events(item.item, scope), states, scope)
            return self._suite(stmt.body, states, scope)
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            return self._try(stmt, states, scope)
        if isinstance(stmt, cst.Match):
            states = self.apply(self.reader.events(stmt.subject, scope), states, scope)
            result = _Paths()
            exhaustive = False
            for case in stmt.cases:
                result = _merge(result, self._suite(case.body, states, scope))
                pattern = case.pattern
                if case.guard is None and isinstance(pattern, cst.MatchAs) and pattern.pattern is None:
                    exhaustive = True
            if not exhaustive:
                result.normal |= states
            return result
        # nested def/class: defining it runs nothing of interest
        return _Paths(normal=set(states))

    def _suite(self, suite: cst.BaseSuite, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        return self._block(syntax.statements(suite), states, scope)

    def _loop(self, stmt: cst.For | cst.While, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        min_iters, max_iters, infinite = 0, None, False
        if isinstance(stmt, cst.For):
            states = self.apply(self.reader.events(stmt.iter, scope), states, scope)
            count = _constant_range_length(stmt.iter)
            if count is not None:
                min_iters, max_iters = min(count, 2), count
        else:
            states = self.apply(self.reader.events(stmt.test, scope), states, scope)
            truth = _constant_truth(stmt.test)
            if truth is True:
                infinite = True
            elif truth is False:
                max_iters = 0
        result = _Paths()
        finished: set[frozenset[Key]] = set() if (infinite or min_iters > 0) else set(states)
        if max_iters == 0:
            finished = set(states)
        frontier = set(states)
        seen = set(states)
        iteration = 0
        while frontier and max_iters != 0:
            iteration += 1
            out = self._suite(stmt.body, frontier, scope)
            result.returns |= out.returns
            result.normal |= out.breaks
            head = out.normal | out.continues
            if not infinite and iteration >= min_iters:
                finished |= head
            if max_iters is not None and iteration >= max_iters:
                break
            frontier = head - seen if iteration >= min_iters else head
            seen |= head
            self._check_size(seen)
        if stmt.orelse is not None:
            other = self._suite(stmt.orelse.body, finished, scope)
            result.normal |= other.normal
            result.returns |= other.returns
            result.breaks |= other.breaks
            result.continues |= other.continues
        else:
            result.normal |= finished
        return result

    def _try(self, stmt: cst.Try | cst.TryStar, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        observed: set[frozenset[Key]] = set(states)
        self._observers.append(observed)
        try:
            body = self._suite(stmt.body, states, scope)
        finally:
            self._observers.pop()
        # Handlers start from the state before some statement of the body raised; once the
        # body has completed (body.normal), nothing inside the try can raise any more.
        result = _Paths(returns=set(body.returns), breaks=set(body.breaks), continues=set(body.continues))
        if stmt.orelse is not None:
            result = _merge(result, self._suite(stmt.orelse.body, body.normal, scope))
        else:
            result.normal |= body.normal
        for handler in stmt.handlers:
            result = _merge(result, self._suite(handler.body, observed, scope))
        final = stmt.finalbody
        if final is None:
            return result
        merged = _Paths()
        for attr in ("normal", "returns", "breaks", "continues"):
            group = getattr(result, attr)
            if not group:
                continue
            out = self._suite(final.body, group, scope)
            getattr(merged, attr).update(out.normal)
            merged.returns |= out.returns
            merged.breaks |= out.breaks
            merged.continues |= out.continues
        return merged

    def _check_size(self, states: set[frozenset[Key]]) -> None:
        if len(states) > MAX_STATES:
            raise _TooManyPaths

    # -- applying events to path states ----------------------------------------------------
    def apply(self, events: list[Event], states: set[frozenset[Key]], scope: Scope) -> set[frozenset[Key]]:
        for event in events:
            if event.kind == "cmd":
                command = event.command
                assert command is not None
                if command.name is None or not command.yielded:
                    continue  # an unyielded command does nothing at run time (SKP107)
                key: Key = (command.kind, command.name)
                if key not in self.first_branch and self._stack:
                    self.first_branch[key] = self._innermost_branch()
                if any(key in state for state in states):
                    self.repeats.setdefault(id(event.call), command)
                states = {state | {key} for state in states}
            elif event.kind == "maybe":
                states = states | self.apply(event.inner, states, scope)
            elif event.kind == "delegate":
                method = event.method
                assert method is not None
                self.reader.active.append(method)
                try:
                    out = self._block(syntax.statements(method.body), states, self.index.scopes[id(method)])
                finally:
                    self.reader.active.pop()
                states = out.normal | out.returns
            else:  # unknown delegation: anything may happen
                self.reader.unknown.update(("stash", "pop"))
            self._check_size(states)
        return states

    def _innermost_branch(self) -> cst.CSTNode:
        for node in reversed(self._stack):
            if isinstance(node, _BRANCHING):
                return node
        return self._stack[-1]


class ForwardAnalysis:
    """Commands of a forward (and the helpers it delegates to) and the paths through it: the
    commands are read by Commands (with KnownValues for what is no command), the paths walked
    by _PathWalk."""

    def __init__(self, index: ModuleIndex, info: ClassInfo, forward: cst.FunctionDef,
                 locator: Locator, skippable: bool, resolve: Optional[NameResolver] = None) -> None:
        reader = Commands(index, info, forward, locator, skippable, resolve)
        walk = _PathWalk(index, reader)
        self.paths_known = True
        self.exits: Optional[frozenset[frozenset[Key]]] = None
        try:
            self.exits = walk.run(forward)
        except _TooManyPaths:
            self.paths_known = False
        self.commands = reader.commands
        self.non_commands = reader.non_commands
        self.unknown = reader.unknown
        self.is_generator = reader.is_generator
        self.repeats = walk.repeats
        self.first_branch = walk.first_branch
        self.early_exits = walk.early_exits


def _continue_with(out: _Paths, step: _Paths) -> None:
    """Sequence `step` after `out`: its normal exits are where execution goes on."""
    out.normal = step.normal
    out.returns |= step.returns
    out.breaks |= step.breaks
    out.continues |= step.continues


def _merge(a: _Paths, b: _Paths) -> _Paths:
    return _Paths(a.normal | b.normal, a.returns | b.returns, a.breaks | b.breaks, a.continues | b.continues)


def _constant_range_length(node: cst.BaseExpression) -> Optional[int]:
    """How many times a loop over `node` runs, when that is a constant: range(...) of integer
    literals, a list/tuple literal, either under reversed(...) or enumerate(...)."""
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
            and node.func.value in ("reversed", "enumerate") and node.args and not node.args[0].keyword):
        node = node.args[0].value
    if isinstance(node, (cst.List, cst.Tuple)):
        if any(isinstance(e, cst.StarredElement) for e in node.elements):
            return None
        return len(node.elements)
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "range"):
        return None
    values: list[int] = []
    for arg in node.args:
        value = _int_literal(arg.value)
        if value is None or arg.keyword is not None or arg.star:
            return None
        values.append(value)
    if not 1 <= len(values) <= 3:
        return None
    try:
        return len(range(*values))
    except ValueError:
        return None


def _int_literal(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _int_literal(node.expression)
        return None if inner is None else -inner
    return None


def _constant_truth(node: cst.BaseExpression) -> Optional[bool]:
    """The truth of a condition written as a constant (`True`, `False`, `None`, `0`, `1`), else None."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return int(node.value, 0) != 0
    return None


def is_generator(func: cst.FunctionDef) -> bool:
    return any(isinstance(node, cst.Yield) for node in syntax.walk(func.body))
