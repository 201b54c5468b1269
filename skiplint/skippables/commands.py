"""The commands a forward performs: the stash/pop calls of each statement, yielded or not, the
`yield from` helpers they delegate to, and the yields that cannot be commands (by their form, or
by the value the walk gives them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from skiplint import syntax
from skiplint.gradflow.expressions import NON_COMMAND_FORMS, NON_COMMAND_NAMES
from skiplint.gradflow.walker import delegated
from skiplint.facts import Command, Kind, Locator, NonCommandYield, Site
from skiplint.imports import Scope
from skiplint.limits import MAX_DELEGATION
from skiplint.skippables.index import ClassInfo, ModuleIndex, command_kind
from skiplint.skippables.names import NameResolver, arity_problem, static_string


@dataclass
class Event:
    """Something that happens while a statement runs: a command, a delegation, a branch."""

    kind: str  # "cmd" | "delegate" | "unknown" | "maybe"
    command: Optional[Command] = None
    call: Optional[cst.CSTNode] = None
    method: Optional[cst.FunctionDef] = None
    inner: list["Event"] = field(default_factory=list)


class Commands:
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
        #: id(generator of another module of the project that forward delegates to) -> the
        #: `yield from` that runs it (where its commands are reported) and its module's scopes.
        self._imported: dict[int, tuple[cst.CSTNode, dict[int, Scope]]] = {}
        #: id(yield of no command call) -> its value, how its form describes it (None: by its form
        #: it may be a command), where to report it; and whether every value the walk gave it is
        #: certainly no command (`settle` decides by both).
        self._yields: dict[int, tuple[Optional[cst.BaseExpression], Optional[str], cst.CSTNode]] = {}
        self._plain: dict[int, bool] = {}

    def events(self, node: cst.CSTNode, scope: Scope) -> list[Event]:
        """Commands, delegations and unknowns in an expression or small statement, in order."""
        events: list[Event] = []
        self._collect(node, scope, events, parent_stmt=node)
        return events

    def _collect(self, node: cst.CSTNode, scope: Scope, events: list[Event], parent_stmt: cst.CSTNode) -> None:
        if type(node) in syntax.SCOPE_TYPES:
            return
        if type(node) is cst.Yield:
            self.is_generator = True
            self._yield(node, scope, events, parent_stmt)
            return
        if type(node) is cst.Call:
            kind = command_kind(scope.api(node.func))
            if kind is not None:
                self._loose_command(node, kind, scope, events, parent_stmt)
                return
        if type(node) is cst.IfExp:
            self._collect(node.test, scope, events, parent_stmt)
            for branch in (node.body, node.orelse):
                inner: list[Event] = []
                self._collect(branch, scope, inner, parent_stmt)
                if inner:
                    events.append(Event("maybe", inner=inner))
            return
        if type(node) is cst.BooleanOperation:
            self._collect(node.left, scope, events, parent_stmt)
            inner = []
            self._collect(node.right, scope, inner, parent_stmt)
            if inner:
                events.append(Event("maybe", inner=inner))
            return
        for child in syntax.children(node):
            self._collect(child, scope, events, parent_stmt)

    def _yield(self, node: cst.Yield, scope: Scope, events: list[Event], parent_stmt: cst.CSTNode) -> None:
        value = node.value
        if isinstance(value, cst.From):
            target = value.item
            method = self._delegate_target(target, scope, node)
            if method is None:
                self._collect(target, scope, events, parent_stmt)
                events.append(Event("unknown"))
            else:
                if isinstance(target, cst.Call):
                    for arg in target.args:
                        self._collect(arg.value, scope, events, parent_stmt)
                events.append(Event("delegate", call=node, method=method))
            return
        if isinstance(value, cst.Call):
            kind = command_kind(scope.api(value.func))
            if kind is not None:
                discarded = isinstance(parent_stmt, cst.Expr) and parent_stmt.value is node
                command = self._command(value, kind, scope, yielded=True, discarded=discarded)
                if command is not None:
                    events.append(Event("cmd", command=command, call=value))
                return
        if isinstance(value, cst.Name) and value.value in self._command_vars:
            return  # `cmd = stash(...)` earlier; counted there
        if value is not None:
            self._collect(value, scope, events, parent_stmt)
        if id(node) not in self._yields:
            self._yields[id(node)] = (value, non_command(value, self.index.module), self._delegation() or node)

    def evaluated(self, node: cst.Yield, plain: bool) -> None:
        """The walk's value of a yield that is no command call: certainly no command (`plain`) or not."""
        self._plain[id(node)] = plain and self._plain.get(id(node), True)

    def settle(self) -> None:
        """After the walk: the yields of no command (SKP108), by their form or by every value the
        walk gave them; any other may yield a command built elsewhere (a call, a variable, an
        attribute), so the commands are not all known. A yield the walk's dataflow does not reach
        (after a branch it decides, in try*/match) is decided by its form alone."""
        for key, (value, what, where) in self._yields.items():
            if what is None and value is not None and self._plain.get(key, False):
                what = describe(value, self.index.module)
            if what is None:
                self.unknown.update(("stash", "pop"))
            elif self.skippable:
                self.non_commands[key] = NonCommandYield(what, Site(where, self.locator))

    def _loose_command(self, call: cst.Call, kind: Kind, scope: Scope, events: list[Event],
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
                    events.append(Event("cmd", command=command, call=call))
                return
        if bare or assigned:
            command = self._command(call, kind, scope, yielded=False, discarded=False)
            if command is not None:
                events.append(Event("cmd", command=command, call=call))
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
        problem, bound, knowable = arity_problem(kind, call)
        name_node = bound.get("name")
        if not knowable:
            self.unknown.add(kind)
            return None
        delegation = self._delegation()  # in another module: only a literal name is known
        name = None if name_node is None else syntax.string_value(name_node) if delegation is not None else \
            static_string(self.index, scope, name_node, self.resolve)
        if name is None and name_node is not None:
            self.unknown.add(kind)
        command = Command(
            kind, name, Site(delegation or call, self.locator),
            Site(delegation or name_node, self.locator) if name_node is not None else None,
            yielded=yielded, discarded=discarded and kind == "pop", arity_problem=problem,
        )
        self.commands[id(call)] = command
        return command

    def _delegate_target(self, target: cst.BaseExpression, scope: Scope,
                         node: cst.Yield) -> Optional[cst.FunctionDef]:
        """The function that `yield from self.<method>(...)` or `yield from <function>(...)` runs,
        when it is a method of this class, a function of this module, or (from this module's code)
        a function imported from another module of the project."""
        method = delegated(target, scope, self.info.methods, self.index.top_level()[0])
        if method is None and self.index.imported is not None and isinstance(target, cst.Call) \
                and self._delegation() is None:
            qualified = scope.qualified(target.func)
            path, resolve = self.index.imported
            found = resolve(path, qualified) if qualified is not None else None
            if found is not None:
                method = found[1]
                self._imported.setdefault(id(method), (node, found[2]))
        if method is None or method in self.active or len(self.active) > MAX_DELEGATION:
            return None
        return method

    def scope_of(self, func: cst.FunctionDef) -> Scope:
        imported = self._imported.get(id(func))
        return imported[1][id(func)] if imported is not None else self.index.scopes[id(func)]

    def _delegation(self) -> Optional[cst.CSTNode]:
        """The `yield from` of a function of another module that runs now, if one does."""
        for func in self.active:
            if id(func) in self._imported:
                return self._imported[id(func)][0]
        return None


def non_command(value: Optional[cst.BaseExpression], module: cst.Module) -> Optional[str]:
    """How to describe a yielded value that cannot be a command by its form; None when it might be one."""
    if value is None:
        return "nothing (a bare yield)"
    if isinstance(value, cst.Name) and value.value in NON_COMMAND_NAMES:
        return value.value
    if type(value) in NON_COMMAND_FORMS:
        return describe(value, module)
    return None


def describe(value: cst.BaseExpression, module: cst.Module) -> str:
    code = module.code_for_node(value)
    if len(code) > 40 or "\n" in code:
        code = code.splitlines()[0][:37] + "..."
    return f"'{code}'"
