"""The state of the walk of a forward body, which its parts share: the module whose code runs now,
the functions running, the gradient mode, the dataflow found so far; and the signatures by which
the parts (expressions.py, calls.py and the statements: skiplint.skippables.paths) call one another."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Collection, Iterator, Mapping, Optional, Sequence

import libcst as cst

from skiplint import syntax
if TYPE_CHECKING:  # read in annotations only: SKP303's check imports this package from the rules
    from skiplint.imports import Scope
from skiplint.facts import Key
from skiplint.gradflow.attributes import Attributes, assignment_targets
from skiplint.gradflow.model import NOTHING, PLAIN, Env, Flow, Value, plain
from skiplint.imports import import_bindings

#: A module-level function of another module of the project: that module's path, the function,
#: the module's scopes and its module-level functions.
ImportedFunction = tuple[str, cst.FunctionDef, "dict[int, Scope]", Mapping[str, cst.FunctionDef]]
#: (importer's path, qualified name) -> the project function it names, if any.
FunctionResolver = Callable[[str, str], Optional[ImportedFunction]]


@dataclass
class Exits:
    """Where the paths through a statement leave it, each as the set of commands run on it so far
    (`normal`: on to the next statement), and the env after it (None: no path goes on)."""

    normal: set[frozenset[Key]] = field(default_factory=set)
    returns: set[frozenset[Key]] = field(default_factory=set)
    breaks: set[frozenset[Key]] = field(default_factory=set)
    continues: set[frozenset[Key]] = field(default_factory=set)
    env: Optional[Env] = None


class Walker:
    """What the walk of one forward knows as it goes."""

    def __init__(self, scope_of: dict[int, Scope], methods: dict[str, cst.FunctionDef],
                 attributes: Attributes,
                 functions: Optional[Mapping[str, cst.FunctionDef]] = None,
                 classes: Optional[Mapping[str, Mapping[str, cst.FunctionDef]]] = None,
                 imported: Optional[tuple[str, FunctionResolver]] = None, depth_limit: int = 8) -> None:
        self.scope_of = scope_of
        #: The methods and attributes of the module whose code runs now (`self`).
        self.methods: Mapping[str, cst.FunctionDef] = methods
        self.attributes = attributes
        self.classes = classes or {}
        self._attributes_of: dict[str, Attributes] = {}
        #: Module-level functions of the same module, by name (followed where a forward calls them).
        self.functions = functions or {}
        #: The path of the module whose code runs now, and what finds the functions it imports.
        self.path = imported[0] if imported is not None else ""
        self.imported: Optional[FunctionResolver] = imported[1] if imported is not None else None
        self.flow = Flow()
        self.no_grad = 0
        self.in_loop = 0
        self.active: list[cst.FunctionDef] = []
        self.depth_limit = depth_limit
        #: Inside a branch that never runs where a pipe trains (`decide`): walked for what its yields
        #: are (SKP108) only; what it stashes, returns and reads of a pop makes no fact.
        self.unrun = 0

    def scope(self) -> Scope:
        return self.scope_of[id(self.active[-1])]

    def key(self, node: cst.CSTNode) -> Optional[str]:
        """The variable a name or `self.<attr>` is (its key in an env); None for anything else."""
        if isinstance(node, cst.Name):
            return node.value
        if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                and node.value.value == "self"):
            return "self." + node.attr.value
        return None

    def grad_off(self, value: Value) -> Value:
        """A value computed now: under `torch.no_grad()` it holds nothing of the graph."""
        if not self.no_grad:
            return value
        return PLAIN if value.plain else NOTHING

    if TYPE_CHECKING:
        # the statements (skiplint.skippables.paths, which walks the paths through forward too)
        def block(self, stmts: Sequence[cst.CSTNode], states: set[frozenset[Key]], env: Optional[Env],
                  returns: list[Value]) -> Exits: ...
        def command_kind(self, call: cst.Call) -> Optional[str]: ...
        def yielded_value(self, node: cst.Yield, value: Value) -> None: ...
        # expressions.py
        def decide(self, test: cst.BaseExpression, env: Env) -> Optional[bool]: ...
        def assign(self, target: cst.BaseExpression, value: Value, env: Env) -> None: ...
        def eval(self, node: cst.BaseExpression, env: Env) -> Value: ...
        # calls.py
        def run(self, func: cst.FunctionDef, args: Sequence[Value], bound: bool = True,
                states: Optional[set[frozenset[Key]]] = None,
                keywords: Optional[Mapping[str, Value]] = None) -> tuple[Value, bool, Exits]: ...
        def delegate(self, target: cst.BaseExpression) -> Optional[cst.FunctionDef]: ...
        def in_place(self, node: cst.CSTNode) -> Optional[cst.BaseExpression]: ...
        def call(self, node: cst.Call, env: Env) -> Value: ...
        def imported_function(self, func: cst.BaseExpression) -> Optional[ImportedFunction]: ...
        def imported_call(self, found: ImportedFunction, args: Sequence[Value],
                          keywords: Optional[Mapping[str, Value]] = None) -> Value: ...


def arguments(call: cst.Call, values: Sequence[Value]) -> tuple[list[Value], dict[str, Value]]:
    """A call's evaluated arguments (`values`, none starred): the positional ones, the keyword ones by name."""
    positional = [value for value, arg in zip(values, call.args) if arg.keyword is None]
    keywords = {arg.keyword.value: value for value, arg in zip(values, call.args) if arg.keyword is not None}
    return positional, keywords


def bindable(func: cst.FunctionDef, positional: int, keywords: Collection[str], bound: bool) -> bool:
    """Whether a call with `positional` positional arguments (after self, for a method: `bound`) and
    these keyword arguments gives each to a parameter of `func` by name, none to `*args` or `**kwargs`."""
    params = func.params
    ordered = [p.name.value for p in (*params.posonly_params, *params.params)][1 if bound else 0:]
    if positional > len(ordered):
        return False
    by_name = {p.name.value for p in (*params.params, *params.kwonly_params)} - set(ordered[:positional])
    if bound and params.params and not params.posonly_params:
        by_name.discard(params.params[0].name.value)
    return all(keyword in by_name for keyword in keywords)


def constant_index(node: cst.Subscript) -> Optional[int]:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    negative = isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus)
    if negative:
        value = value.expression  # type: ignore[attr-defined]
    if isinstance(value, cst.Integer):
        number = int(value.value, 0)
        return -number if negative else number
    return None


def delegated(target: cst.BaseExpression, scope: Scope, methods: Mapping[str, cst.FunctionDef],
              functions: Mapping[str, cst.FunctionDef]) -> Optional[cst.FunctionDef]:
    """The method of `self` or the module-level function that a call `target` runs, if it is one."""
    if not isinstance(target, cst.Call):
        return None
    func = target.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        return methods.get(func.attr.value)
    if isinstance(func, cst.Name):
        owner = scope.owner(func.value)
        if owner is not None and owner.kind == "module":
            return functions.get(func.value)
    return None


def targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What an assignment, a loop or a walrus binds."""
    if isinstance(node, (cst.For, cst.CompFor, cst.NamedExpr)):
        return [node.target]
    return assignment_targets(node)


def bound(target: cst.CSTNode) -> Iterator[str]:
    """The names (and `self.<attr>`s) an assignment target binds; not what it stores into (`h[i] = ...`)."""
    if type(target) is cst.Name:
        yield target.value
    elif type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == "self":
        yield "self." + target.attr.value
    elif type(target) is cst.Tuple or type(target) is cst.List:
        for element in target.elements:
            yield from bound(element.value)


def rebound(node: cst.CSTNode) -> set[str]:
    """What `node` may bind to a command anywhere in it, the functions it defines included (their
    `nonlocal`s): names, `self.<attr>`s; not an augmented assignment's target (arithmetic, no command)."""
    out: set[str] = set()
    for part in syntax.walk(node, into_scopes=True):
        if type(part) is cst.Assign:
            for target in part.targets:
                out.update(bound(target.target))
        elif type(part) in _BINDS_TARGET:
            out.update(bound(part.target))  # type: ignore[attr-defined]
        elif type(part) is cst.FunctionDef or type(part) is cst.ClassDef:
            out.add(part.name.value)
        elif type(part) is cst.WithItem and part.asname is not None:
            out.update(bound(part.asname.name))
        elif type(part) is cst.ExceptHandler and part.name is not None:
            out.update(bound(part.name.name))
        elif type(part) is cst.Import or type(part) is cst.ImportFrom:
            out.update(local for local, _ in import_bindings(part))
        elif type(part) is cst.Global or type(part) is cst.Nonlocal:
            out.update(item.name.value for item in part.names)
        elif (type(part) is cst.MatchAs or type(part) is cst.MatchStar) and part.name is not None:
            out.add(part.name.value)
    return out


_BINDS_TARGET = frozenset({cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del})


def unplain(keys: set[str], env: Env) -> None:
    """Each of `keys` may hold a command now; what else is known of it stays."""
    for key in keys:
        value = env.get(key)
        if value is not None and value.plain:
            env[key] = plain(value, False)
