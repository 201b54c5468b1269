"""The statement-level pass over a module: its scopes (imports and other bindings), its classes
and functions, its imports, and the calls that stand as whole statements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

import libcst as cst

from skiplint.apiimports import NO_ALIASES, Aliases
from skiplint.facts import Kind
from skiplint.imports import OTHER, Binding, Scope, import_bindings

if TYPE_CHECKING:
    from skiplint.gradflow import FunctionResolver


_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    outer: Scope  # the scope the class statement runs in
    body: Scope   # the class body's scope
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)


class ModuleIndex:
    """Scopes, classes, functions, imports and candidate statements of one module (one pass)."""

    def __init__(self, module: cst.Module, aliases: Aliases = NO_ALIASES) -> None:
        self.module = module
        self.scope = Scope("module", None, table=aliases.table)
        self.scopes: dict[int, Scope] = {}  # id(FunctionDef) -> its scope
        self.classes: list[ClassInfo] = []
        self.functions: list[tuple[cst.FunctionDef, Scope]] = []
        self.imports: list[tuple[cst.Import | cst.ImportFrom, bool]] = []  # (stmt, guarded)
        #: Calls that stand as a whole statement or a whole assigned/returned value.
        self.statement_calls: list[tuple[cst.Call, Scope, cst.BaseSmallStatement]] = []
        #: Lambdas that stand as a whole assigned/returned value (class factories).
        self.statement_lambdas: list[tuple[cst.Lambda, Scope]] = []
        self.assign_count: dict[str, int] = {}
        #: id(ClassDef) -> (its info, its skippable(...) call), filled by `extract`.
        self.skippable_calls: dict[int, tuple[ClassInfo, cst.Call]] = {}
        self.constants: dict[str, cst.BaseExpression] = {}
        #: id(function or class scope) -> (the names it declares `global`, those it declares
        #: `nonlocal`): what that scope binds to those names binds them in the module's scope or
        #: in the enclosing function's.
        self.declarations: dict[int, tuple[set[str], set[str]]] = {}
        #: id(function or class scope) -> (its def or class statement, the scope that runs it).
        self.scope_defs: dict[int, tuple[cst.FunctionDef | cst.ClassDef, Scope]] = {}
        #: (scope, name, binding) of each binding of a `nonlocal` name, bound in its owner at the end.
        self._nonlocal_bindings: list[tuple[Scope, str, Binding]] = []
        self._top_level: Optional[tuple[dict[str, cst.FunctionDef], dict[str, dict[str, cst.FunctionDef]]]] = None
        #: The module's path and what finds the project functions it imports (set by `extract`).
        self.imported: Optional[tuple[str, FunctionResolver]] = None
        self._block(module.body, self.scope, guarded=False)
        for scope, name, binding in self._nonlocal_bindings:
            owner = nonlocal_owner(scope, name)
            if owner is not None:
                owner.bind(name, binding)
        self.constants = {k: v for k, v in self.constants.items() if self.assign_count.get(k) == 1}

    def top_level(self) -> tuple[dict[str, cst.FunctionDef], dict[str, dict[str, cst.FunctionDef]]]:
        """The module-level functions, and the methods of the module-level classes, by name (each
        name bound once in the module)."""
        if self._top_level is None:
            once = {name for name, bindings in self.scope.bindings.items() if len(bindings) == 1}
            functions = {stmt.name.value: stmt for stmt in self.module.body
                         if type(stmt) is cst.FunctionDef and stmt.name.value in once}
            classes = {info.node.name.value: info.methods for info in self.classes
                       if info.outer is self.scope and info.node.name.value in once}
            self._top_level = functions, classes
        return self._top_level

    def _bind(self, scope: Scope, name: str, binding: Binding) -> Scope:
        """Bind `name` from `scope`: in the scope it belongs to (the module for a `global` name;
        the enclosing function's, at the end of the pass, for a `nonlocal` one). That scope."""
        declared = self.declarations.get(id(scope)) if self.declarations else None
        if declared is not None:
            if name in declared[0]:
                scope = self.scope
            elif name in declared[1]:
                self._nonlocal_bindings.append((scope, name, binding))
                return scope
        scope.bind(name, binding)
        return scope

    # -- the pass --------------------------------------------------------------------------
    def _block(self, stmts: Sequence[cst.CSTNode], scope: Scope, guarded: bool) -> None:
        for stmt in stmts:
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    self._small(small, scope, guarded)
            elif isinstance(stmt, cst.BaseCompoundStatement):
                self._compound(stmt, scope, guarded)

    def _suite(self, suite: cst.BaseSuite, scope: Scope, guarded: bool) -> None:
        if isinstance(suite, cst.SimpleStatementSuite):
            for small in suite.body:
                self._small(small, scope, guarded)
        else:
            self._block(suite.body, scope, guarded)

    def _small(self, small: cst.BaseSmallStatement, scope: Scope, guarded: bool) -> None:
        # node types compared by identity: see _BINDING_NODES
        if type(small) is cst.Import or type(small) is cst.ImportFrom:
            for local, qual in import_bindings(small):
                self._bind(scope, local, qual)
            self.imports.append((small, guarded))
        elif type(small) is cst.Global or type(small) is cst.Nonlocal:
            if scope is not self.scope:  # `global` at module level changes nothing
                declared = self.declarations.setdefault(id(scope), (set(), set()))
                declared[type(small) is cst.Nonlocal].update(item.name.value for item in small.names)
        elif type(small) is cst.Assign:
            for target in small.targets:
                self._bind_target(target.target, scope)
            if scope is self.scope and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                self.constants[small.targets[0].target.value] = small.value
            if type(small.value) is cst.Call:
                self.statement_calls.append((small.value, scope, small))
            elif type(small.value) is cst.Lambda:
                self.statement_lambdas.append((small.value, scope))
        elif type(small) is cst.AnnAssign:
            self._bind_target(small.target, scope)
            if scope is self.scope and type(small.target) is cst.Name and small.value is not None:
                self.constants[small.target.value] = small.value
        elif type(small) is cst.AugAssign:
            self._bind_target(small.target, scope)
            if type(small.target) is cst.Name and scope is self.scope:
                self.assign_count[small.target.value] = 2  # not a constant
        elif (type(small) is cst.Expr or type(small) is cst.Return) and type(small.value) is cst.Call:
            self.statement_calls.append((small.value, scope, small))
        elif type(small) is cst.Return and type(small.value) is cst.Lambda:
            self.statement_lambdas.append((small.value, scope))

    def _bind_target(self, target: cst.BaseExpression, scope: Scope) -> None:
        if type(target) is cst.Name:
            if self._bind(scope, target.value, OTHER) is self.scope:
                self.assign_count[target.value] = self.assign_count.get(target.value, 0) + 1
        elif type(target) is cst.Tuple or type(target) is cst.List:
            for element in target.elements:
                self._bind_target(element.value, scope)
        elif type(target) is cst.StarredElement:
            self._bind_target(target.value, scope)

    def _compound(self, stmt: cst.BaseCompoundStatement, scope: Scope, guarded: bool) -> None:
        if type(stmt) is cst.FunctionDef:
            self._bind_target(stmt.name, scope)
            inner = Scope("function", scope)
            self.scope_defs[id(inner)] = (stmt, scope)
            params = stmt.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                inner.bind(param.name.value, OTHER)
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    inner.bind(star.name.value, OTHER)
            self.scopes[id(stmt)] = inner
            self.functions.append((stmt, scope))
            self._suite(stmt.body, inner, guarded=False)
        elif type(stmt) is cst.ClassDef:
            self._bind_target(stmt.name, scope)
            body = Scope("class", scope)
            self.scope_defs[id(body)] = (stmt, scope)
            info = ClassInfo(stmt, scope, body)
            if isinstance(stmt.body, cst.IndentedBlock):
                for item in stmt.body.body:
                    if type(item) is cst.FunctionDef:
                        info.methods[item.name.value] = item
            self.classes.append(info)
            self._suite(stmt.body, body, guarded=False)
        elif type(stmt) is cst.Try or type(stmt) is cst.TryStar:
            catches = any(_catches_import_error(h) for h in stmt.handlers)
            self._suite(stmt.body, scope, guarded or catches)
            for handler in stmt.handlers:
                if handler.name is not None:
                    self._bind_target(handler.name.name, scope)
                self._suite(handler.body, scope, guarded)
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None:
                    self._suite(extra.body, scope, guarded)
        elif type(stmt) is cst.For or type(stmt) is cst.While or type(stmt) is cst.If:
            if type(stmt) is cst.For:
                self._bind_target(stmt.target, scope)
            self._suite(stmt.body, scope, guarded)
            orelse = stmt.orelse
            while orelse is not None:
                if type(orelse) is cst.If:
                    self._suite(orelse.body, scope, guarded)
                    orelse = orelse.orelse
                else:
                    self._suite(orelse.body, scope, guarded)
                    orelse = None
        elif type(stmt) is cst.With:
            for with_item in stmt.items:
                if with_item.asname is not None:
                    self._bind_target(with_item.asname.name, scope)
            self._suite(stmt.body, scope, guarded)
        elif type(stmt) is cst.Match:
            for case in stmt.cases:
                self._suite(case.body, scope, guarded)


def nonlocal_owner(scope: Scope, name: str) -> Optional[Scope]:
    """The function scope that a `nonlocal name` of `scope` refers to: the nearest enclosing
    function scope that binds it (class scopes skipped), None when there is none."""
    outer = scope.parent
    while outer is not None and outer.kind != "module":
        if outer.kind == "function" and name in outer.bindings:
            return outer
        outer = outer.parent
    return None


def command_kind(symbol: Optional[str]) -> Optional[Kind]:
    """'stash'/'pop' when an API symbol is one of the two commands."""
    if symbol == "stash":
        return "stash"
    if symbol == "pop":
        return "pop"
    return None


def _catches_import_error(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for item in types:
        node = item.value if isinstance(item, cst.Element) else item
        name = node.attr.value if isinstance(node, cst.Attribute) else getattr(node, "value", None)
        if name in _IMPORT_ERRORS:
            return True
    return False
