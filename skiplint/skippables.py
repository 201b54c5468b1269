"""Extract the facts of a module's @skippable classes from a libcst tree.

One statement-level pass builds the scopes (imports and other bindings) and finds every class,
function and import; expressions are walked only inside the forwards and helpers of classes that
use the API, and at the few statements that can hold a command.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

import libcst as cst

from skiplint import gradflow, syntax
from skiplint.facts import (
    Brought, Command, Declaration, Declared, Forward, IsolateName, Key, Kind, Locator, ModuleFacts,
    NonCommandYield, RemovedImport, Site, SkippableClass, SkippableMisuse, UndecoratedYield,
)
from skiplint.imports import OTHER, Binding, Scope, dotted_name, import_bindings, removed_module
from skiplint.limits import BUDGET

#: Beyond this many distinct paths, forward's path facts are given up (abstain).
MAX_STATES = 256
#: Beyond this depth of `yield from` delegation, facts are given up.
MAX_DELEGATION = 8

#: What one specialization of a class (a factory's arguments, a loop's variable) knows of a name
#: the class reads: its string, or the strings of a list/tuple; None when it cannot be known.
Resolved = Union[str, tuple[str, ...], None]
NameResolver = Callable[[cst.BaseExpression, Scope], Resolved]

_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    outer: Scope  # the scope the class statement runs in
    body: Scope   # the class body's scope
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)


class ModuleIndex:
    """Scopes, classes, functions, imports and candidate statements of one module (one pass)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.scope = Scope("module", None)
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
        self._block(module.body, self.scope, guarded=False)
        for scope, name, binding in self._nonlocal_bindings:
            owner = nonlocal_owner(scope, name)
            if owner is not None:
                owner.bind(name, binding)
        self.constants = {k: v for k, v in self.constants.items() if self.assign_count.get(k) == 1}

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


def _command_kind(symbol: Optional[str]) -> Optional[Kind]:
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


# -- values known statically ---------------------------------------------------------------------

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


def _declaration(index: ModuleIndex, scope: Scope, kind: Kind, node: Optional[cst.BaseExpression],
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


def _skippable_arguments(call: cst.Call) -> Optional[dict[str, Optional[cst.BaseExpression]]]:
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


# -- commands inside forward ---------------------------------------------------------------------

def _arity_problem(kind: Kind, call: cst.Call) -> tuple[Optional[str], dict[str, cst.BaseExpression], bool]:
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


@dataclass
class _Event:
    """Something that happens while a statement runs: a command, a delegation, a branch."""

    kind: str  # "cmd" | "delegate" | "unknown" | "maybe"
    command: Optional[Command] = None
    call: Optional[cst.CSTNode] = None
    method: Optional[cst.FunctionDef] = None
    inner: list["_Event"] = field(default_factory=list)


class _TooManyPaths(Exception):
    pass


@dataclass
class _Paths:
    normal: set[frozenset[Key]] = field(default_factory=set)
    returns: set[frozenset[Key]] = field(default_factory=set)
    breaks: set[frozenset[Key]] = field(default_factory=set)
    continues: set[frozenset[Key]] = field(default_factory=set)


#: The nodes that bind a function's local names (`_bindings`). Concrete libcst node classes have no
#: subclasses, so the hot walks compare a node's type by identity: isinstance against libcst's
#: ABCMeta classes costs a Python-level __instancecheck__ call per miss.
_BINDING_NODES = frozenset({
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.WithItem, cst.NamedExpr, cst.Global,
    cst.Nonlocal, cst.Import, cst.ImportFrom, cst.FunctionDef, cst.ClassDef, cst.ExceptHandler, cst.Del,
    cst.MatchAs, cst.MatchStar})

_BRANCHING = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)


class _KnownValues:
    """Values known not to be stash/pop commands (what SKP108 reports a yield of): follows a
    local name through the values assigned to it in its function."""

    def __init__(self, index: ModuleIndex, info: ClassInfo, forward: cst.FunctionDef,
                 command_vars: set[str]) -> None:
        self.index = index
        self.info = info
        self.forward = forward
        #: Names bound to a command that is yielded later (shared with _Commands, which fills it).
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
                isinstance(node, cst.BaseExpression) and _non_command(node, self.index.module) is not None):
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


class _Commands:
    """The commands in the expressions of a forward and of the helpers it delegates to: each
    stash/pop call (yielded or not), each yield of something else, each `yield from` of a
    method; what cannot be known is recorded as `unknown`."""

    def __init__(self, index: ModuleIndex, info: ClassInfo, forward: cst.FunctionDef,
                 locator: Locator, skippable: bool, resolve: Optional[NameResolver]) -> None:
        self.index = index
        self.resolve = resolve
        self.info = info
        self.locator = locator
        self.skippable = skippable
        self.commands: dict[int, Command] = {}
        self.non_commands: dict[int, NonCommandYield] = {}
        self.unknown: set[Kind] = set()
        self.is_generator = False
        #: The forward and the methods it delegates to now running, outermost first.
        self.active: list[cst.FunctionDef] = [forward]
        self._command_vars: set[str] = set()
        self._values = _KnownValues(index, info, forward, self._command_vars)

    def events(self, node: cst.CSTNode, scope: Scope) -> list[_Event]:
        """Commands, delegations and unknowns in an expression or small statement, in order."""
        events: list[_Event] = []
        self._collect(node, scope, events, parent_stmt=node)
        return events

    def _collect(self, node: cst.CSTNode, scope: Scope, events: list[_Event], parent_stmt: cst.CSTNode) -> None:
        if type(node) in syntax.SCOPE_TYPES:
            return
        if type(node) is cst.Yield:
            self.is_generator = True
            self._yield(node, scope, events, parent_stmt)
            return
        if type(node) is cst.Call:
            kind = _command_kind(scope.api(node.func))
            if kind is not None:
                self._loose_command(node, kind, scope, events, parent_stmt)
                return
        if type(node) is cst.IfExp:
            self._collect(node.test, scope, events, parent_stmt)
            for branch in (node.body, node.orelse):
                inner: list[_Event] = []
                self._collect(branch, scope, inner, parent_stmt)
                if inner:
                    events.append(_Event("maybe", inner=inner))
            return
        if type(node) is cst.BooleanOperation:
            self._collect(node.left, scope, events, parent_stmt)
            inner = []
            self._collect(node.right, scope, inner, parent_stmt)
            if inner:
                events.append(_Event("maybe", inner=inner))
            return
        for child in syntax.children(node):
            self._collect(child, scope, events, parent_stmt)

    def _yield(self, node: cst.Yield, scope: Scope, events: list[_Event], parent_stmt: cst.CSTNode) -> None:
        value = node.value
        if isinstance(value, cst.From):
            target = value.item
            method = self._delegate_target(target)
            if method is None:
                self._collect(target, scope, events, parent_stmt)
                events.append(_Event("unknown"))
            else:
                if isinstance(target, cst.Call):
                    for arg in target.args:
                        self._collect(arg.value, scope, events, parent_stmt)
                events.append(_Event("delegate", call=node, method=method))
            return
        if isinstance(value, cst.Call):
            kind = _command_kind(scope.api(value.func))
            if kind is not None:
                discarded = isinstance(parent_stmt, cst.Expr) and parent_stmt.value is node
                command = self._command(value, kind, scope, yielded=True, discarded=discarded)
                if command is not None:
                    events.append(_Event("cmd", command=command, call=value))
                return
        if isinstance(value, cst.Name) and value.value in self._command_vars:
            return  # `cmd = stash(...)` earlier; counted there
        if value is not None:
            self._collect(value, scope, events, parent_stmt)
        what = _non_command(value, self.index.module)
        if what is None and value is not None and self._values.known(value, scope, self.active[-1], frozenset()):
            what = _describe(value, self.index.module)
        if what is None:
            # A call to something else, a variable, an attribute: it may build a command.
            self.unknown.update(("stash", "pop"))
        elif self.skippable:
            self.non_commands.setdefault(id(node), NonCommandYield(what, Site(node, self.locator)))

    def _loose_command(self, call: cst.Call, kind: Kind, scope: Scope, events: list[_Event],
                       parent_stmt: cst.CSTNode) -> None:
        """A command call that is not directly yielded."""
        bare = isinstance(parent_stmt, cst.Expr) and parent_stmt.value is call
        target_node = (parent_stmt.targets[0].target if isinstance(parent_stmt, cst.Assign)
                       and parent_stmt.value is call and len(parent_stmt.targets) == 1 else None)
        assigned = isinstance(target_node, cst.Name)
        if isinstance(target_node, cst.Name):
            target = target_node.value
            if self._yields_name(target):
                self._command_vars.add(target)
                command = self._command(call, kind, scope, yielded=True, discarded=False)
                if command is not None:
                    events.append(_Event("cmd", command=command, call=call))
                return
        if bare or assigned:
            command = self._command(call, kind, scope, yielded=False, discarded=False)
            if command is not None:
                events.append(_Event("cmd", command=command, call=call))
            return
        # Passed along or returned: it may be yielded elsewhere, so nothing is known.
        self.unknown.add(kind)

    def _yields_name(self, name: str) -> bool:
        for func in self.active:
            for node in syntax.walk(func.body):
                if (isinstance(node, cst.Yield) and isinstance(node.value, cst.Name)
                        and node.value.value == name):
                    return True
        return False

    def _command(self, call: cst.Call, kind: Kind, scope: Scope, yielded: bool,
                 discarded: bool) -> Optional[Command]:
        existing = self.commands.get(id(call))
        if existing is not None:
            return existing
        problem, bound, knowable = _arity_problem(kind, call)
        name_node = bound.get("name")
        if not knowable:
            self.unknown.add(kind)
            return None
        name = static_string(self.index, scope, name_node, self.resolve) if name_node is not None else None
        if name is None and name_node is not None:
            self.unknown.add(kind)
        command = Command(
            kind, name, Site(call, self.locator),
            Site(name_node, self.locator) if name_node is not None else None,
            yielded=yielded, discarded=discarded and kind == "pop", arity_problem=problem,
        )
        self.commands[id(call)] = command
        return command

    def _delegate_target(self, target: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        """The method of this class that `yield from self.<method>(...)` runs, if that is what it is."""
        if not (isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute)
                and isinstance(target.func.value, cst.Name) and target.func.value.value == "self"):
            return None
        method = self.info.methods.get(target.func.attr.value)
        if method is None or method in self.active or len(self.active) > MAX_DELEGATION:
            return None
        return method


class _PathWalk:
    """The paths through a forward: the set of commands run so far on each path, statement by
    statement (branches, loops, try, early exits), and what the paths say: the commands some path
    repeats, the branch each command is first run under, the early returns."""

    def __init__(self, index: ModuleIndex, reader: _Commands) -> None:
        self.index = index
        self.reader = reader
        self.repeats: dict[int, Command] = {}
        self.first_branch: dict[Key, cst.CSTNode] = {}
        self.early_exits: list[cst.CSTNode] = []
        self._stack: list[cst.CSTNode] = []
        self._observers: list[set[frozenset[Key]]] = []

    def run(self, func: cst.FunctionDef) -> frozenset[frozenset[Key]]:
        """The commands run on each path out of `func` (raises _TooManyPaths past MAX_STATES)."""
        out = self._block(syntax.statements(func.body), {frozenset()}, self.index.scopes[id(func)])
        return frozenset(out.normal | out.returns)

    # -- statements ------------------------------------------------------------------------
    def _block(self, stmts: Sequence[cst.CSTNode], states: set[frozenset[Key]], scope: Scope) -> _Paths:
        out = _Paths(normal=set(states))
        for stmt in stmts:
            if not out.normal:
                break  # the rest is unreachable
            for observer in self._observers:
                observer.update(out.normal)
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if not out.normal:
                        break
                    _continue_with(out, self._small(small, out.normal, scope))
            elif isinstance(stmt, cst.BaseSmallStatement):
                _continue_with(out, self._small(stmt, out.normal, scope))
            elif isinstance(stmt, cst.BaseCompoundStatement):
                self._stack.append(stmt)
                try:
                    _continue_with(out, self._compound(stmt, out.normal, scope))
                finally:
                    self._stack.pop()
            self._check_size(out.normal)
        return out

    def _small(self, small: cst.BaseSmallStatement, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        events = self.reader.events(small, scope)
        states = self.apply(events, states, scope)
        if type(small) is cst.Return:
            if self._stack:
                self.early_exits.append(self._stack[0])
            return _Paths(returns=states)
        if type(small) is cst.Raise:
            return _Paths()
        if type(small) is cst.Break:
            return _Paths(breaks=states)
        if type(small) is cst.Continue:
            return _Paths(continues=states)
        return _Paths(normal=states)

    def _compound(self, stmt: cst.BaseCompoundStatement, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        if isinstance(stmt, cst.If):
            states = self.apply(self.reader.events(stmt.test, scope), states, scope)
            constant = _constant_truth(stmt.test)
            if constant is True:  # `if True:` / `if 1:`: the other branch never runs
                return self._suite(stmt.body, states, scope)
            out = self._suite(stmt.body, states, scope) if constant is None else _Paths()
            if isinstance(stmt.orelse, cst.If):
                other = self._compound(stmt.orelse, states, scope)
            elif isinstance(stmt.orelse, cst.Else):
                other = self._suite(stmt.orelse.body, states, scope)
            else:
                other = _Paths(normal=set(states))
            return _merge(out, other)
        if isinstance(stmt, (cst.For, cst.While)):
            return self._loop(stmt, states, scope)
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                states = self.apply(self.reader.events(item.item, scope), states, scope)
            return self._suite(stmt.body, states, scope)
        if isinstance(stmt, (cst.Try, cst.TryStar)):
            return self._try(stmt, states, scope)
        if isinstance(stmt, cst.Match):
            states = self.apply(self.reader.events(stmt.subject, scope), states, scope)
            result = _Paths()
            exhaustive = False
            for case in stmt.cases:
                result = _merge(result, self._suite(case.body, states, scope))
                pattern = case.pattern
                if case.guard is None and isinstance(pattern, cst.MatchAs) and pattern.pattern is None:
                    exhaustive = True
            if not exhaustive:
                result.normal |= states
            return result
        # nested def/class: defining it runs nothing of interest
        return _Paths(normal=set(states))

    def _suite(self, suite: cst.BaseSuite, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        return self._block(syntax.statements(suite), states, scope)

    def _loop(self, stmt: cst.For | cst.While, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        min_iters, max_iters, infinite = 0, None, False
        if isinstance(stmt, cst.For):
            states = self.apply(self.reader.events(stmt.iter, scope), states, scope)
            count = _constant_range_length(stmt.iter)
            if count is not None:
                min_iters, max_iters = min(count, 2), count
        else:
            states = self.apply(self.reader.events(stmt.test, scope), states, scope)
            truth = _constant_truth(stmt.test)
            if truth is True:
                infinite = True
            elif truth is False:
                max_iters = 0
        result = _Paths()
        finished: set[frozenset[Key]] = set() if (infinite or min_iters > 0) else set(states)
        if max_iters == 0:
            finished = set(states)
        frontier = set(states)
        seen = set(states)
        iteration = 0
        while frontier and max_iters != 0:
            iteration += 1
            out = self._suite(stmt.body, frontier, scope)
            result.returns |= out.returns
            result.normal |= out.breaks
            head = out.normal | out.continues
            if not infinite and iteration >= min_iters:
                finished |= head
            if max_iters is not None and iteration >= max_iters:
                break
            frontier = head - seen if iteration >= min_iters else head
            seen |= head
            self._check_size(seen)
        if stmt.orelse is not None:
            other = self._suite(stmt.orelse.body, finished, scope)
            result.normal |= other.normal
            result.returns |= other.returns
            result.breaks |= other.breaks
            result.continues |= other.continues
        else:
            result.normal |= finished
        return result

    def _try(self, stmt: cst.Try | cst.TryStar, states: set[frozenset[Key]], scope: Scope) -> _Paths:
        observed: set[frozenset[Key]] = set(states)
        self._observers.append(observed)
        try:
            body = self._suite(stmt.body, states, scope)
        finally:
            self._observers.pop()
        # Handlers start from the state before some statement of the body raised; once the
        # body has completed (body.normal), nothing inside the try can raise any more.
        result = _Paths(returns=set(body.returns), breaks=set(body.breaks), continues=set(body.continues))
        if stmt.orelse is not None:
            result = _merge(result, self._suite(stmt.orelse.body, body.normal, scope))
        else:
            result.normal |= body.normal
        for handler in stmt.handlers:
            result = _merge(result, self._suite(handler.body, observed, scope))
        final = stmt.finalbody
        if final is None:
            return result
        merged = _Paths()
        for attr in ("normal", "returns", "breaks", "continues"):
            group = getattr(result, attr)
            if not group:
                continue
            out = self._suite(final.body, group, scope)
            getattr(merged, attr).update(out.normal)
            merged.returns |= out.returns
            merged.breaks |= out.breaks
            merged.continues |= out.continues
        return merged

    def _check_size(self, states: set[frozenset[Key]]) -> None:
        if len(states) > MAX_STATES:
            raise _TooManyPaths

    # -- applying events to path states ----------------------------------------------------
    def apply(self, events: list[_Event], states: set[frozenset[Key]], scope: Scope) -> set[frozenset[Key]]:
        for event in events:
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
                states = states | self.apply(event.inner, states, scope)
            elif event.kind == "delegate":
                method = event.method
                assert method is not None
                self.reader.active.append(method)
                try:
                    out = self._block(syntax.statements(method.body), states, self.index.scopes[id(method)])
                finally:
                    self.reader.active.pop()
                states = out.normal | out.returns
            else:  # unknown delegation: anything may happen
                self.reader.unknown.update(("stash", "pop"))
            self._check_size(states)
        return states

    def _innermost_branch(self) -> cst.CSTNode:
        for node in reversed(self._stack):
            if isinstance(node, _BRANCHING):
                return node
        return self._stack[-1]


class ForwardAnalysis:
    """Commands of a forward (and the helpers it delegates to) and the paths through it: the
    commands are read by _Commands (with _KnownValues for what is no command), the paths walked
    by _PathWalk."""

    def __init__(self, index: ModuleIndex, info: ClassInfo, forward: cst.FunctionDef,
                 locator: Locator, skippable: bool, resolve: Optional[NameResolver] = None) -> None:
        reader = _Commands(index, info, forward, locator, skippable, resolve)
        walk = _PathWalk(index, reader)
        self.paths_known = True
        self.exits: Optional[frozenset[frozenset[Key]]] = None
        try:
            self.exits = walk.run(forward)
        except _TooManyPaths:
            self.paths_known = False
        self.commands = reader.commands
        self.non_commands = reader.non_commands
        self.unknown = reader.unknown
        self.is_generator = reader.is_generator
        self.repeats = walk.repeats
        self.first_branch = walk.first_branch
        self.early_exits = walk.early_exits


def _continue_with(out: _Paths, step: _Paths) -> None:
    """Sequence `step` after `out`: its normal exits are where execution goes on."""
    out.normal = step.normal
    out.returns |= step.returns
    out.breaks |= step.breaks
    out.continues |= step.continues


def _merge(a: _Paths, b: _Paths) -> _Paths:
    return _Paths(a.normal | b.normal, a.returns | b.returns, a.breaks | b.breaks, a.continues | b.continues)


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


_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
             cst.FormattedString, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp,
             cst.DictComp, cst.GeneratorExp, cst.Lambda)
_EXPRESSIONS = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation)


def _non_command(value: Optional[cst.BaseExpression], module: cst.Module) -> Optional[str]:
    """How to describe a yielded value that cannot be a command by its form; None when it might be one."""
    if value is None:
        return "nothing (a bare yield)"
    if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
        return value.value
    if isinstance(value, _LITERALS + _EXPRESSIONS):
        return _describe(value, module)
    return None


def _describe(value: cst.BaseExpression, module: cst.Module) -> str:
    code = module.code_for_node(value)
    if len(code) > 40 or "\n" in code:
        code = code.splitlines()[0][:37] + "..."
    return f"'{code}'"


#: torch.nn classes whose call may return whatever their children return.
_TORCH_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "Module", "Identity", "ParameterList",
                               "ParameterDict"})


def assignment_targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """The targets an assignment statement stores into (none for any other node)."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return [node.target]
    return []


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


# -- the module ----------------------------------------------------------------------------------

def _is_generator(func: cst.FunctionDef) -> bool:
    return any(isinstance(node, cst.Yield) for node in syntax.walk(func.body))


def _required_inputs(forward: cst.FunctionDef) -> int:
    params = forward.params
    positional = [*params.posonly_params, *params.params]
    required = [p for p in positional if p.default is None]
    return max(len(required) - 1, 0)  # minus self


def extract(module: cst.Module, path: str, source: Optional[str] = None,
            index: Optional[ModuleIndex] = None, locator: Optional[Locator] = None) -> ModuleFacts:
    """All skip facts of one parsed module (`source`, when given, lets rare walks be skipped).
    One `locator` per module lets every finding of it be located in one pass."""
    index = index or ModuleIndex(module)
    locator = locator or Locator(module)
    misuses: list[SkippableMisuse] = []
    undecorated: list[UndecoratedYield] = []
    skippables: list[SkippableClass] = []
    reported_loose: set[int] = set()

    # @skippable used as a decorator on classes and functions, and the skippable(...)(Cls) form.
    decorated: dict[int, cst.Call] = {}
    for info in index.classes:
        for decorator in info.node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and info.outer.api(expr.func) == "skippable":
                decorated[id(info.node)] = expr
            elif info.outer.api(expr) == "skippable":
                misuses.append(SkippableMisuse(None, Site(decorator, locator)))
    for func, scope in index.functions:
        for decorator in func.decorators:
            expr = decorator.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            if scope.api(target) == "skippable":
                misuses.append(SkippableMisuse(func.name.value, Site(decorator, locator)))
    by_scope_name = {(id(info.outer), info.node.name.value): info for info in index.classes}
    wrapped_names: set[str] = set()
    for call, scope in _wrapping_calls(index):
        wrap = _wrap(call, scope)
        if wrap is not None:
            inner, name = wrap
            wrapped_names.add(name)
            search: Optional[Scope] = scope
            while search is not None:
                wrapped_info = by_scope_name.get((id(search), name))
                if wrapped_info is not None:
                    decorated.setdefault(id(wrapped_info.node), inner)
                    break
                search = search.parent

    bases_used = {
        base.value.value
        for info in index.classes for base in info.node.bases if isinstance(base.value, cst.Name)
    }

    for info in index.classes:
        decorator_call = decorated.get(id(info.node))
        forward = info.methods.get("forward")
        if decorator_call is None:
            name = info.node.name.value
            # Another decorator may be a re-export of skippable; a wrap inside an expression,
            # `skippable(...)(Cls)()`, is found textually: in both cases, abstain.
            wrapped = name in wrapped_names or (
                source is not None and re.search(r"\)\(\s*" + re.escape(name) + r"\s*\)", source) is not None)
            if forward is not None and not info.node.decorators and not wrapped and name not in bases_used:
                first = _first_command_yield(index, info, forward)
                if first is not None:
                    kind, node = first
                    undecorated.append(UndecoratedYield(info.node.name.value, kind, Site(node, locator)))
            continue
        index.skippable_calls[id(info.node)] = (info, decorator_call)
        skippables.append(_skippable_class(index, info, decorator_call, forward, locator, reported_loose))

    # Commands built as whole statements anywhere else (module level, plain functions).
    loose: list[Command] = []
    for call, scope, stmt in index.statement_calls:
        if id(call) in reported_loose or not isinstance(stmt, cst.Expr):
            continue
        loose_kind = _command_kind(scope.api(call.func))
        if loose_kind is not None:
            name_node = _arity_problem(loose_kind, call)[1].get("name")
            loose_name = static_string(index, scope, name_node) if name_node is not None else None
            loose.append(Command(loose_kind, loose_name, Site(call, locator), yielded=False))

    removed: list[RemovedImport] = []
    for stmt, guarded in index.imports:
        if guarded:
            continue
        module_name = removed_module(stmt)
        if module_name is not None:
            removed.append(RemovedImport(module_name, removed_import_brings(stmt), Site(stmt, locator)))

    isolate_names = _isolate_names(index, skippables, locator) if source is None or "only" in source else []
    return ModuleFacts(path, tuple(skippables), (), tuple(loose), tuple(misuses), tuple(undecorated),
                       tuple(removed), tuple(isolate_names))


_SKIP_API_NAMES = frozenset({"skippable", "stash", "pop", "Namespace", "verify_skippables", "inspect_skip_layout",
                             "Skippable", "skip", "_skip"})
def _wrapping_calls(index: ModuleIndex) -> Iterator[tuple[cst.Call, Scope]]:
    """The calls that may wrap a class: whole statement values, and the calls reached from them
    through lambda bodies and call arguments (`lambda: skippable(...)(Impl)`,
    `functools.partial(skippable(...), Impl)`), bounded by the budget's nesting."""
    starts: list[tuple[cst.BaseExpression, Scope]] = [(call, scope) for call, scope, _ in index.statement_calls]
    starts.extend(index.statement_lambdas)
    for start, scope in starts:
        pending: list[tuple[cst.BaseExpression, int]] = [(start, 0)]
        while pending:
            node, depth = pending.pop()
            if type(node) is cst.Lambda:
                if depth < BUDGET.nesting:
                    pending.append((node.body, depth + 1))
            elif type(node) is cst.Call:
                yield node, scope
                if depth < BUDGET.nesting:
                    pending.extend((arg.value, depth + 1) for arg in node.args)


def _wrap(call: cst.Call, scope: Scope) -> Optional[tuple[cst.Call, str]]:
    """`skippable(...)(Cls)` or `partial(skippable(...), Cls)`: the skippable(...) call and Cls."""
    inner = call.func
    if (isinstance(inner, cst.Call) and scope.api(inner.func) == "skippable" and len(call.args) == 1
            and isinstance(call.args[0].value, cst.Name)):
        return inner, call.args[0].value.value
    if (scope.qualified(call.func) == "functools.partial" and len(call.args) == 2
            and all(arg.keyword is None and not arg.star for arg in call.args)):
        first, second = call.args[0].value, call.args[1].value
        if isinstance(first, cst.Call) and scope.api(first.func) == "skippable" and isinstance(second, cst.Name):
            return first, second.value
    return None


def removed_import_brings(stmt: cst.Import | cst.ImportFrom) -> tuple[Brought, ...]:
    """What an import of the removed torch.distributed.pipeline brings in, by what replaces it."""
    kinds: list[Brought] = []

    def add(kind: Brought) -> None:
        if kind not in kinds:
            kinds.append(kind)

    def module_kind(module: str) -> Brought:
        parts = module.split(".")
        return "skip" if "skip" in parts or "_skip" in parts else "package"

    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            dotted = dotted_name(alias.name)
            if dotted is not None and removed_module(cst.Import(names=[alias.with_changes(
                    comma=cst.MaybeSentinel.DEFAULT)])) is not None:
                add(module_kind(dotted))
    else:
        base = dotted_name(stmt.module) if stmt.module is not None else None
        base_kind = module_kind(base or "")
        if base_kind == "skip" or isinstance(stmt.names, cst.ImportStar):
            add(base_kind)
        else:
            for alias in stmt.names:
                name = alias.name.value if isinstance(alias.name, cst.Name) else ""
                if name in _SKIP_API_NAMES:
                    add("skip")
                elif name == "Pipe":
                    add("Pipe")
                elif name == "PipeSequential":
                    add("PipeSequential")
                elif name in ("partition_model", "WithDevice"):
                    add("placement")
                else:
                    add("package")
    if len(kinds) > 1 and "package" in kinds:
        kinds.remove("package")  # the named replacements say it; the general advice would repeat them
    return tuple(kinds) if kinds else ("package",)


def _first_command_yield(index: ModuleIndex, info: ClassInfo,
                         forward: cst.FunctionDef) -> Optional[tuple[Kind, cst.CSTNode]]:
    scope = index.scopes[id(forward)]
    for node in syntax.walk(forward.body):
        if type(node) is cst.Yield and type(node.value) is cst.Call:
            kind = _command_kind(scope.api(node.value.func))
            if kind is not None:
                return kind, node
    return None


def _skippable_class(index: ModuleIndex, info: ClassInfo, call: cst.Call, forward: Optional[cst.FunctionDef],
                     locator: Locator, reported_loose: set[int],
                     resolve: Optional[NameResolver] = None) -> SkippableClass:
    args = _skippable_arguments(call)
    if args is None:
        stash = Declaration("stash", None, Site(call, locator))
        pop = Declaration("pop", None, Site(call, locator))
    else:
        stash = _declaration(index, info.outer, "stash", args["stash"], locator, resolve)
        pop = _declaration(index, info.outer, "pop", args["pop"], locator, resolve)
    forward_facts: Optional[Forward] = None
    if forward is not None:
        analysis = ForwardAnalysis(index, info, forward, locator, skippable=True, resolve=resolve)
        generator_elsewhere = not analysis.is_generator and any(
            _is_generator(m) for name, m in info.methods.items() if name != "forward")
        if not generator_elsewhere:
            commands = _with_gradflow(index, info, forward, tuple(analysis.commands.values()))
            for command in commands:
                if not command.yielded and command.site is not None:
                    reported_loose.add(id(command.site.node))
            exits = analysis.exits if analysis.paths_known and not analysis.unknown else None
            forward_facts = Forward(
                Site(forward, locator), commands, tuple(analysis.non_commands.values()), exits,
                tuple(analysis.repeats.values()) if analysis.paths_known else (),
                tuple((key, Site(node, locator)) for key, node in analysis.first_branch.items()),
                _required_inputs(forward), frozenset(analysis.unknown),
                Site(analysis.early_exits[0], locator) if analysis.early_exits else None,
            )
    return SkippableClass(info.node.name.value, stash, pop, forward_facts, Site(info.node, locator))


def _with_gradflow(index: ModuleIndex, info: ClassInfo, forward: cst.FunctionDef,
                   commands: tuple[Command, ...]) -> tuple[Command, ...]:
    """The commands with what autograd dataflow through forward says of them (skiplint.gradflow):
    whether each stash shares saved history with the output, whether the output depends on
    each popped tensor."""
    kinds = {id(c.site.node): c.kind for c in commands
             if c.yielded and c.name is not None and c.site is not None and c.arity_problem is None}
    if not kinds:
        return commands
    flow = gradflow.analyse(forward, info.methods, index.scopes, kinds)
    detached = gradflow.detached_pops(forward, index.scopes[id(forward)], [
        c.site.node for c in commands if c.kind == "pop" and c.site is not None and id(c.site.node) in kinds
        and isinstance(c.site.node, cst.Call)])
    out = []
    for command in commands:
        node = command.site.node if command.site is not None else None
        if node is None or id(node) not in kinds:
            out.append(command)
        elif command.kind == "stash":
            shares = flow.shares(node)
            out.append(dataclasses.replace(command, shares_output=shares == gradflow.YES,
                                           shares_if_input_grad=shares == gradflow.INPUT))
        else:
            out.append(dataclasses.replace(command, grad_used=not command.discarded and flow.reaches_output(node),
                                           detached_only=id(node) in detached))
    return tuple(out)


def computed(cls: SkippableClass) -> bool:
    """Whether a skippable class declares or uses a name that its code alone cannot tell."""
    forward = cls.forward
    return not (cls.stash.known and cls.pop.known) or (forward is not None and (
        bool(forward.unknown_kinds) or any(c.name is None and c.name_site is not None for c in forward.commands)))


def specialize(index: ModuleIndex, node: cst.ClassDef, locator: Locator,
               resolve: NameResolver) -> Optional[SkippableClass]:
    """The facts of one skippable class as one execution of its class statement makes it: the
    names it reads from its factory's parameters, a loop's variable or its class attributes are
    those `resolve` gives (`extract` must have run on `index`)."""
    found = index.skippable_calls.get(id(node))
    if found is None:
        return None
    info, call = found
    return _skippable_class(index, info, call, info.methods.get("forward"), locator, set(), resolve)


def _isolate_names(index: ModuleIndex, skippables: Iterable[SkippableClass],
                   locator: Locator) -> list[IsolateName]:
    """`Cls(...).isolate(ns, only=[...])` naming a skip Cls never declares."""
    known = {cls.name: cls for cls in skippables}
    if not known:
        return []
    found: list[IsolateName] = []
    for node in syntax.walk(index.module, into_scopes=True):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "isolate"):
            continue
        receiver = node.func.value
        if not (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)):
            continue
        cls = known.get(receiver.func.value)
        if cls is None or not (cls.stash.known and cls.pop.known):
            continue
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value != "only":
                continue
            if not isinstance(arg.value, (cst.List, cst.Tuple, cst.Set)):
                continue
            declared = cls.stash.name_set | cls.pop.name_set
            for element in arg.value.elements:
                name = syntax.string_value(element.value)
                if name is not None and name not in declared:
                    found.append(IsolateName(name, cls.name, Site(arg, locator)))
    return found
