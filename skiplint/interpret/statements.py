"""Statements: blocks, assignments, `if`, `for`, `with`, `try` (what they bind: bindings.py)."""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from skiplint.interpret.core import Break, Continue, Core, Env, LoopUnknown, Return
from skiplint.interpret.operations import AUG, binary
from skiplint.interpret.values import MISSING, UNKNOWN, BuiltinV, ExternalV, FuncV, ListV


#: Packages whose context managers never install a skip tracker (but for `use_skip_tracker`).
_KNOWN_CONTEXTS = frozenset({"torch", "pytest", "contextlib", "warnings", "unittest", "numpy", "tempfile", "os",
                             "threading", "logging", "io", "sys", "time"})


class Statements(Core):
    """Runs statements."""

    def block(self, stmts: Sequence[cst.CSTNode], env: Env) -> None:
        for stmt in stmts:
            self.tick()
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    self.small(small, env)
            else:
                self.compound(stmt, env)  # type: ignore[arg-type]

    def suite(self, suite: cst.BaseSuite, env: Env) -> None:
        if isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                self.small(small, env)
        else:
            self.block(suite.body, env)

    def small(self, small: cst.BaseSmallStatement, env: Env) -> None:
        # compared by identity: libcst's concrete node classes have no subclasses
        if type(small) is cst.Assign:
            value = self.eval(small.value, env)
            for target in small.targets:
                self.assign(target.target, value, env, small.value)
        elif type(small) is cst.AnnAssign:
            if small.value is not None:
                self.assign(small.target, self.eval(small.value, env), env, small.value)
        elif type(small) is cst.AugAssign:
            self.aug_assign(small, env)
        elif type(small) is cst.Expr:
            self.eval(small.value, env)
        elif type(small) is cst.Return:
            raise Return(self.eval(small.value, env) if small.value is not None else None)
        elif type(small) is cst.Break:
            raise Break
        elif type(small) is cst.Continue:
            raise Continue
        elif type(small) is cst.Global or type(small) is cst.Nonlocal:
            pass  # a declaration: `set` binds those names where they belong (self.rebinding)
        elif type(small) is cst.Del:
            self.taint_targets([small.target], env)
        elif type(small) is cst.Raise:
            raise Return(UNKNOWN)

    def compound(self, stmt: cst.BaseCompoundStatement, env: Env) -> None:
        if type(stmt) is cst.FunctionDef:
            self.set(stmt.name.value, FuncV(stmt, env), env)
        elif type(stmt) is cst.ClassDef:
            self.set(stmt.name.value, self.define_class(stmt, env), env)
        elif type(stmt) is cst.If:
            self.if_(stmt, env)
        elif type(stmt) is cst.For:
            self.for_(stmt, env)
        elif type(stmt) is cst.With:
            other = False
            for item in stmt.items:
                other = other or self.may_install_tracker(item.item, env)
                self.eval(item.item, env)
                if item.asname is not None:
                    self.assign(item.asname.name, UNKNOWN, env, None)
            self.entries.other_tracker += other
            try:
                self.suite(stmt.body, env)
            finally:
                self.entries.other_tracker -= other
        elif isinstance(stmt, cst.Try):
            self.suite(stmt.body, env)
            for handler in stmt.handlers:
                self.taint_block(handler.body, env)
            if stmt.orelse is not None:
                self.suite(stmt.orelse.body, env)
            if stmt.finalbody is not None:
                self.suite(stmt.finalbody.body, env)
        else:  # while, match, try*: effects unknown
            self.taint_block(stmt, env)

    def may_install_tracker(self, item: cst.BaseExpression, env: Env) -> bool:
        """Whether a context manager may make another skip tracker current in its body:
        `use_skip_tracker(...)`, or one that is not from torch, pytest or the standard library
        (a project's own may wrap use_skip_tracker)."""
        func = item.func if isinstance(item, cst.Call) else item
        value = self.imported(func, env) if isinstance(func, (cst.Name, cst.Attribute)) else UNKNOWN
        if isinstance(value, BuiltinV):
            return False
        if isinstance(value, ExternalV):
            root = value.qualified.split(".")[0]
            return value.qualified.endswith("use_skip_tracker") or root not in _KNOWN_CONTEXTS
        return True

    def if_(self, stmt: cst.If, env: Env) -> None:
        test = self.eval(stmt.test, env)
        if isinstance(test, (bool, int, str)) or test is None:
            if test:
                self.suite(stmt.body, env)
            elif isinstance(stmt.orelse, cst.If):
                self.if_(stmt.orelse, env)
            elif isinstance(stmt.orelse, cst.Else):
                self.suite(stmt.orelse.body, env)
            return
        branches: list[tuple[cst.CSTNode, cst.CSTNode]] = [(stmt.body, stmt.body)]
        if isinstance(stmt.orelse, cst.If):
            branches.append((stmt.orelse, stmt.orelse))
        elif isinstance(stmt.orelse, cst.Else):
            branches.append((stmt.orelse.body, stmt.orelse))
        overlays = []
        for branch, whole in branches:
            overlay = Env(env, env.scope, env.func, overlay=True)
            self.branches.append(overlay)
            try:
                if isinstance(branch, cst.If):
                    self.if_(branch, overlay)
                else:
                    self.suite(branch, overlay)  # type: ignore[arg-type]
            except (Break, Continue):
                raise LoopUnknown from None
            except Return:
                overlay.vars["$returned"] = True
            finally:
                self.branches.pop()
            overlays.append(overlay)
            self.taint_block(whole, env)
        names = set().union(*(o.vars for o in overlays))
        for name in names:
            if name == "$returned":
                continue
            values = [o.vars.get(name, MISSING) for o in overlays]
            if len(overlays) == 2 and values[0] is values[1]:
                self.set(name, values[0], env)
            else:
                self.set(name, UNKNOWN, env)
        if any("$returned" in o.vars for o in overlays):
            env.frame().vars["$maybe_returned"] = True

    def for_(self, stmt: cst.For, env: Env) -> None:
        items = self.iterate(self.eval(stmt.iter, env))
        if items is None:
            self.taint_block(stmt, env)
            return
        try:
            for value in items:
                self.assign(stmt.target, value, env, None)
                try:
                    self.suite(stmt.body, env)
                except Continue:
                    continue
                except Break:
                    return
        except LoopUnknown:
            self.taint_block(stmt, env)
            return
        if stmt.orelse is not None:
            self.suite(stmt.orelse.body, env)

    def aug_assign(self, small: cst.AugAssign, env: Env) -> None:
        current = self.eval(small.target, env)
        value = self.eval(small.value, env)
        if isinstance(current, ListV) and not current.tainted and isinstance(small.operator, cst.AddAssign):
            items = self.iterate(value, with_nodes=True, spread=True)
            if items is None:
                current.tainted = True
            else:
                current.items.extend(items)
            return
        result = binary(current, AUG.get(type(small.operator)), value, self.budget)
        self.assign(small.target, result, env, None)
