"""Bindings: what an assignment binds (a name, the items of a tuple, an item or an attribute of a
value), names rebound from another frame by `global` and `nonlocal`, and what an unknown block may
change becoming unknown."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import libcst as cst

from skiplint import syntax
from skiplint.interpret.core import Core, Env
from skiplint.interpret.values import (
    MUTATORS, UNKNOWN, NS, DictV, FuncV, LayerV, ListV, ObjV, PipeV, SeqV, place, taint,
)


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
