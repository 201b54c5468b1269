"""Statements: blocks, assignments, `if`, `for`, `with`, `try`; and bindings: what an assignment
binds (a name, the items of a tuple, an item or an attribute of a value), names rebound from
another frame by `global` and `nonlocal`, and what an unknown block may change becoming unknown."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import libcst as cst

from skiplint import syntax
from skiplint.interpret.core import Break, Continue, Core, Env, LoopUnknown, Return
from skiplint.interpret.operations import AUG, binary
from skiplint.interpret.values import (
    MISSING, MUTATORS, UNKNOWN, NS, BuiltinV, DictV, ExternalV, FuncV, LayerV, ListV, ObjV, PipeV, SeqV, place,
    taint,
)


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


class Bindings(Core):
    """Binds names and places, and makes unknown what code not run may change."""

    def set(self, name: str, value: Any, env: Env) -> None:
        rebinding = self.rebinding
        if rebinding is not None:
            frame = env.frame()
            if frame.parent is None or frame.parent.scope is not frame.scope:  # not a comprehension's
                if rebinding.kind(frame.scope, name) is not None:
                    self.rebind(name, value, frame)
                    return
                unknowable = rebinding.unknowable.get(id(frame.scope))
                if unknowable is not None and name in unknowable:
                    value = UNKNOWN
        env.vars[name] = value

    def rebind(self, name: str, value: Any, frame: Env) -> None:
        """`name = value` in a frame whose function declares the name `global` or `nonlocal`: the
        variable of the module's or the enclosing function's frame. Certain only from a rebinder
        that the module calls only directly (Rebinding), run where that frame's own code runs:
        under no more unknown branches than the frame began under, after no possible return, and
        for a global, in the module's own run (not a builder run on its own); else unknown."""
        rebinding = self.rebinding
        assert rebinding is not None
        owner = self._owner_frame(frame.parent, rebinding.owner(frame.scope, name))
        if owner is None:
            return  # `nonlocal` with no enclosing binding: Python refuses it
        certain = (
            any(known == name for known, _ in rebinding.followed.get(id(frame.func), ()))
            and len(self.branches) == owner.branching
            and not owner.vars.get("$maybe_returned") and not frame.vars.get("$maybe_returned")
            and (owner is not self.module_env or self.entries.serial == 1))
        self._write(owner, name, value if certain else UNKNOWN)

    def _owner_frame(self, env: Optional[Env], scope: Any) -> Optional[Env]:
        """The frame (not an overlay) of `scope` among `env` and its parents."""
        if scope is self.index.scope:
            return self.module_env
        while env is not None and (env.overlay or env.scope is not scope):
            env = env.parent
        return env

    def _write(self, owner: Env, name: str, value: Any) -> None:
        """Bind a variable of `owner` from another frame; a branch of `owner` running now that
        bound it too sees it unknown."""
        assert self.rebinding is not None
        unknowable = self.rebinding.unknowable.get(id(owner.scope))
        if unknowable is not None and name in unknowable:
            value = UNKNOWN
        owner.vars[name] = value
        for overlay in self.branches:  # opened after `owner` began: the write was not certain
            if overlay.frame() is owner and name in overlay.vars:
                overlay.vars[name] = UNKNOWN

    def not_run(self, func: Any) -> None:
        """A call of `func` that may happen but is not run here (an unknown branch's or loop's code,
        a call whose arguments are unknown, past the budget): what a followed rebinder assigns
        becomes unknown."""
        if self.rebinding is None or not isinstance(func, FuncV):
            return
        for name, scope in self.rebinding.followed.get(id(func.node), ()):
            owner = self._owner_frame(func.env, scope)
            if owner is not None:
                self._write(owner, name, UNKNOWN)

    def assign(self, target: cst.BaseExpression, value: Any, env: Env, node: Optional[cst.CSTNode]) -> None:
        if isinstance(target, cst.Name):
            self.set(target.value, value, env)
            label = target.value
            if isinstance(value, SeqV) and value.name is None:
                value.name = label
            elif isinstance(value, PipeV) and value.record.name is None:
                value.record.name = label
                module = value.record.module
                if value.record.kind == "inspect_skip_layout" and isinstance(module, SeqV) and module.name is None:
                    module.name = label
            elif isinstance(value, NS) and value.origin is None:
                value.origin = label
            elif isinstance(value, ListV) and value.origin is None:
                value.origin = label
        elif isinstance(target, (cst.Tuple, cst.List)):
            items = self.iterate(value)
            elements = list(target.elements)
            if items is None or len(items) != len(elements) or any(
                    isinstance(e, cst.StarredElement) for e in elements):
                self.taint_targets([e.value for e in elements], env)
                return
            for element, item in zip(elements, items):
                self.assign(element.value, item, env, None)
        elif isinstance(target, cst.Subscript):
            place(value)
            obj = self.eval(target.value, env)
            key = self.subscript_key(target, env)
            if isinstance(obj, DictV) and not obj.tainted:
                if key is UNKNOWN or isinstance(key, slice):
                    obj.tainted = True
                else:
                    obj.items[key] = (value, node)
            elif isinstance(obj, ListV) and not obj.tainted:
                if isinstance(key, int) and -len(obj.items) <= key < len(obj.items):
                    obj.items[key] = (value, node)
                else:
                    obj.tainted = True
            else:
                taint(obj)
        elif isinstance(target, cst.Attribute):
            place(value)
            obj = self.eval(target.value, env)
            attr = target.attr.value
            if isinstance(obj, ObjV):
                obj.attrs[attr] = value
                if isinstance(value, SeqV) and value.name is None:
                    value.name = f"self.{attr}"
                elif isinstance(value, PipeV) and value.record.name is None:
                    value.record.name = f"self.{attr}"
            elif isinstance(obj, SeqV):
                if isinstance(value, (LayerV, SeqV)) or value is UNKNOWN:
                    obj.add(attr, value, node)
                    if isinstance(value, SeqV):
                        value.nested_in = True
            else:
                taint(obj)
        else:
            self.taint_targets([target], env)

    def taint_targets(self, targets: Sequence[cst.BaseExpression], env: Env) -> None:
        for target in targets:
            if isinstance(target, cst.Name):
                self.set(target.value, UNKNOWN, env)
            elif isinstance(target, (cst.Tuple, cst.List)):
                self.taint_targets([e.value for e in target.elements], env)
            elif isinstance(target, (cst.Subscript, cst.Attribute)):
                taint(self.peek(target.value, env))
            elif isinstance(target, cst.StarredElement):
                self.taint_targets([target.value], env)

    def taint_block(self, node: cst.CSTNode, env: Env) -> None:
        """What an unknown block may assign or mutate becomes unknown."""
        walked = 0
        for inner in syntax.walk(node):
            walked += 1
            if isinstance(inner, cst.Assign):
                self.taint_targets([t.target for t in inner.targets], env)
            elif isinstance(inner, (cst.AugAssign, cst.AnnAssign)):
                self.taint_targets([inner.target], env)
            elif isinstance(inner, (cst.For, cst.CompFor)):
                self.taint_targets([inner.target], env)
            elif isinstance(inner, cst.Call):
                func = inner.func
                if isinstance(func, cst.Attribute) and func.attr.value in MUTATORS:
                    taint(self.peek(func.value, env))
                elif self.rebinding is not None and isinstance(func, cst.Name):
                    self.not_run(self.peek(func, env))
                for arg in inner.args:
                    if isinstance(arg.value, (cst.Name, cst.Attribute)):
                        taint(self.peek(arg.value, env))
            elif isinstance(inner, (cst.FunctionDef, cst.ClassDef)):
                self.set(inner.name.value, UNKNOWN, env)
        self.tick(walked)  # after tainting: walking a block costs as much as running it

    def peek(self, node: cst.BaseExpression, env: Env) -> Any:
        """The value a plain name or `self.attr` refers to, without running anything."""
        if isinstance(node, cst.Name):
            return env.find(node.value)[1]
        if isinstance(node, cst.Attribute):
            obj = self.peek(node.value, env)
            if isinstance(obj, ObjV):
                return obj.attrs.get(node.attr.value)
        return None
