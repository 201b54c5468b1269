"""Values known not to be stash/pop commands (what SKP108 reports a yield of), followed through
the names a forward binds."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from skiplint import syntax
from skiplint.gradflow.attributes import assignment_targets
from skiplint.imports import Scope, import_bindings
from skiplint.limits import MAX_DELEGATION
from skiplint.skippables.index import ClassInfo, ModuleIndex


#: The nodes that bind a function's local names (`_bindings`). Concrete libcst node classes have no
#: subclasses, so the hot walks compare a node's type by identity: isinstance against libcst's
#: ABCMeta classes costs a Python-level __instancecheck__ call per miss.
_BINDING_NODES = frozenset({
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.WithItem, cst.NamedExpr, cst.Global,
    cst.Nonlocal, cst.Import, cst.ImportFrom, cst.FunctionDef, cst.ClassDef, cst.ExceptHandler, cst.Del,
    cst.MatchAs, cst.MatchStar})


class KnownValues:
    """Values known not to be stash/pop commands (what SKP108 reports a yield of): follows a
    local name through the values assigned to it in its function."""

    def __init__(self, index: ModuleIndex, info: ClassInfo, forward: cst.FunctionDef,
                 command_vars: set[str]) -> None:
        self.index = index
        self.info = info
        self.forward = forward
        #: Names bound to a command that is yielded later (shared with Commands, which fills it).
        self.command_vars = command_vars
        self._bindings_cache: dict[int, dict[str, Optional[list[cst.CSTNode]]]] = {}

    def known(self, node: cst.CSTNode, scope: Scope, func: cst.FunctionDef,
              visiting: frozenset[str], depth: int = 0) -> bool:
        """Whether `node` is known not to be a stash/pop command: a literal or arithmetic, the
        forward's input (never rebound to anything else), a local bound only to such values, an
        attribute, item or method call of one, a torch function, or a call of a torch.nn layer
        that __init__ stores on self. Anything else may be a command."""
        if depth > MAX_DELEGATION:
            return False
        if isinstance(node, cst.AugAssign) or (
                isinstance(node, cst.BaseExpression) and non_command(node, self.index.module) is not None):
            return True
        if isinstance(node, cst.Name):
            name = node.value
            if name in visiting:
                return True  # `x = x.relu()`: the other bindings of x decide
            bindings = self._bindings(func).get(name, [])
            if bindings is None or name in self.command_vars:
                return False
            params = _positional_names(func)
            if name in params or name in _other_params(func):
                if func is not self.forward or params[1:2] != [name]:
                    return False  # only the forward's input is known: Skippable passes a tensor
            elif not bindings:
                return False  # a global, a closure variable, a builtin
            return all(self.known(value, scope, func, visiting | {name}, depth + 1) for value in bindings)
        if isinstance(node, (cst.Attribute, cst.Subscript)):
            return self.known(node.value, scope, func, visiting, depth + 1)
        if isinstance(node, cst.Call):
            callee = node.func
            if scope.api(callee) is not None:
                return False
            if isinstance(callee, cst.Attribute):
                if isinstance(callee.value, cst.Name) and callee.value.value == "self":
                    return self._torch_layer(callee.attr.value) and all(
                        self.known(arg.value, scope, func, visiting, depth + 1) for arg in node.args)
                if self.known(callee.value, scope, func, visiting, depth + 1):
                    return True  # a method of a tensor
            qualified = scope.qualified(callee)
            return qualified is not None and qualified.startswith("torch.")
        return False

    def _bindings(self, func: cst.FunctionDef) -> dict[str, Optional[list[cst.CSTNode]]]:
        """Local name -> the values assigned to it in `func`; None when some binding is not a
        plain assignment (a loop target, `with ... as`, a walrus, global, import, ...)."""
        cached = self._bindings_cache.get(id(func))
        if cached is not None:
            return cached
        out: dict[str, Optional[list[cst.CSTNode]]] = {}

        def add(name: str, value: Optional[cst.CSTNode]) -> None:
            if name in out and out[name] is None:
                return
            if value is None:
                out[name] = None
            else:
                found = out.setdefault(name, [])
                assert found is not None
                found.append(value)

        for node in syntax.walk(func.body):
            if type(node) not in _BINDING_NODES:
                continue
            if type(node) is cst.Assign:
                for target in node.targets:
                    if type(target.target) is cst.Name:
                        add(target.target.value, node.value)
                    else:
                        for name in _target_names(target.target):
                            add(name, None)
            elif type(node) is cst.AnnAssign:
                if node.value is not None:
                    for name in _target_names(node.target):
                        add(name, node.value if type(node.target) is cst.Name else None)
            elif type(node) is cst.AugAssign:
                for name in _target_names(node.target):
                    add(name, node)
            elif type(node) is cst.For or type(node) is cst.CompFor:
                for name in _target_names(node.target):
                    add(name, None)
            elif type(node) is cst.WithItem:
                if node.asname is not None:
                    for name in _target_names(node.asname.name):
                        add(name, None)
            elif type(node) is cst.NamedExpr or type(node) is cst.Del:
                for name in _target_names(node.target):
                    add(name, None)
            elif type(node) is cst.Global or type(node) is cst.Nonlocal:
                for item in node.names:
                    add(item.name.value, None)
            elif type(node) is cst.Import or type(node) is cst.ImportFrom:
                for local, _qualified in import_bindings(node):
                    add(local, None)
            elif type(node) is cst.FunctionDef or type(node) is cst.ClassDef:
                add(node.name.value, None)
            elif type(node) is cst.ExceptHandler:
                if node.name is not None:
                    for name in _target_names(node.name.name):
                        add(name, None)
            elif type(node) is cst.MatchAs or type(node) is cst.MatchStar:
                if node.name is not None:
                    add(node.name.value, None)
        self._bindings_cache[id(func)] = out
        return out

    def _torch_layer(self, attr: str) -> bool:
        """Whether `self.<attr>` is a torch.nn layer (not a container) that only __init__ assigns."""
        values: list[tuple[cst.BaseExpression, cst.FunctionDef]] = []
        for method in self.info.methods.values():
            for node in syntax.walk(method.body):
                for target in assignment_targets(node):
                    if any(isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self"
                           and n.attr.value == attr for n in syntax.walk(target)):
                        if method.name.value != "__init__" or not isinstance(node, cst.Assign) or target is not \
                                node.targets[0].target or len(node.targets) != 1 or node.value is None:
                            return False
                        values.append((node.value, method))
        if len(values) != 1:
            return False
        value, init = values[0]
        if not isinstance(value, cst.Call):
            return False
        qualified = self.index.scopes[id(init)].qualified(value.func)
        return (qualified is not None and qualified.startswith("torch.nn.")
                and qualified.rsplit(".", 1)[-1] not in _TORCH_CONTAINERS)


_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
             cst.FormattedString, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp,
             cst.DictComp, cst.GeneratorExp, cst.Lambda)


_EXPRESSIONS = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation)


def non_command(value: Optional[cst.BaseExpression], module: cst.Module) -> Optional[str]:
    """How to describe a yielded value that cannot be a command by its form; None when it might be one."""
    if value is None:
        return "nothing (a bare yield)"
    if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
        return value.value
    if isinstance(value, _LITERALS + _EXPRESSIONS):
        return describe(value, module)
    return None


def describe(value: cst.BaseExpression, module: cst.Module) -> str:
    code = module.code_for_node(value)
    if len(code) > 40 or "\n" in code:
        code = code.splitlines()[0][:37] + "..."
    return f"'{code}'"


#: torch.nn classes whose call may return whatever their children return.
_TORCH_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "Module", "Identity", "ParameterList",
                               "ParameterDict"})


def _positional_names(func: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*func.params.posonly_params, *func.params.params)]


def _other_params(func: cst.FunctionDef) -> list[str]:
    params = func.params
    names = [p.name.value for p in params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return names


def _target_names(target: cst.CSTNode) -> list[str]:
    """Names an assignment target binds (not the attributes or items it stores into)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []
