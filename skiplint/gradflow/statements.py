"""The walk's statements: each returns the env after it, or None when no path goes on."""

from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst

from skiplint import syntax
from skiplint.gradflow.model import Env, INPUT_SOURCE, NOTHING, Value, meet_envs, saving, union
from skiplint.gradflow.walker import Walker


class Statements(Walker):
    """Walks statements: assignments, branches, loops, `with` and `try`."""

    def block(self, stmts: Sequence[cst.CSTNode], env: Optional[Env], returns: list[Value]) -> Optional[Env]:
        for stmt in stmts:
            if env is None:
                return None
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if env is None:
                        break
                    env = self.small(small, env, returns)
            elif isinstance(stmt, cst.BaseSmallStatement):
                env = self.small(stmt, env, returns)
            else:
                env = self.compound(stmt, env, returns)  # type: ignore[arg-type]
        return env

    def small(self, small: cst.BaseSmallStatement, env: Env, returns: list[Value]) -> Optional[Env]:
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
            for node in syntax.walk(small):
                if isinstance(node, cst.Name):
                    env[node.value] = NOTHING
        return env

    def compound(self, stmt: cst.BaseCompoundStatement, env: Env, returns: list[Value]) -> Optional[Env]:
        if isinstance(stmt, cst.If):
            self.eval(stmt.test, env)
            decided = self.decide(stmt.test, env)
            body: Optional[Env] = None
            other: Optional[Env] = None
            if decided is not False:
                body = self.block(syntax.statements(stmt.body), dict(env), returns)
            if decided is not True:
                if isinstance(stmt.orelse, cst.If):
                    other = self.compound(stmt.orelse, dict(env), returns)
                elif isinstance(stmt.orelse, cst.Else):
                    other = self.block(syntax.statements(stmt.orelse.body), dict(env), returns)
                else:
                    other = env
            alive = [e for e in (body, other) if e is not None]
            if decided is not None:
                return alive[0] if alive else None
            return meet_envs(alive) if alive else None
        if isinstance(stmt, cst.With):
            stops = sum(1 for item in stmt.items if self.stops_grad(item.item))
            for item in stmt.items:
                self.eval(item.item, env)
                if item.asname is not None:
                    self.assign(item.asname.name, NOTHING, env)
            self.no_grad += stops
            try:
                return self.block(syntax.statements(stmt.body), env, returns)
            finally:
                self.no_grad -= stops
        if isinstance(stmt, (cst.For, cst.While)):
            if isinstance(stmt, cst.For):
                self.eval(stmt.iter, env)
            else:
                self.eval(stmt.test, env)
            # One node of the source is a new node on each iteration: what a loop computes is not
            # followed (its values hold nothing, its stashes and returns share nothing).
            inner = dict(env)
            if isinstance(stmt, cst.For):
                self.assign(stmt.target, NOTHING, inner)
            self.in_loop += 1
            try:
                self.block(syntax.statements(stmt.body), inner, returns)
            finally:
                self.in_loop -= 1
            after_loop = dict(env)
            for node in syntax.walk(stmt):
                for target in targets(node):
                    self.assign(target, NOTHING, after_loop)
                changed = self.in_place(node) if type(node) is cst.Call else None
                if changed is not None:
                    self.assign(changed, NOTHING, after_loop)
            if stmt.orelse is not None:
                return self.block(syntax.statements(stmt.orelse.body), after_loop, returns)
            return after_loop
        if isinstance(stmt, cst.Try):
            body = self.block(syntax.statements(stmt.body), dict(env), returns)
            reached: list[Env] = []
            if body is not None:
                done = body if stmt.orelse is None else self.block(syntax.statements(stmt.orelse.body), body, returns)
                if done is not None:
                    reached.append(done)
            for handler in stmt.handlers:
                # A handler starts from any point of the body: only what holds before it is sure.
                start = meet_envs([env] + ([body] if body is not None else []))
                if handler.name is not None:
                    self.assign(handler.name.name, NOTHING, start)
                out = self.block(syntax.statements(handler.body), start, returns)
                if out is not None:
                    reached.append(out)
            merged: Optional[Env] = meet_envs(reached) if reached else None
            if stmt.finalbody is not None and merged is not None:
                merged = self.block(syntax.statements(stmt.finalbody.body), merged, returns)
            return merged
        # def, class, match, try*: what they bind is not followed
        for node in syntax.walk(stmt):
            if isinstance(node, cst.Name):
                env[node.value] = NOTHING
        return env

    def decide(self, test: cst.BaseExpression, env: Env) -> Optional[bool]:
        """The branch a condition certainly takes when balance_by_time profiles the layer (and when
        a pipe trains it): `self.training` is true there, and a popped tensor is not None."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.decide(test.expression, env)
            return None if inner is None else not inner
        if (isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self"
                and test.attr.value == "training"):
            return True
        if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)
                and isinstance(test.comparisons[0].comparator, cst.Name)
                and test.comparisons[0].comparator.value == "None"):
            value = env.get(test.left.value)
            if value is None or not (value.sources - {INPUT_SOURCE}):
                return None  # not known to hold a popped tensor
            operator = test.comparisons[0].operator
            if isinstance(operator, cst.IsNot):
                return True
            if isinstance(operator, cst.Is):
                return False
        return None

    def stops_grad(self, item: cst.BaseExpression) -> bool:
        func = item.func if isinstance(item, cst.Call) else item
        qualified = self.scope().qualified(func)
        return qualified in ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad")

    def assign(self, target: cst.BaseExpression, value: Value, env: Env) -> None:
        key = self.key(target)
        if key is not None:
            env[key] = value
            return
        if isinstance(target, (cst.Tuple, cst.List)) and not any(
                isinstance(e, cst.StarredElement) for e in target.elements):
            if value.items is not None and len(value.items) == len(target.elements):
                for element, item in zip(target.elements, value.items):
                    self.assign(element.value, item, env)
                return
            if value.items is None:  # the parts of a tensor (chunk, split, unbind) are views of it
                part = Value(value.ops, value.grad, value.sources)
                for element in target.elements:
                    self.assign(element.value, part, env)
                return
        for node in syntax.walk(target):
            node_key = self.key(node) if isinstance(node, cst.BaseExpression) else None
            if node_key is not None:
                env[node_key] = NOTHING


def targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an assignment, a loop or a walrus binds."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return [node.target]
    if isinstance(node, (cst.For, cst.CompFor)):
        return [node.target]
    if isinstance(node, cst.NamedExpr):
        return [node.target]
    return []
