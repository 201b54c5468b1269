"""The calls the walk follows: the methods, module-level functions and submodules a forward runs,
run with their arguments; the torch.nn layers it holds and torch's operations, by what they save
for the backward pass."""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence, Union

import libcst as cst

from skiplint import syntax
from skiplint.facts import Key
from skiplint.gradflow.attributes import Attributes, torch_layers, truth
from skiplint.gradflow.model import (
    BREAKING, Env, MAY, MAY_VIEWS, NO, NOTHING, PARAM_LAYERS, PASSING, PASSING_LAYERS, SAVING, SAVING_LAYERS, VIEWS,
    Value, YES, meet, plain, saving, union, unknown_call,
)
from skiplint.gradflow.walker import Exits, ImportedFunction, Walker, arguments, bindable, constant_index, delegated


class Calls(Walker):
    """Follows calls into the code of the module, and values those it does not follow."""

    def run(self, func: cst.FunctionDef, args: Sequence[Value], bound: bool = True,
            states: Optional[set[frozenset[Key]]] = None,
            keywords: Optional[Mapping[str, Value]] = None) -> tuple[Value, bool, Exits]:
        """Run a function with its positional arguments (after self, for a method: `bound`) and its
        keyword arguments (`bindable` ones), and the paths through it from `states`: its return
        value, whether every path that leaves it returns a value, and where its paths leave it."""
        self.active.append(func)
        env: Env = {}
        params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
        for i, name in enumerate(params[1:] if bound else params):
            env[name] = args[i] if i < len(args) else (keywords or {}).get(name, NOTHING)
        for param in func.params.kwonly_params:
            env[param.name.value] = (keywords or {}).get(param.name.value, NOTHING)
        returns: list[Value] = []
        try:
            out = self.block(syntax.statements(func.body), states or set(), env, returns)
        finally:
            self.active.pop()
        if out.env is not None:  # falls off the end: returns None
            return NOTHING, False, out
        if not returns:
            return NOTHING, False, out
        value = returns[0]
        for other in returns[1:]:
            value = meet(value, other)
        return value, True, out

    def delegate(self, target: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        """The method of `self` or function of the module that `yield from target` runs."""
        method = delegated(target, self.scope(), self.methods, self.functions)
        if method is None or method in self.active or len(self.active) > self.depth_limit:
            return None
        return method

    def followed(self, func: Optional[cst.FunctionDef]) -> bool:
        """Whether a call of `func` (a plain function, not a generator) is run here."""
        return (func is not None and func not in self.active and len(self.active) <= self.depth_limit
                and not any(isinstance(n, cst.Yield) for n in syntax.walk(func.body)))

    def in_place(self, node: cst.CSTNode) -> Optional[cst.BaseExpression]:
        """The tensor an in-place method call changes (`out.add_(skip)`), when it is a name."""
        func = node.func  # type: ignore[attr-defined]
        if (type(func) is cst.Attribute and func.attr.value.endswith("_") and not func.attr.value.endswith("__")
                and self.key(func.value) is not None):
            return func.value
        return None

    def call(self, node: cst.Call, env: Env) -> Value:
        func = node.func
        args = [self.eval(arg.value, env) for arg in node.args]
        if any(arg.star for arg in node.args):
            return unknown_call(args)
        positional, keywords = arguments(node, args)
        # self.<layer>(x), self.<method>(x), self.<container>[i](x)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            attr = func.attr.value
            method = self.methods.get(attr)
            held = self.attributes.submodules.get(attr)
            if held is not None:
                return self.submodule_call(held, "forward", args, positional, keywords)
            if method is not None and attr not in self.attributes.kinds:
                if self.followed(method) and bindable(method, len(positional), keywords, bound=True):
                    result, returned, _ = self.run(method, positional, keywords=keywords)
                    return result if returned else NOTHING
                return unknown_call(args)
            # a torch.nn layer's result is no command where its arguments are none
            kind = self.attributes.kinds.get(attr)
            known = kind is not None and kind not in _CONTAINERS and all(arg.plain for arg in args)
            return plain(self.layer_call(node, attr, None, args), known)
        if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute)
                and isinstance(func.value.value, cst.Name) and func.value.value.value == "self"):
            held = self.attributes.submodules.get(func.value.attr.value)
            if held is None:
                return unknown_call(args)  # a method of something `self` holds: not a tensor's
            inner = self.attributes_of(held)
            if func.attr.value in inner.kinds:
                return self.layer_call(node, func.attr.value, None, args, inner)
            return self.submodule_call(held, func.attr.value, args, positional, keywords)
        if (isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute)
                and isinstance(func.value.value, cst.Name) and func.value.value.value == "self"):
            key = syntax.string_value(func.slice[0].slice.value) if (
                len(func.slice) == 1 and isinstance(func.slice[0].slice, cst.Index)) else None
            return self.layer_call(node, func.value.attr.value, key if key is not None else constant_index(func), args)
        owner = self.scope().owner(func.value) if isinstance(func, cst.Name) and func.value not in env else None
        if owner is not None and owner.kind == "module" and isinstance(func, cst.Name):
            function = self.functions.get(func.value)
            if self.followed(function) and bindable(function, len(positional), keywords,  # type: ignore[arg-type]
                                                    bound=False):
                result, returned, _ = self.run(function, positional, bound=False,  # type: ignore[arg-type]
                                               keywords=keywords)
                return result if returned else NOTHING
        qualified = self.scope().qualified(func)
        if qualified is not None and qualified.startswith("torch."):
            name = qualified.rsplit(".", 1)[-1]
            result = plain(self.operation(node, name, args, unknown_saves=True), self.scope().api(func) is None)
            return viewed(result, name) if qualified == "torch." + name else result  # not F.unfold
        found = self.imported_function(func)
        if found is not None and self.followed(found[1]) and bindable(found[1], len(positional), keywords,
                                                                      bound=False):
            return self.imported_call(found, positional, keywords)
        changed = self.in_place(node)
        if changed is not None and qualified is None:
            name = func.attr.value  # type: ignore[attr-defined]
            receiver = self.eval(changed, env)
            result = self.operation(node, name[:-1], [receiver, *args], unknown_saves=True)
            if name == "requires_grad_":
                result = receiver if not node.args or truth(node.args[0].value) is not False else NOTHING
            result = plain(result, receiver.plain)  # in place: the same object
            self.assign(changed, self.grad_off(result), env)
            return result
        if isinstance(func, cst.Attribute) and qualified is None:  # a method of a tensor
            name = func.attr.value
            receiver = self.eval(func.value, env)
            result = plain(self.operation(node, name, [receiver, *args], unknown_saves=True), receiver.plain)
            return viewed(result, name)
        return unknown_call(args)

    def attributes_of(self, cls: str) -> Attributes:
        found = self._attributes_of.get(cls)
        if found is None:
            found = torch_layers(self.classes[cls], self.scope_of, self.classes)
            self._attributes_of[cls] = found
        return found

    def imported_function(self, func: cst.BaseExpression) -> Optional[ImportedFunction]:
        """The function of another module of the project that `func` names, if it is one."""
        qualified = self.scope().qualified(func)
        found = self.imported(self.path, qualified) if qualified is not None and self.imported is not None else None
        if found is None or found[1] in self.active or len(self.active) > self.depth_limit:
            return None
        return found

    def imported_call(self, found: ImportedFunction, args: Sequence[Value],
                      keywords: Optional[Mapping[str, Value]] = None) -> Value:
        """A call of a function of another module of the project: run in that module."""
        path, function, scopes, functions = found
        outer = self.path, self.scope_of, self.functions, self.methods, self.attributes, self.classes
        self.path, self.scope_of, self.functions = path, scopes, functions
        self.methods, self.attributes, self.classes = {}, torch_layers({}, scopes), {}
        try:
            result, returned, _ = self.run(function, args, bound=False, keywords=keywords)
        finally:
            self.path, self.scope_of, self.functions, self.methods, self.attributes, self.classes = outer
        return result if returned else NOTHING

    def submodule_call(self, cls: str, name: str, args: Sequence[Value], positional: Sequence[Value],
                       keywords: Mapping[str, Value]) -> Value:
        """`self.<attr>(...)` (its forward) or `self.<attr>.<method>(...)` of an instance of a class
        of the module: run with that class's methods and attributes."""
        method = self.classes[cls].get(name)
        if method is None or not self.followed(method) or not bindable(method, len(positional), keywords, bound=True):
            return unknown_call(args)
        outer = self.methods, self.attributes
        self.methods, self.attributes = self.classes[cls], self.attributes_of(cls)
        try:
            result, returned, _ = self.run(method, positional, keywords=keywords)
        finally:
            self.methods, self.attributes = outer
        return result if returned else NOTHING

    def layer_call(self, node: cst.Call, attr: str, index: Union[int, str, None], args: Sequence[Value],
                   attributes: Optional[Attributes] = None) -> Value:
        """A call of a torch.nn layer that __init__ stores (`index`: of a container's child)."""
        attributes = attributes or self.attributes
        kinds = attributes.called(attr, index)
        if kinds is None:
            return unknown_call(args)
        value = union(args)
        frozen = attr in attributes.frozen or attributes.all_frozen
        for kind in kinds:
            if kind in PARAM_LAYERS:
                value = saving(node, (value,), NO if frozen else YES)
            elif kind in SAVING_LAYERS:
                value = saving(node, (value,))
            elif kind not in PASSING_LAYERS:
                return unknown_call(args)
        return value

    def operation(self, node: cst.CSTNode, name: str, args: Sequence[Value], unknown_saves: bool = False) -> Value:
        if name in BREAKING:
            return NOTHING
        if name in PASSING:
            return union(args)
        if name in SAVING or unknown_saves:
            return saving(node, args)
        return NOTHING


def viewed(result: Value, name: str) -> Value:
    """The result of torch's operation `name` (not in place): certainly a view for a view operation,
    maybe one for an operation that may return a view, its operand itself or a copy, or for one
    skiplint does not know; a new tensor for the others."""
    if name in VIEWS:
        return dataclasses.replace(result, view=YES)
    known = name in SAVING or name in PASSING or name in BREAKING
    return dataclasses.replace(result, view=MAY) if name in MAY_VIEWS or not known else result


#: torch.nn classes whose call may return whatever their children (or forward) return.
_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "Module", "Identity", "ParameterList",
                         "ParameterDict"})
