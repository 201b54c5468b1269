"""Names rebound from another scope: `global` and `nonlocal`.

A function that declares `nonlocal name` (or `global name`) and assigns it rebinds a variable of
the enclosing function's frame (of the module's), wherever and whenever it is called. The
interpreter follows such a rebinder only where every call of it is known: a function defined by
a plain `def` statement at the top level of the body of the frame whose variable it rebinds (the
module's body for `global`), undecorated, and named there only as the callee of direct calls in
that same body (not in a nested function, class, lambda or comprehension, which may run at
another time). Its assignments then land in that frame, when it runs; in a branch under an
unknown condition, after a possible return, from a function run on its own (a builder nobody in
the module calls) or when the call is not run, the variable becomes unknown. Every other
rebinding (a rebinder that is returned, stored, passed on or called from nested code; a method
or a class body that declares the name) leaves the variable unknown in that frame for its whole
run, so that what is read of it abstains.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from skiplint import syntax
from skiplint.imports import Scope
from skiplint.skippables import ModuleIndex, nonlocal_owner

#: Nodes whose code runs at another time than the statement that holds them, or not at all.
_LATER = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
                    cst.GeneratorExp})


class Rebinding:
    """What a module's `global` and `nonlocal` declarations rebind, and which the interpreter follows."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        #: id(scope) -> (names it declares global, names it declares nonlocal).
        self.declared = index.declarations
        #: id(function node) -> [(name, owner scope)] for a rebinder that is followed.
        self.followed: dict[int, list[tuple[str, Scope]]] = {}
        #: id(owner scope) -> names that some rebinder that is not followed may rebind.
        self.unknowable: dict[int, set[str]] = {}
        for scope_id, (globals_, nonlocals) in index.declarations.items():
            node, defined_in = index.scope_defs[scope_id]
            scope = index.scopes.get(id(node)) if isinstance(node, cst.FunctionDef) else None
            targets: list[tuple[str, Scope]] = [(name, index.scope) for name in sorted(globals_)]
            for name in sorted(nonlocals):
                owner = nonlocal_owner(scope, name) if scope is not None else _class_owner(index, scope_id, name)
                if owner is not None:
                    targets.append((name, owner))
            for name, owner in targets:
                if (isinstance(node, cst.FunctionDef) and owner is defined_in
                        and self._called_only_directly(node, defined_in)):
                    self.followed.setdefault(id(node), []).append((name, owner))
                else:
                    self.unknowable.setdefault(id(owner), set()).add(name)

    def kind(self, scope: Scope, name: str) -> Optional[str]:
        """'global' or 'nonlocal' when `scope` declares `name` so, else None."""
        declared = self.declared.get(id(scope))
        if declared is None:
            return None
        if name in declared[0]:
            return "global"
        return "nonlocal" if name in declared[1] else None

    def owner(self, scope: Scope, name: str) -> Optional[Scope]:
        """The scope whose variable `name` is, as `scope` assigns it."""
        kind = self.kind(scope, name)
        if kind == "global":
            return self.index.scope
        return nonlocal_owner(scope, name) if kind == "nonlocal" else scope

    def _called_only_directly(self, node: cst.FunctionDef, defined_in: Scope) -> bool:
        """Whether `node` is a plain def at the top level of the body of the code that runs
        `defined_in`, named there only as the callee of direct calls outside nested code."""
        if node.decorators:
            return False
        if defined_in is self.index.scope:
            body: cst.CSTNode = self.index.module
            statements: tuple[cst.CSTNode, ...] = tuple(self.index.module.body)
        else:
            found = self.index.scope_defs.get(id(defined_in))
            if found is None or not isinstance(found[0], cst.FunctionDef):
                return False
            body = found[0].body
            statements = syntax.statements(found[0].body)
        if not any(stmt is node for stmt in statements):
            return False
        name = node.name.value
        pending: list[tuple[cst.CSTNode, bool]] = [(body, False)]
        while pending:
            current, later = pending.pop()
            if type(current) is cst.Name:
                if current.value == name:
                    return False  # named otherwise than as a callee: it may run at any time
                continue
            if type(current) is cst.Call and type(current.func) is cst.Name and current.func.value == name:
                if later:
                    return False
                pending.extend((child, later) for child in syntax.children(current) if child is not current.func)
                continue
            if current is node:
                pending.extend((child, True) for child in syntax.children(current) if child is not node.name)
                continue
            if type(current) is cst.Attribute:
                pending.append((current.value, later))  # `.name` is an attribute, not the function
                continue
            nested = later or type(current) in _LATER
            pending.extend((child, nested) for child in syntax.children(current))
        return True


def _class_owner(index: ModuleIndex, scope_id: int, name: str) -> Optional[Scope]:
    """The function scope that a class body's `nonlocal name` refers to."""
    node, defined_in = index.scope_defs[scope_id]
    probe = Scope("class", defined_in)
    return nonlocal_owner(probe, name)
