"""The skip names a class declares (`@skippable(stash=..., pop=...)`) and the arguments a
command is given: strings the code spells, or constants it binds once."""

from __future__ import annotations

from typing import Callable, Optional, Union

import libcst as cst

from skiplint import syntax
from skiplint.facts import Declaration, Declared, Kind, Locator, Site
from skiplint.imports import Scope
from skiplint.skippables.index import ModuleIndex


#: What one specialization of a class (a factory's arguments, a loop's variable) knows of a name
#: the class reads: its string, or the strings of a list/tuple; None when it cannot be known.
Resolved = Union[str, tuple[str, ...], None]


NameResolver = Callable[[cst.BaseExpression, Scope], Resolved]


class _Unknown(Exception):
    """A declaration or name that is computed at run time."""


def _resolve_constant(index: ModuleIndex, scope: Scope, node: cst.Name) -> Optional[cst.BaseExpression]:
    """The value of a module-level constant, when `node` refers to one from `scope`."""
    bindings = scope.lookup(node.value)
    if bindings is None or bindings is not index.scope.bindings.get(node.value):
        return None
    return index.constants.get(node.value)


def static_string(index: ModuleIndex, scope: Scope, node: cst.BaseExpression,
                  resolve: Optional[NameResolver] = None) -> Optional[str]:
    """A string literal, or a module constant bound to one, or (given `resolve`) a name that one
    specialization of the class binds to a string."""
    value = syntax.string_value(node)
    if value is None and isinstance(node, cst.Name):
        const = _resolve_constant(index, scope, node)
        if const is not None:
            value = syntax.string_value(const)
    if value is None and resolve is not None and isinstance(node, (cst.Name, cst.Attribute)):
        resolved = resolve(node, scope)
        if isinstance(resolved, str):
            value = resolved
    return value


def _declared_names(index: ModuleIndex, scope: Scope, node: cst.BaseExpression, site_node: cst.CSTNode,
                    locator: Locator, resolve: Optional[NameResolver], depth: int = 0) -> list[Declared]:
    """Names in a declaration sequence; raises _Unknown for anything computed."""
    if depth > 8:
        raise _Unknown
    if isinstance(node, cst.Name):
        const = _resolve_constant(index, scope, node)
        if const is not None:
            return _declared_names(index, scope, const, site_node, locator, resolve, depth + 1)
        resolved = resolve(node, scope) if resolve is not None else None
        if not isinstance(resolved, tuple):
            raise _Unknown
        return [Declared(value, Site(node if depth == 0 else site_node, locator)) for value in resolved]
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        names: list[Declared] = []
        for element in node.elements:
            if isinstance(element, cst.StarredElement):
                names.extend(_declared_names(index, scope, element.value, site_node, locator, resolve, depth + 1))
                continue
            value = static_string(index, scope, element.value, resolve)
            if value is None:
                raise _Unknown
            where = element.value if depth == 0 else site_node
            names.append(Declared(value, Site(where, locator)))
        return names
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return (_declared_names(index, scope, node.left, site_node, locator, resolve, depth + 1)
                + _declared_names(index, scope, node.right, site_node, locator, resolve, depth + 1))
    raise _Unknown


def declaration(index: ModuleIndex, scope: Scope, kind: Kind, node: Optional[cst.BaseExpression],
                locator: Locator, resolve: Optional[NameResolver] = None) -> Declaration:
    if node is None:
        return Declaration(kind, ())
    site = Site(node, locator)
    bare = static_string(index, scope, node, resolve)
    if bare is not None:
        return Declaration(kind, (Declared(bare, site),), site, bare_string=bare)
    try:
        return Declaration(kind, tuple(_declared_names(index, scope, node, node, locator, resolve)), site)
    except _Unknown:
        return Declaration(kind, None, site)


def skippable_arguments(call: cst.Call) -> Optional[dict[str, Optional[cst.BaseExpression]]]:
    """The stash/pop argument expressions of a skippable(...) call; None if they cannot be known."""
    found: dict[str, Optional[cst.BaseExpression]] = {"stash": None, "pop": None}
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if position > 1:
                return None
            found[("stash", "pop")[position]] = arg.value
            position += 1
        elif arg.keyword.value in found:
            found[arg.keyword.value] = arg.value
        else:
            return None
    return found


def arity_problem(kind: Kind, call: cst.Call) -> tuple[Optional[str], dict[str, cst.BaseExpression], bool]:
    """(problem, the arguments bound to `name` and `tensor`, arguments knowable) for a stash/pop call."""
    params = ("name", "tensor") if kind == "stash" else ("name",)
    bound: dict[str, cst.BaseExpression] = {}
    positional = 0
    for arg in call.args:
        if arg.star:
            return None, {}, False
        if arg.keyword is None:
            if positional < len(params):
                bound[params[positional]] = arg.value
            positional += 1
        else:
            key = arg.keyword.value
            if key not in params:
                return f"got an unexpected keyword argument '{key}'", bound, True
            bound[key] = arg.value
    if positional > len(params):
        expected = "a name and a tensor" if kind == "stash" else "only the skip name"
        return f"takes {expected}, but {positional} arguments were given", bound, True
    if "name" not in bound:
        return "is missing the skip name", bound, True
    if kind == "stash" and "tensor" not in bound:
        return "is missing the tensor to stash: write stash(name, tensor)", bound, True
    return None, bound, True
