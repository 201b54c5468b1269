"""The one walk of a forward body: statement by statement, the commands run on each path through
it (branches, loops, try, early exits: which commands a path repeats, the branch that makes a
command conditional) and, in the same walk, the autograd dataflow of its values
(skiplint.gradflow: expressions and calls). The methods, functions and submodules forward calls
are walked by the same walker for their dataflow; the helpers it delegates to with `yield from`,
for their commands too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from skiplint import gradflow, syntax
from skiplint.facts import Command, Key, Locator
from skiplint.gradflow.calls import Calls
from skiplint.gradflow.expressions import Expressions
from skiplint.gradflow.model import Env, NOTHING, Value, meet_envs, saving, union
from skiplint.gradflow.reads import Reads
from skiplint.gradflow.walker import Exits, FunctionResolver, Walker, rebound, targets, unplain
from skiplint.limits import MAX_STATES
from skiplint.skippables.commands import Commands, Event
from skiplint.skippables.index import ClassInfo, ModuleIndex
from skiplint.skippables.names import NameResolver

_BRANCHING = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)
Paths = set[frozenset[Key]]


class _PathCommands:
    """The commands on the paths through a forward: each statement's commands (read by Commands)
    applied to the set of commands run so far on each path, the commands some path repeats, the
    branch each command is first run under; past MAX_STATES paths, none any more."""

    index: ModuleIndex
    reader: Commands
    repeats: dict[int, Command]
    first_branch: dict[Key, cst.CSTNode]
    overflowed: bool
    _stack: list[cst.CSTNode]

    if TYPE_CHECKING:
        def block(self, stmts: Sequence[cst.CSTNode], states: Paths, env: Optional[Env],
                  returns: list[Value]) -> Exits: ...

    def command_kind(self, call: cst.Call) -> Optional[str]:
        command = self.reader.commands.get(id(call))
        if command is None or not command.yielded or command.name is None or command.arity_problem is not None:
            return None
        return command.kind

    def yielded_value(self, node: cst.Yield, value: Value) -> None:
        self.reader.evaluated(node, value.plain)

    def _checked(self, states: Paths) -> Paths:
        """The paths, or none past MAX_STATES (then only the dataflow goes on)."""
        if len(states) > MAX_STATES:
            self.overflowed = True
        return set() if self.overflowed else states

    def commands_of(self, node: cst.CSTNode, states: Paths) -> Paths:
        """The paths after the commands in an expression or small statement."""
        if not states or self.overflowed:
            return set()
        return self.apply(self.reader.events(node, self.reader.scope_of(self.reader.active[-1])), states)

    def apply(self, events: list[Event], states: Paths) -> Paths:
        for event in events:
            if self.overflowed:
                return set()
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
                states = states | self.apply(event.inner, states)
            elif event.kind == "delegate":
                method = event.method
                assert method is not None
                self.reader.active.append(method)
                try:
                    out = self.block(syntax.statements(method.body), states, None, [])
                finally:
                    self.reader.active.pop()
                states = out.normal | out.returns
            else:  # unknown delegation: anything may happen
                self.reader.unknown.update(("stash", "pop"))
            states = self._checked(states)
        return states

    def _innermost_branch(self) -> cst.CSTNode:
        for node in reversed(self._stack):
            if isinstance(node, _BRANCHING):
                return node
        return self._stack[-1]


class _Loops(Walker):
    """Loops: the paths through them by iteration, their body's dataflow walked once."""

    if TYPE_CHECKING:
        def commands_of(self, node: cst.CSTNode, states: Paths) -> Paths: ...
        def reads(self, node: cst.CSTNode, env: Optional[Env]) -> None: ...
        def _checked(self, states: Paths) -> Paths: ...
        def _suite(self, suite: cst.BaseSuite, states: Paths, env: Optional[Env], returns: list[Value]) -> Exits: ...

    def _loop(self, stmt: cst.For | cst.While, states: Paths, env: Optional[Env], returns: list[Value]) -> Exits:
        min_iters, max_iters, infinite = 0, None, False
        states = self.commands_of(stmt.iter if isinstance(stmt, cst.For) else stmt.test, states)
        self.reads(stmt.iter if isinstance(stmt, cst.For) else stmt.test, env)
        if isinstance(stmt, cst.For):
            count = _constant_range_length(stmt.iter)
            if count is not None:
                min_iters, max_iters = min(count, 2), count
        else:
            truth = _constant_truth(stmt.test)
            if truth is True:
                infinite = True
            elif truth is False:
                max_iters = 0
        # One node of the source is a new node on each iteration: what a loop computes is not
        # followed by the dataflow (its values hold nothing, its stashes and returns share nothing).
        inner: Optional[Env] = None
        if env is not None:
            # A name the loop binds may hold, where it is read, what the previous iteration bound.
            unplain(rebound(stmt.body), env)
            self.eval(stmt.iter if isinstance(stmt, cst.For) else stmt.test, env)
            inner = dict(env)
            if isinstance(stmt, cst.For):
                self.assign(stmt.target, NOTHING, inner)
        result = Exits()
        finished: Paths = set() if (infinite or min_iters > 0) else set(states)
        if max_iters == 0:
            finished = set(states)
        frontier = set(states)
        seen = set(states)
        iteration = 0
        while frontier and max_iters != 0:
            iteration += 1
            out = self._body(stmt, frontier, inner, returns)
            inner = None
            result.returns |= out.returns
            result.normal |= out.breaks
            head = out.normal | out.continues
            if not infinite and iteration >= min_iters:
                finished |= head
            if max_iters is not None and iteration >= max_iters:
                break
            frontier = head - seen if iteration >= min_iters else head
            seen |= head
            if not self._checked(seen):
                frontier = set()
        if inner is not None:
            self._body(stmt, set(), inner, returns)
        after = self._after_loop(stmt, env) if env is not None else None
        if stmt.orelse is not None:
            other = self._suite(stmt.orelse.body, finished, after, returns)
            _continue_with(result, Exits(result.normal | other.normal, other.returns, other.breaks, other.continues,
                                         other.env))
        else:
            result.normal |= finished
            result.env = after
        return result

    def _body(self, stmt: cst.For | cst.While, states: Paths, env: Optional[Env], returns: list[Value]) -> Exits:
        if env is None:
            return self._suite(stmt.body, states, None, returns)
        self.in_loop += 1
        try:
            return self._suite(stmt.body, states, env, returns)
        finally:
            self.in_loop -= 1

    def _after_loop(self, stmt: cst.For | cst.While, env: Env) -> Env:
        """What the dataflow knows after a loop: nothing of what it binds or changes in place, but
        that it may hold what it held anywhere (`Value.reach`)."""
        after = dict(env)
        bound: list[cst.CSTNode] = []
        for node in syntax.walk(stmt):
            for target in targets(node):
                self.assign(target, NOTHING, after)
                bound.append(target)
            changed = self.in_place(node) if type(node) is cst.Call else None
            if changed is not None:
                self.assign(changed, NOTHING, after)
                bound.append(changed)
        for written in bound:
            for part in syntax.walk(written):
                key = self.key(part)
                if key is not None and key in self.flow.reach_of:
                    after[key] = self.flow.held(key, after.get(key, NOTHING))
        return after


class ForwardWalk(_PathCommands, _Loops, Reads, Expressions, Calls):
    """Walks a forward's statements once, for its paths (the commands read by Commands) and its
    dataflow (an env of `gradflow.Value`s, None where no path goes on). A part that no path reaches
    is walked for the other part only: a condition gradflow decides (`self.training`) is not
    decided for the paths, nor a constant one for the dataflow; a loop's body is walked for its
    dataflow once. Past MAX_STATES paths, only the dataflow goes on."""

    def __init__(self, index: ModuleIndex, reader: Commands, info: ClassInfo,
                 imported: Optional[tuple[str, FunctionResolver]]) -> None:
        functions, classes = index.top_level()
        super().__init__(index.scopes, info.methods, gradflow.torch_layers(info.methods, index.scopes, classes),
                         functions, classes, imported)
        self.index = index
        self.reader = reader
        self.repeats: dict[int, Command] = {}
        self.first_branch: dict[Key, cst.CSTNode] = {}
        self.early_exits: list[cst.CSTNode] = []
        self.overflowed = False
        self._stack: list[cst.CSTNode] = []
        self._observers: list[Paths] = []
        self._leaves = 0
        self._defined: list[cst.CSTNode] = []

    def _at_forward(self) -> bool:
        """Whether the code walked now is forward's own (not a function it calls or delegates to)."""
        return len(self.active) == 1 and len(self.reader.active) == 1

    # -- statements ------------------------------------------------------------------------
    def block(self, stmts: Sequence[cst.CSTNode], states: Paths, env: Optional[Env], returns: list[Value]) -> Exits:
        out = Exits(normal=set(states), env=env)
        top = not self._stack and self._at_forward()  # forward's own body
        previous: Optional[cst.CSTNode] = None
        for stmt in stmts:
            if not out.normal and out.env is None:
                break  # the rest is unreachable
            if top and previous is not None and not self._leaves:
                self.detach_in_place(previous, stmt)
            previous = stmt
            for observer in self._observers:
                observer.update(out.normal)
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if not out.normal and out.env is None:
                        break
                    _continue_with(out, self.small(small, out.normal, out.env, returns))
            elif isinstance(stmt, cst.BaseSmallStatement):
                _continue_with(out, self.small(stmt, out.normal, out.env, returns))
            elif isinstance(stmt, cst.BaseCompoundStatement):
                self._stack.append(stmt)
                try:
                    _continue_with(out, self.compound(stmt, out.normal, out.env, returns))
                finally:
                    self._stack.pop()
            out.normal = self._checked(out.normal)
        return out

    def small(self, small: cst.BaseSmallStatement, states: Paths, env: Optional[Env], returns: list[Value]) -> Exits:
        reached = bool(states)
        states = self.commands_of(small, states)
        self.reads(small, env)
        popped = self.assigned_pop(small)
        if popped is not None:
            name, call = popped
            self.flow.assigned_pops.add(id(call))
            self.flow.hold(name, frozenset({id(call)}))
        if env is not None:
            env = self.transfer(small, env, returns)
        if type(small) in (cst.Return, cst.Raise) and self._at_forward():
            self._leaves += 1
        if type(small) is cst.Return:
            if reached and not self.overflowed and self._stack:
                self.early_exits.append(self._stack[0])
            return Exits(returns=states)
        if type(small) is cst.Raise:
            return Exits()
        if type(small) is cst.Break:
            return Exits(breaks=states, env=env)  # the dataflow does not follow break and continue
        if type(small) is cst.Continue:
            return Exits(continues=states, env=env)
        return Exits(normal=states, env=env)

    def transfer(self, small: cst.BaseSmallStatement, env: Env, returns: list[Value]) -> Optional[Env]:
        """The env after a small statement (None after return and raise)."""
        if isinstance(small, cst.Assign):
            value = self.eval(small.value, env)
            for target in small.targets:
                self.assign(target.target, value, env)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self.assign(small.target, self.eval(small.value, env), env)
        elif isinstance(small, cst.AugAssign):
            current = self.eval(small.target, env)
            value = self.eval(small.value, env)
            if isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)):
                result = union((current, value))
            else:
                result = saving(small, (current, value))
            self.assign(small.target, self.grad_off(result), env)
        elif isinstance(small, cst.Expr):
            self.eval(small.value, env)
        elif isinstance(small, cst.Return):
            value = self.eval(small.value, env) if small.value is not None else NOTHING
            returns.append(NOTHING if self.in_loop else value)
            return None
        elif isinstance(small, cst.Raise):
            return None
        elif isinstance(small, (cst.Global, cst.Nonlocal, cst.Del)):
            self.forget(small, env)
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            unplain(rebound(small), env)
        return env

    def compound(self, stmt: cst.BaseCompoundStatement, states: Paths, env: Optional[Env],
                 returns: list[Value]) -> Exits:
        if isinstance(stmt, cst.If):
            return self._if(stmt, states, env, returns)
        if isinstance(stmt, (cst.For, cst.While)):
            return self._loop(stmt, states, env, returns)
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                states = self.commands_of(item.item, states)
                self.reads(item.item, env)
            stops = sum(1 for item in stmt.items if self.stops_grad(item.item))
            if env is not None:
                for item in stmt.items:
                    self.eval(item.item, env)
                    if item.asname is not None:
                        self.assign(item.asname.name, NOTHING, env)
            before = dict(env) if env is not None else None
            self.no_grad += stops
            try:
                out = self._suite(stmt.body, states, env, returns)
            finally:
                self.no_grad -= stops
            if before is not None and out.env is not None and not all(
                    (self.scope().qualified(item.item.func if isinstance(item.item, cst.Call) else item.item)
                     or "").startswith("torch.") for item in stmt.items):
                # A context manager may swallow an exception the body raised before it rebound a name.
                unplain({key for key in rebound(stmt.body) if not before.get(key, NOTHING).plain}, out.env)
            return out
        if isinstance(stmt, cst.Try):
            return self._try(stmt, states, env, returns)
        # try*, match, def, class: what they bind is not followed by the dataflow
        out = Exits(normal=set(states))
        if isinstance(stmt, cst.TryStar):
            out = self._try(stmt, states, None, returns)
        elif isinstance(stmt, cst.Match):
            out = self._match(stmt, states, returns)
        elif self._at_forward():  # a function or class forward defines
            self._defined.append(stmt)
        if env is not None:
            self.forget(stmt, env)
        out.env = env
        return out

    def _suite(self, suite: cst.BaseSuite, states: Paths, env: Optional[Env], returns: list[Value]) -> Exits:
        return self.block(syntax.statements(suite), states, env, returns)

    def _if(self, stmt: cst.If, states: Paths, env: Optional[Env], returns: list[Value]) -> Exits:
        states = self.commands_of(stmt.test, states)
        self.reads(stmt.test, env)
        decided: Optional[bool] = None
        if env is not None:
            self.eval(stmt.test, env)
            decided = self.decide(stmt.test, env)
        constant = _constant_truth(stmt.test)  # `if True:` / `if 1:`: the other branch never runs
        # A branch that never runs where a pipe trains is walked with a copy of the env for what its
        # yields are (`unrun`): its returns go nowhere, its env is dropped.
        self.unrun += decided is False
        try:
            body = self._suite(stmt.body, states if constant is not False else set(),
                               dict(env) if env is not None else None, [] if decided is False else returns)
        finally:
            self.unrun -= decided is False
        other_states = states if constant is not True else set()
        self.unrun += decided is True
        try:
            if isinstance(stmt.orelse, cst.If):
                other = self.compound(stmt.orelse, other_states, dict(env) if env is not None else None,
                                      [] if decided is True else returns)
            elif isinstance(stmt.orelse, cst.Else):
                other = self._suite(stmt.orelse.body, other_states, dict(env) if env is not None else None,
                                    [] if decided is True else returns)
            else:
                other = Exits(normal=set(other_states), env=env)
        finally:
            self.unrun -= decided is True
        out = _merge(body, other)
        if decided is not None:
            out.env = body.env if decided else other.env
            skipped = stmt.body if decided is False else stmt.orelse
            unrun = other.env if decided else body.env
            if out.env is not None and skipped is not None and unrun is not None:
                # in eval mode the other branch runs: what it binds is no command only where it is there too
                unplain({key for key in rebound(skipped) if not unrun.get(key, NOTHING).plain}, out.env)
        else:
            alive = [e for e in (body.env, other.env) if e is not None]
            out.env = meet_envs(alive) if alive else None
        return out

    def _try(self, stmt: cst.Try | cst.TryStar, states: Paths, env: Optional[Env], returns: list[Value]) -> Exits:
        observed: Paths = set(states)
        self._observers.append(observed)
        try:
            body = self._suite(stmt.body, states, dict(env) if env is not None else None, returns)
        finally:
            self._observers.pop()
        # Handlers start from the state before some statement of the body raised; once the
        # body has completed (body.normal), nothing inside the try can raise any more.
        result = Exits(returns=set(body.returns), breaks=set(body.breaks), continues=set(body.continues))
        reached: list[Env] = []
        if stmt.orelse is not None:
            other = self._suite(stmt.orelse.body, body.normal, body.env, returns)
            result = _merge(result, other)
            done = other.env
        else:
            result.normal |= body.normal
            done = body.env
        if done is not None:
            reached.append(done)
        for handler in stmt.handlers:
            # The dataflow of a handler: only what holds before the body is sure.
            start = meet_envs([env] + ([body.env] if body.env is not None else [])) if env is not None else None
            if start is not None:
                unplain(rebound(stmt.body), start)  # what the body bound before it raised
                if handler.name is not None:
                    self.assign(handler.name.name, NOTHING, start)
            out = self._suite(handler.body, observed, start, returns)
            result = _merge(result, out)
            if out.env is not None:
                reached.append(out.env)
        merged = meet_envs(reached) if reached else None
        final = stmt.finalbody
        if final is None:
            result.env = merged
            return result
        out_of = Exits()
        for attr in ("normal", "returns", "breaks", "continues"):
            group = getattr(result, attr)
            flow = merged if attr == "normal" else None
            if not group and flow is None:
                continue
            out = self._suite(final.body, group, flow, returns)
            getattr(out_of, attr).update(out.normal)
            out_of.returns |= out.returns
            out_of.breaks |= out.breaks
            out_of.continues |= out.continues
            if attr == "normal":
                out_of.env = out.env
        return out_of

    def _match(self, stmt: cst.Match, states: Paths, returns: list[Value]) -> Exits:
        states = self.commands_of(stmt.subject, states)
        self.reads(stmt.subject, None)
        result = Exits()
        exhaustive = False
        for case in stmt.cases:
            if case.guard is not None:
                self.reads(case.guard, None)
            result = _merge(result, self._suite(case.body, states, None, returns))
            pattern = case.pattern
            if case.guard is None and isinstance(pattern, cst.MatchAs) and pattern.pattern is None:
                exhaustive = True
        if not exhaustive:
            result.normal |= states
        return result


class ForwardAnalysis:
    """Commands of a forward (and the helpers it delegates to), the paths through it, and its
    autograd dataflow (`flow`), from one ForwardWalk: the commands are read by Commands, the yields
    of what is no command decided by the walk's values."""

    def __init__(self, index: ModuleIndex, info: ClassInfo, forward: cst.FunctionDef,
                 locator: Locator, skippable: bool, resolve: Optional[NameResolver] = None) -> None:
        reader = Commands(index, info, forward, locator, skippable, resolve)
        walk = ForwardWalk(index, reader, info, index.imported)
        output, returned, out = walk.run(forward, [gradflow.Value(frozenset(), gradflow.INPUT,
                                                                  frozenset({gradflow.INPUT_SOURCE}),
                                                                  view=gradflow.INPUT, plain=True)],
                                         states={frozenset()})
        reader.settle()
        walk.flow.output = output
        walk.flow.returned = returned
        walk.finish_reads()
        self.flow = walk.flow
        self.paths_known = not walk.overflowed
        self.exits: Optional[frozenset[frozenset[Key]]] = frozenset(out.normal | out.returns) \
            if self.paths_known else None
        self.commands = reader.commands
        self.non_commands = reader.non_commands
        self.unknown = reader.unknown
        self.is_generator = reader.is_generator
        self.repeats = walk.repeats
        self.first_branch = walk.first_branch
        self.early_exits = walk.early_exits


def _continue_with(out: Exits, step: Exits) -> None:
    """Sequence `step` after `out`: its normal exits are where execution goes on."""
    out.normal = step.normal
    out.env = step.env
    out.returns |= step.returns
    out.breaks |= step.breaks
    out.continues |= step.continues


def _merge(a: Exits, b: Exits) -> Exits:
    """The paths of two branches (their envs are met by the caller)."""
    return Exits(a.normal | b.normal, a.returns | b.returns, a.breaks | b.breaks, a.continues | b.continues)


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
