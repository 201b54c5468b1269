"""Composition facts: which nn.Sequential children, namespaces and pipe calls a module builds.

A small abstract interpreter runs the statements that build models: module code, functions that
nobody in the module calls (tests, builders; parameters take their defaults), helpers at their
call sites with the arguments given, and the `__init__` of Sequential subclasses. It knows
literals, lists, dicts, constant ranges (unrolled, bounded), `Namespace()` identities and
`.isolate(...)`; anything else is unknown, and a composition is not checked past an unknown.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence

import libcst as cst

from skiplint import syntax
from skiplint.facts import (
    Composition, Layer, LayerKind, Locator, ModelFacts, ModuleFacts, Pipe, Site, SkipKey,
    SkippableClass,
)
from skiplint.imports import Scope
from skiplint.skippables import ModuleIndex

#: Iterations of one loop or comprehension that are unrolled; beyond, the loop is unknown.
MAX_UNROLL = 256
#: Evaluation steps for a whole module; beyond, the rest is unknown.
MAX_STEPS = 200_000
#: Depth of helper calls followed.
MAX_CALL_DEPTH = 12

_PIPES = ("GPipe", "FairscalePipe", "TorchPipe", "MultiProcessPipe", "AsyncPipe")
_MUTATORS = frozenset({"append", "extend", "insert", "add_module", "isolate", "update", "pop",
                       "remove", "clear", "setdefault", "__setitem__", "register_module", "reverse",
                       "sort", "popitem"})
#: Words of which one must occur for a module to build compositions or call pipes.
NEEDLES = ("Sequential", "Pipe", "balance_by_", "LazyModule", "verify_skippables", "inspect_skip_layout")
#: Calls that run verify_skippables on the module they are given (SKP202 needs one to fail).
_VERIFIERS = ("GPipe", "FairscalePipe", "TorchPipe")
_MODULE_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "double", "half",
                             "requires_grad_", "share_memory", "type", "bfloat16"})


# -- abstract values ---------------------------------------------------------------------------

class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class SkipInfo:
    """What a skippable class declares; None: computed at run time."""

    name: str
    stash: Optional[frozenset[str]]
    pop: Optional[frozenset[str]]


@dataclass(eq=False)
class NS:
    serial: int
    origin: Optional[str] = None
    node: Optional[cst.CSTNode] = None


@dataclass(eq=False)
class LayerV:
    kind: LayerKind
    label: str
    info: Optional[SkipInfo] = None
    namespaces: dict[str, NS] = field(default_factory=dict)
    tainted: bool = False
    #: For `LazyModule(fn)`: what `fn()` builds (a layer, or UNKNOWN).
    lazy: Any = None


@dataclass(eq=False)
class SeqV:
    """An nn.Sequential (or subclass) instance; also a layer when nested."""

    label: str
    node: cst.CSTNode
    children: list[tuple[str, Any, Optional[cst.CSTNode]]] = field(default_factory=list)
    complete: bool = True
    unknown: Optional[str] = None
    name: Optional[str] = None
    nested_in: bool = False
    piped: bool = False
    tainted: bool = False
    #: Given to verify_skippables (or a pipe that calls it): a stash never popped fails.
    verified: bool = False
    #: An element of the partition list given to inspect_skip_layout: a fragment, not a model.
    partition: bool = False
    #: Leaves the module: returned by a builder nobody here calls, or bound at module level.
    #: Its pipe may be in another file, so it counts as verified for SKP202.
    escapes: bool = False

    def add(self, key: Optional[str], value: Any, node: Optional[cst.CSTNode]) -> None:
        if not self.complete:
            return
        if value is UNKNOWN or isinstance(value, (LayerV, SeqV)):
            self.children.append((key if key is not None else str(len(self.children)), value, node))
        else:
            self.stop("a child that is not a module")

    def stop(self, why: str) -> None:
        if self.complete:
            self.complete = False
            self.unknown = why


@dataclass(eq=False)
class ListV:
    items: list[tuple[Any, Optional[cst.CSTNode]]]
    is_tuple: bool = False
    tainted: bool = False
    origin: Optional[str] = None


@dataclass(eq=False)
class DictV:
    items: dict[Any, tuple[Any, Optional[cst.CSTNode]]]
    ordered: bool = False
    tainted: bool = False


@dataclass(eq=False)
class FuncV:
    node: cst.FunctionDef
    env: "Env"
    self_value: Any = None


@dataclass(eq=False)
class LambdaV:
    node: cst.Lambda
    env: "Env"


@dataclass(eq=False)
class ClassV:
    name: str
    kind: str  # "skippable" | "sequential" | "plain" | "unknown"
    info: Optional[SkipInfo] = None
    node: Optional[cst.ClassDef] = None
    env: Optional["Env"] = None
    #: For a plain module class: whether its own code builds skippable layers that would be nested
    #: in it: "no", "skippable" (known skippable classes), or "unknown" (classes that cannot be known).
    nests: str = "no"


@dataclass(eq=False)
class ObjV:
    """An instance of a plain class whose methods are being run (`self`)."""

    cls: ClassV
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiV:
    symbol: str


@dataclass(frozen=True)
class BuiltinV:
    name: str


@dataclass(frozen=True)
class ExternalV:
    """Something imported from outside the project: `torch.nn.Conv2d`, `timm`, ..."""

    qualified: str


@dataclass(eq=False)
class BoundV:
    obj: Any
    attr: str


@dataclass(eq=False)
class SuperV:
    obj: Any


@dataclass(eq=False)
class PipeV:
    record: "_PipeRecord"


@dataclass(eq=False)
class _PipeRecord:
    kind: str
    node: cst.Call
    module: Any
    balance: Optional[tuple[int, ...]]
    name: Optional[str] = None


_BUILTINS = frozenset({"range", "reversed", "enumerate", "list", "tuple", "len", "zip", "dict",
                       "min", "max", "abs", "super", "int", "sum", "sorted"})


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _OutOfBudget(Exception):
    pass


class _LoopUnknown(Exception):
    """Control flow of a loop (break/continue/return under an unknown condition) cannot be known."""


class Env:
    """Variables of one running frame; a fork overlay writes locally and reads through."""

    __slots__ = ("vars", "parent", "scope", "func", "overlay")

    def __init__(self, parent: Optional[Env], scope: Scope, func: Optional[cst.FunctionDef] = None,
                 overlay: bool = False) -> None:
        self.vars: dict[str, Any] = {}
        self.parent = parent
        self.scope = scope
        self.func = func
        self.overlay = overlay

    def find(self, name: str) -> tuple[bool, Any]:
        env: Optional[Env] = self
        while env is not None:
            if name in env.vars:
                return True, env.vars[name]
            env = env.parent
        return False, None

    def frame(self) -> Env:
        """The function (or module) frame this env belongs to: where assignments go."""
        env = self
        while env.overlay and env.parent is not None:
            env = env.parent
        return env


# -- the interpreter ---------------------------------------------------------------------------

class Builder:
    """Runs one module's model-building code abstractly and records compositions and pipes."""

    def __init__(self, index: ModuleIndex, facts: ModuleFacts, locator: Locator,
                 resolve_class: Optional[Any] = None) -> None:
        self.index = index
        self.locator = locator
        self.resolve_class = resolve_class  # (qualified name) -> ClassV | None
        self.skippable_of: dict[int, SkipInfo] = {}
        for cls in facts.skippables:
            if cls.site is not None:
                self.skippable_of[id(cls.site.node)] = _skip_info(cls)
        self.steps = 0
        self.depth = 0
        self.ns_serial = 0
        self.sequences: list[SeqV] = []
        self.pipes: list[_PipeRecord] = []
        #: Creation nodes of Sequentials used as inspect_skip_layout partitions (in any run).
        self.partition_nodes: set[int] = set()
        self.ran: set[int] = set()
        self.names_for: dict[int, str] = {}
        self.class_scope: dict[int, Scope] = {}
        for info in index.classes:
            self.class_scope[id(info.node)] = info.body
        self._module_env = Env(None, index.scope)
        self.max_unroll = MAX_UNROLL
        #: Module-level functions whose result a harness gives to a pipe (`skiplint verify FILE:build`).
        self.verified_functions: frozenset[str] = frozenset()

    # -- entry points -------------------------------------------------------------------------
    def run(self) -> None:
        env = self._module_env
        env.vars["__name__"] = "__main__"
        self._guarded(lambda: self.block(self.index.module.body, env))
        for value in list(env.vars.values()):
            self.mark_escape(value)
        # Functions and methods nobody in the module ran: builders and tests, with defaults.
        for stmt in self.index.module.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.verified_functions:
                self._guarded(lambda s=stmt: self.verify_result(self.call_function(FuncV(s, env), [], {}, entry=True)))
            elif isinstance(stmt, cst.FunctionDef) and id(stmt) not in self.ran:
                self._guarded(lambda s=stmt: self.mark_escape(
                    self.call_function(FuncV(s, env), [], {}, entry=True)))
            elif isinstance(stmt, cst.ClassDef):
                found, cls = env.find(stmt.name.value)
                if not (found and isinstance(cls, ClassV)) or cls.kind == "skippable":
                    continue
                for item in _class_functions(stmt):
                    if id(item) in self.ran or item.name.value == "forward":
                        continue
                    if cls.kind == "sequential" and item.name.value == "__init__":
                        self._guarded(lambda c=cls: self.instantiate(c, [], {}, stmt, entry=True))
                    else:
                        self._guarded(lambda i=item, c=cls: self.mark_escape(self.call_function(
                            FuncV(i, c.env or env, ObjV(c)), [], {}, entry=True)))

    def verify_result(self, result: Any) -> None:
        """A harness verifies what the function returns (a model, or a tuple starting with one)."""
        if isinstance(result, ListV) and result.is_tuple and result.items and not result.tainted:
            result = result.items[0][0]
        if isinstance(result, SeqV):
            result.verified = True

    def mark_escape(self, value: Any) -> None:
        """A model that leaves the module (a builder's result, a module-level binding)."""
        if isinstance(value, ListV) and value.is_tuple and value.items and not value.tainted:
            value = value.items[0][0]
        if isinstance(value, SeqV):
            value.escapes = True

    def _guarded(self, action: Any) -> None:
        try:
            action()
        except (_OutOfBudget, RecursionError):
            pass
        except (_Return, _Break, _Continue, _LoopUnknown):
            pass

    def tick(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _OutOfBudget

    # -- statements --------------------------------------------------------------------------
    def block(self, stmts: Sequence[cst.CSTNode], env: Env) -> None:
        for stmt in stmts:
            self.tick()
            if isinstance(stmt, cst.SimpleStatementLine):
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
        if isinstance(small, cst.Assign):
            value = self.eval(small.value, env)
            for target in small.targets:
                self.assign(target.target, value, env, small.value)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self.assign(small.target, self.eval(small.value, env), env, small.value)
        elif isinstance(small, cst.AugAssign):
            self.aug_assign(small, env)
        elif isinstance(small, cst.Expr):
            self.eval(small.value, env)
        elif isinstance(small, cst.Return):
            raise _Return(self.eval(small.value, env) if small.value is not None else None)
        elif isinstance(small, cst.Break):
            raise _Break
        elif isinstance(small, cst.Continue):
            raise _Continue
        elif isinstance(small, (cst.Global, cst.Nonlocal)):
            for item in small.names:
                self.set(item.name.value, UNKNOWN, env)
        elif isinstance(small, cst.Del):
            self.taint_targets([small.target], env)
        elif isinstance(small, cst.Raise):
            raise _Return(UNKNOWN)

    def compound(self, stmt: cst.BaseCompoundStatement, env: Env) -> None:
        if isinstance(stmt, cst.FunctionDef):
            self.set(stmt.name.value, FuncV(stmt, env), env)
        elif isinstance(stmt, cst.ClassDef):
            self.set(stmt.name.value, self.define_class(stmt, env), env)
        elif isinstance(stmt, cst.If):
            self.if_(stmt, env)
        elif isinstance(stmt, cst.For):
            self.for_(stmt, env)
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                self.eval(item.item, env)
                if item.asname is not None:
                    self.assign(item.asname.name, UNKNOWN, env, None)
            self.suite(stmt.body, env)
        elif isinstance(stmt, cst.Try):
            try:
                self.suite(stmt.body, env)
            except (_Break, _Continue, _Return):
                raise
            for handler in stmt.handlers:
                self.taint_block(handler.body, env)
            if stmt.orelse is not None:
                self.suite(stmt.orelse.body, env)
            if stmt.finalbody is not None:
                self.suite(stmt.finalbody.body, env)
        else:  # while, match, try*: effects unknown
            self.taint_block(stmt, env)

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
            try:
                if isinstance(branch, cst.If):
                    self.if_(branch, overlay)
                else:
                    self.suite(branch, overlay)  # type: ignore[arg-type]
            except (_Break, _Continue):
                raise _LoopUnknown from None
            except _Return:
                overlay.vars["$returned"] = True
            overlays.append(overlay)
            self.taint_block(whole, env)
        names = set().union(*(o.vars for o in overlays))
        for name in names:
            if name == "$returned":
                continue
            values = [o.vars.get(name, _MISSING) for o in overlays]
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
                except _Continue:
                    continue
                except _Break:
                    return
        except _LoopUnknown:
            self.taint_block(stmt, env)
            return
        if stmt.orelse is not None:
            self.suite(stmt.orelse.body, env)

    # -- bindings ----------------------------------------------------------------------------
    def set(self, name: str, value: Any, env: Env) -> None:
        env.vars[name] = value

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
                _taint(obj)
        elif isinstance(target, cst.Attribute):
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
                _taint(obj)
        else:
            self.taint_targets([target], env)

    def taint_targets(self, targets: Sequence[cst.BaseExpression], env: Env) -> None:
        for target in targets:
            if isinstance(target, cst.Name):
                self.set(target.value, UNKNOWN, env)
            elif isinstance(target, (cst.Tuple, cst.List)):
                self.taint_targets([e.value for e in target.elements], env)
            elif isinstance(target, (cst.Subscript, cst.Attribute)):
                _taint(self.peek(target.value, env))
            elif isinstance(target, cst.StarredElement):
                self.taint_targets([target.value], env)

    def taint_block(self, node: cst.CSTNode, env: Env) -> None:
        """What an unknown block may assign or mutate becomes unknown."""
        for inner in syntax.walk(node):
            if isinstance(inner, cst.Assign):
                self.taint_targets([t.target for t in inner.targets], env)
            elif isinstance(inner, (cst.AugAssign, cst.AnnAssign)):
                self.taint_targets([inner.target], env)
            elif isinstance(inner, (cst.For, cst.CompFor)):
                self.taint_targets([inner.target], env)
            elif isinstance(inner, cst.Call):
                func = inner.func
                if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS:
                    _taint(self.peek(func.value, env))
                for arg in inner.args:
                    if isinstance(arg.value, (cst.Name, cst.Attribute)):
                        _taint(self.peek(arg.value, env))
            elif isinstance(inner, (cst.FunctionDef, cst.ClassDef)):
                self.set(inner.name.value, UNKNOWN, env)

    def peek(self, node: cst.BaseExpression, env: Env) -> Any:
        """The value a plain name or `self.attr` refers to, without running anything."""
        if isinstance(node, cst.Name):
            return env.find(node.value)[1]
        if isinstance(node, cst.Attribute):
            obj = self.peek(node.value, env)
            if isinstance(obj, ObjV):
                return obj.attrs.get(node.attr.value)
        return None

    def aug_assign(self, small: cst.AugAssign, env: Env) -> None:
        current = self.eval(small.target, env)
        value = self.eval(small.value, env)
        if isinstance(current, ListV) and not current.tainted and isinstance(small.operator, cst.AddAssign):
            items = self.iterate(value, with_nodes=True)
            if items is None:
                current.tainted = True
            else:
                current.items.extend(items)
            return
        result = _binary(current, _AUG.get(type(small.operator)), value)
        self.assign(small.target, result, env, None)

    # -- expressions -------------------------------------------------------------------------
    def eval(self, node: cst.BaseExpression, env: Env) -> Any:
        self.tick()
        if isinstance(node, cst.Name):
            return self.name(node, env)
        if isinstance(node, cst.Integer):
            return int(node.value.replace("_", ""), 0)
        if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
            value = syntax.string_value(node)
            return UNKNOWN if value is None else value
        if isinstance(node, cst.Call):
            return self.call_expr(node, env)
        if isinstance(node, cst.Attribute):
            return self.attribute(node, env)
        if isinstance(node, (cst.List, cst.Tuple)):
            items: list[tuple[Any, Optional[cst.CSTNode]]] = []
            for element in node.elements:
                if isinstance(element, cst.StarredElement):
                    inner = self.iterate(self.eval(element.value, env), with_nodes=True)
                    if inner is None:
                        return ListV([], isinstance(node, cst.Tuple), tainted=True)
                    items.extend(inner)
                else:
                    items.append((self.eval(element.value, env), element.value))
            return ListV(items, isinstance(node, cst.Tuple))
        if isinstance(node, cst.Dict):
            result = DictV({}, ordered=False)
            for entry in node.elements:
                if not isinstance(entry, cst.DictElement):
                    return DictV({}, tainted=True)
                key = self.eval(entry.key, env)
                if not _hashable_constant(key):
                    return DictV({}, tainted=True)
                result.items[key] = (self.eval(entry.value, env), entry.value)
            return result
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            return self.comprehension(node, env)
        if isinstance(node, cst.Subscript):
            return self.subscript(node, env)
        if isinstance(node, cst.BinaryOperation):
            left = self.eval(node.left, env)
            right = self.eval(node.right, env)
            return _binary(left, type(node.operator), right)
        if isinstance(node, cst.UnaryOperation):
            value = self.eval(node.expression, env)
            if isinstance(node.operator, cst.Minus) and _is_int(value):
                return -value
            if isinstance(node.operator, cst.Not) and isinstance(value, (bool, int, str)):
                return not value
            return UNKNOWN
        if isinstance(node, cst.Comparison):
            return self.comparison(node, env)
        if isinstance(node, cst.BooleanOperation):
            left = self.eval(node.left, env)
            if not isinstance(left, (bool, int, str)) and left is not None:
                return UNKNOWN
            if isinstance(node.operator, cst.And):
                return self.eval(node.right, env) if left else left
            return left if left else self.eval(node.right, env)
        if isinstance(node, cst.IfExp):
            test = self.eval(node.test, env)
            if isinstance(test, (bool, int, str)) or test is None:
                return self.eval(node.body if test else node.orelse, env)
            return UNKNOWN
        if isinstance(node, cst.Lambda):
            return LambdaV(node, env)
        return UNKNOWN

    def name(self, node: cst.Name, env: Env) -> Any:
        found, value = env.find(node.value)
        if found:
            return value
        if node.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.value]
        return self.imported(node, env)

    def imported(self, node: cst.BaseExpression, env: Env) -> Any:
        scope = env.scope
        symbol = scope.api(node)
        if symbol is not None:
            return ApiV(symbol)
        qualified = scope.qualified(node)
        if qualified is not None:
            if self.resolve_class is not None and not qualified.startswith("torch."):
                cls = self.resolve_class(qualified)
                if cls is not None:
                    return cls
            return ExternalV(qualified)
        if isinstance(node, cst.Name) and node.value in _BUILTINS and scope.lookup(node.value) is None:
            return BuiltinV(node.value)
        return UNKNOWN

    def attribute(self, node: cst.Attribute, env: Env) -> Any:
        head = node
        while isinstance(head, cst.Attribute):
            head = head.value  # type: ignore[assignment]
        if isinstance(head, cst.Name) and not env.find(head.value)[0]:
            return self.imported(node, env)
        obj = self.eval(node.value, env)
        attr = node.attr.value
        if isinstance(obj, ObjV):
            if attr in obj.attrs:
                return obj.attrs[attr]
            method = _class_method(obj.cls, attr)
            if method is not None:
                return FuncV(method, obj.cls.env or self._module_env, obj)
            return UNKNOWN
        if isinstance(obj, ExternalV):
            return ExternalV(f"{obj.qualified}.{attr}")
        if isinstance(obj, ApiV) and attr == "__init__":
            return BoundV(obj, attr)
        if obj is UNKNOWN:
            return UNKNOWN
        return BoundV(obj, attr)

    def subscript_key(self, node: cst.Subscript, env: Env) -> Any:
        if len(node.slice) != 1:
            return UNKNOWN
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            return self.eval(index.value, env)
        if isinstance(index, cst.Slice):
            parts = [self.eval(p, env) if p is not None else None for p in (index.lower, index.upper, index.step)]
            if all(p is None or _is_int(p) for p in parts):
                return slice(*parts)
        return UNKNOWN

    def subscript(self, node: cst.Subscript, env: Env) -> Any:
        obj = self.eval(node.value, env)
        key = self.subscript_key(node, env)
        if key is UNKNOWN:
            return UNKNOWN
        if isinstance(obj, ListV) and not obj.tainted:
            if isinstance(key, slice):
                return ListV(obj.items[key], obj.is_tuple)
            if _is_int(key) and -len(obj.items) <= key < len(obj.items):
                value = obj.items[key][0]
                if isinstance(value, NS) and value.origin is None and obj.origin is not None:
                    value.origin = f"{obj.origin}[{key % len(obj.items)}]"
                return value
            return UNKNOWN
        if isinstance(obj, DictV) and not obj.tainted and _hashable_constant(key):
            entry = obj.items.get(key)
            return entry[0] if entry is not None else UNKNOWN
        if isinstance(obj, SeqV) and obj.complete and not obj.tainted:
            if isinstance(key, slice):
                part = SeqV(obj.label, node)
                part.children = [(str(i), v, n) for i, (_, v, n) in enumerate(obj.children[key])]
                self.sequences.append(part)
                return part
            if _is_int(key) and -len(obj.children) <= key < len(obj.children):
                return obj.children[key][1]
        return UNKNOWN

    def comparison(self, node: cst.Comparison, env: Env) -> Any:
        left = self.eval(node.left, env)
        for target in node.comparisons:
            right = self.eval(target.comparator, env)
            op = target.operator
            if isinstance(op, (cst.Is, cst.IsNot)):
                if left is None or right is None:
                    if left is UNKNOWN or right is UNKNOWN:
                        return UNKNOWN
                    same = left is right
                    result = same if isinstance(op, cst.Is) else not same
                else:
                    return UNKNOWN
            elif not (_comparable(left) and _comparable(right)):
                return UNKNOWN
            else:
                try:
                    result = _COMPARE[type(op)](left, right)
                except (KeyError, TypeError):
                    return UNKNOWN
            if not result:
                return False
            left = right
        return True

    def comprehension(self, node: cst.ListComp | cst.GeneratorExp, env: Env) -> Any:
        out: list[tuple[Any, Optional[cst.CSTNode]]] = []
        inner = Env(env, env.scope, env.func)

        def loop(clause: Optional[cst.CompFor]) -> bool:
            if clause is None:
                out.append((self.eval(node.elt, inner), node.elt))
                return len(out) <= self.max_unroll
            items = self.iterate(self.eval(clause.iter, inner))
            if items is None:
                return False
            for item in items:
                self.assign(clause.target, item, inner, None)
                keep = True
                for condition in clause.ifs:
                    test = self.eval(condition.test, inner)
                    if not isinstance(test, (bool, int, str)) and test is not None:
                        return False
                    keep = keep and bool(test)
                if keep and not loop(clause.inner_for_in):
                    return False
            return True

        if not loop(node.for_in):
            return ListV([], tainted=True)
        return ListV(out)

    def iterate(self, value: Any, with_nodes: bool = False) -> Optional[list[Any]]:
        """The items of a known iterable (bounded), or None."""
        items: Optional[list[tuple[Any, Optional[cst.CSTNode]]]] = None
        if isinstance(value, ListV) and not value.tainted:
            items = list(value.items)
        elif isinstance(value, range):
            if len(value) <= self.max_unroll:
                items = [(i, None) for i in value]
        elif isinstance(value, DictV) and not value.tainted:
            items = [(k, None) for k in value.items]
        elif isinstance(value, str):
            items = [(c, None) for c in value]
        elif isinstance(value, SeqV) and value.complete and not value.tainted:
            items = [(v, n) for _, v, n in value.children]
        if items is None or len(items) > self.max_unroll:
            return None
        return items if with_nodes else [item for item, _ in items]

    # -- calls -------------------------------------------------------------------------------
    def call_expr(self, node: cst.Call, env: Env) -> Any:
        func_node = node.func
        if (isinstance(func_node, cst.Attribute) and isinstance(func_node.value, cst.Call)
                and isinstance(func_node.value.func, cst.Name) and func_node.value.func.value == "super"
                and func_node.attr.value == "__init__"):
            found, self_value = env.frame().find("self")
            if found and isinstance(self_value, SeqV):
                self.fill_sequential(self_value, self.arguments(node, env)[0], {}, node)
            return None
        func = self.eval(func_node, env)
        args, kwargs, known = self.arguments(node, env)
        if not known and not isinstance(func, ApiV):
            for value, _ in args:
                _taint(value)
            return UNKNOWN
        return self.call(func, args, kwargs, node, known)

    def arguments(self, node: cst.Call, env: Env) -> tuple[list[tuple[Any, Any]], dict[str, Any], bool]:
        args: list[tuple[Any, Any]] = []
        kwargs: dict[str, Any] = {}
        known = True
        for arg in node.args:
            value = self.eval(arg.value, env)
            if arg.star == "*":
                items = self.iterate(value, with_nodes=True)
                if items is None:
                    known = False
                    args.append((_STAR_UNKNOWN, arg.value))
                else:
                    args.extend(items)
            elif arg.star == "**":
                known = False
            elif arg.keyword is not None:
                kwargs[arg.keyword.value] = (value, arg.value)
            else:
                args.append((value, arg.value))
        return args, kwargs, known

    def call(self, func: Any, args: list[tuple[Any, Any]], kwargs: dict[str, Any], node: cst.Call,
             known: bool = True) -> Any:
        if isinstance(func, ApiV):
            return self.api_call(func.symbol, args, kwargs, node, known)
        if not known:
            return UNKNOWN
        if isinstance(func, ClassV):
            return self.instantiate(func, args, kwargs, node)
        if isinstance(func, (FuncV, LambdaV)):
            return self.call_function(func, [a for a, _ in args], {k: v for k, (v, _) in kwargs.items()})
        if isinstance(func, BoundV):
            return self.method(func.obj, func.attr, args, kwargs, node)
        if isinstance(func, BuiltinV):
            return _builtin(func.name, [a for a, _ in args], self)
        if isinstance(func, ExternalV):
            if func.qualified.startswith("torch.") and func.qualified.split(".")[-1][:1].isupper():
                return LayerV("plain", func.qualified.split(".")[-1])
            for value, _ in (*args, *kwargs.values()):
                _taint(value)
            return UNKNOWN
        for value, _ in (*args, *kwargs.values()):
            _taint(value)
        return UNKNOWN

    def api_call(self, symbol: str, args: list[tuple[Any, Any]], kwargs: dict[str, Any], node: cst.Call,
                 known: bool) -> Any:
        if symbol == "Sequential":
            seq = SeqV("Sequential", node)
            self.sequences.append(seq)
            if kwargs:
                seq.stop("keyword arguments to Sequential")
            self.fill_sequential(seq, args, kwargs, node)
            return seq
        if symbol == "Namespace":
            self.ns_serial += 1
            return NS(self.ns_serial, node=node)
        if symbol == "OrderedDict":
            if not known or kwargs:
                return DictV({}, ordered=True, tainted=True)
            if not args:
                return DictV({}, ordered=True)
            return _to_dict(args[0][0], ordered=True)
        if symbol in _PIPES:
            module = _argument(args, kwargs, 0, "module")
            balance = None if symbol == "TorchPipe" else _argument(args, kwargs, 1, "balance")
            lazy = self.lazy_layers(module, node)
            if lazy is not None:
                # Skippables inside LazyModule lists: the pipe call that receives them fails (SKP304).
                record = _PipeRecord("LazyModule", node, lazy, None)
            else:
                record = _PipeRecord(symbol, node, module, _balance(balance))
            self.pipes.append(record)
            if isinstance(module, SeqV):
                module.piped = True
                module.verified = module.verified or symbol in _VERIFIERS
            return PipeV(record)
        if symbol == "verify_skippables":
            module = _argument(args, kwargs, 0, "module")
            if isinstance(module, SeqV):
                module.verified = True
            return None
        if symbol == "inspect_skip_layout":
            return self.inspect_layout(_argument(args, kwargs, 0, "partitions"), node)
        if symbol in ("balance_by_time", "balance_by_size"):
            module = _argument(args, kwargs, 1, "module")
            self.pipes.append(_PipeRecord(symbol, node, module, None))
            return UNKNOWN
        if symbol == "LazyModule":
            target = _argument(args, kwargs, 0, "function")
            built = self.call_function(target, [], {}) if isinstance(target, (FuncV, LambdaV)) else UNKNOWN
            return LayerV("unknown", "LazyModule", lazy=built)
        if symbol == "skippable":
            return BoundV(ApiV("skippable"), "__call__")
        return UNKNOWN

    def lazy_layers(self, module: Any, node: cst.Call) -> Optional[SeqV]:
        """The layers built by the `LazyModule`s of a list given to a pipe (None: no LazyModule)."""
        items = self.iterate(module) if isinstance(module, ListV) else None
        if not items or not any(isinstance(item, LayerV) and item.lazy is not None for item in items):
            return None
        seq = SeqV("LazyModule", node)
        for item in items:
            built = item.lazy if isinstance(item, LayerV) and item.lazy is not None else item
            seq.add(None, built if isinstance(built, (LayerV, SeqV)) else UNKNOWN, node)
        return seq

    def inspect_layout(self, partitions: Any, node: cst.Call) -> Any:
        """`inspect_skip_layout([p1, p2, ...])`: the partitions are fragments of one composition.

        Each Sequential of the list is marked as a partition (not checked alone); when every
        partition is known, their children in order form the composition that is checked, with
        the partition sizes as its balance."""
        items = self.iterate(partitions, with_nodes=True)
        if items is None:
            return UNKNOWN
        for value, _ in items:
            if isinstance(value, SeqV):
                value.partition = True
                self.partition_nodes.add(id(value.node))
        if not items or not all(isinstance(value, SeqV) for value, _ in items):
            return UNKNOWN
        whole = SeqV("inspect_skip_layout", node)
        sizes = []
        for value, _ in items:
            if not value.complete or value.tainted:
                whole.stop(value.unknown or "a partition changed under a condition")
                break
            sizes.append(len(value.children))
            for _, child, child_node in value.children:
                whole.add(None, child, child_node)
        self.sequences.append(whole)
        record = _PipeRecord("inspect_skip_layout", node, whole, tuple(sizes) if whole.complete else None)
        self.pipes.append(record)
        return PipeV(record)

    def fill_sequential(self, seq: SeqV, args: list[tuple[Any, Any]], kwargs: dict[str, Any],
                        node: cst.CSTNode) -> None:
        if len(args) == 1 and isinstance(args[0][0], DictV):
            mapping: DictV = args[0][0]
            if mapping.tainted or not mapping.ordered:
                seq.stop("an OrderedDict whose entries cannot be known")
                return
            for key, (value, vnode) in mapping.items.items():
                self.add_child(seq, str(key), value, vnode)
            return
        for value, vnode in args:
            if value is _STAR_UNKNOWN:
                seq.stop(f"*{_code(vnode)}: a list whose items cannot be known")
                return
            self.add_child(seq, None, value, vnode)

    def add_child(self, seq: SeqV, key: Optional[str], value: Any, node: Any) -> None:
        if isinstance(value, SeqV):
            value.nested_in = True
        elif isinstance(value, ListV) and value.is_tuple is False and not value.tainted:
            seq.stop("a list given as a child")
            return
        seq.add(key, value, node)

    def method(self, obj: Any, attr: str, args: list[tuple[Any, Any]], kwargs: dict[str, Any],
               node: cst.Call) -> Any:
        values = [a for a, _ in args]
        if isinstance(obj, ApiV):
            if obj.symbol == "skippable" and attr == "__call__" and len(values) == 1:
                cls = values[0]
                if isinstance(cls, ClassV) and cls.node is not None and id(cls.node) in self.skippable_of:
                    return ClassV(cls.name, "skippable", self.skippable_of[id(cls.node)], cls.node, cls.env)
                return UNKNOWN
            if obj.symbol == "Sequential" and attr == "__init__" and args and isinstance(values[0], SeqV):
                self.fill_sequential(values[0], args[1:], kwargs, node)
                return None
            return UNKNOWN
        if isinstance(obj, ListV):
            if obj.tainted or obj.is_tuple:
                return UNKNOWN
            if attr == "append" and len(args) == 1:
                obj.items.append(args[0])
                return None
            if attr == "extend" and len(args) == 1:
                items = self.iterate(values[0], with_nodes=True)
                if items is None:
                    obj.tainted = True
                else:
                    obj.items.extend(items)
                return None
            if attr == "insert" and len(args) == 2 and _is_int(values[0]):
                obj.items.insert(values[0], args[1])
                return None
            if attr == "reverse" and not args:
                obj.items.reverse()
                return None
            if attr == "copy" and not args:
                return ListV(list(obj.items))
            obj.tainted = attr in _MUTATORS or obj.tainted
            return UNKNOWN
        if isinstance(obj, DictV):
            if obj.tainted:
                return UNKNOWN
            if attr in ("items", "values", "keys") and not args:
                if attr == "keys":
                    return ListV([(k, None) for k in obj.items])
                if attr == "values":
                    return ListV(list(obj.items.values()))
                return ListV([(ListV([(k, None), entry], True), None) for k, entry in obj.items.items()])
            if attr == "__setitem__" and len(args) == 2 and _hashable_constant(values[0]):
                obj.items[values[0]] = args[1]
                return None
            if attr == "update" and len(args) == 1 and isinstance(values[0], DictV) and not values[0].tainted:
                obj.items.update(values[0].items)
                return None
            obj.tainted = attr in _MUTATORS
            return UNKNOWN
        if isinstance(obj, SeqV):
            if attr in ("add_module", "register_module") and len(args) == 2 and isinstance(values[0], str):
                self.add_child(obj, values[0], values[1], args[1][1])
                return None
            if attr == "append" and len(args) == 1:
                self.add_child(obj, None, values[0], args[0][1])
                return obj
            if attr == "extend" and len(args) == 1:
                items = self.iterate(values[0], with_nodes=True)
                if items is None:
                    obj.stop("extend() with items that cannot be known")
                else:
                    for value, vnode in items:
                        self.add_child(obj, None, value, vnode)
                return obj
            if attr in _MODULE_METHODS:
                return obj
            if attr in _MUTATORS or attr == "insert":
                obj.stop(f"{attr}()")
            return UNKNOWN
        if isinstance(obj, LayerV):
            if attr == "isolate" and obj.kind == "skippable":
                return self.isolate(obj, values, kwargs)
            if attr in _MODULE_METHODS:
                return obj
            return UNKNOWN
        if isinstance(obj, (int, str)) and attr in ("format", "upper", "lower"):
            return UNKNOWN
        _taint(obj)
        return UNKNOWN

    def isolate(self, layer: LayerV, values: list[Any], kwargs: dict[str, Any]) -> Any:
        ns = values[0] if values else kwargs.get("ns", (UNKNOWN,))[0]
        if not isinstance(ns, NS) or len(values) > 1:
            layer.tainted = True
            return layer
        only_entry = kwargs.get("only")
        info = layer.info
        if only_entry is None:
            if info is None or info.stash is None or info.pop is None:
                layer.tainted = True
                return layer
            names = info.stash | info.pop
        else:
            only = self.iterate(only_entry[0])
            if only is None or not all(isinstance(n, str) for n in only):
                layer.tainted = True
                return layer
            names = frozenset(only)
            if info is not None and info.stash is not None and info.pop is not None and \
                    not names <= info.stash | info.pop:
                # SKP115 reports the misnamed skip; the composition is not judged past it.
                layer.tainted = True
                return layer
        for name in names:
            layer.namespaces[name] = ns
        return layer

    def call_function(self, func: FuncV | LambdaV, args: list[Any], kwargs: dict[str, Any],
                      entry: bool = False) -> Any:
        if isinstance(func, LambdaV):
            env = Env(func.env, func.env.scope, func.env.func)
            params = func.node.params
            if not self.bind_params(params, args, kwargs, env, entry=False):
                return UNKNOWN
            return self.eval(func.node.body, env)
        node = func.node
        if self.depth >= MAX_CALL_DEPTH:
            return UNKNOWN
        self.ran.add(id(node))
        scope = self.index.scopes.get(id(node), func.env.scope)
        env = Env(func.env, scope, node)
        positional = list(args)
        if func.self_value is not None:
            positional.insert(0, func.self_value)
        if not self.bind_params(node.params, positional, kwargs, env, entry=entry):
            return UNKNOWN
        self.depth += 1
        try:
            self.block(syntax.statements(node.body), env)
            result: Any = None
        except _Return as ret:
            result = ret.value
        except (_Break, _Continue, _LoopUnknown):
            result = UNKNOWN
        finally:
            self.depth -= 1
        if env.vars.get("$maybe_returned"):
            result = UNKNOWN
        if entry and isinstance(result, SeqV) and result.name is None:
            result.name = f"{node.name.value}()"
        return result

    def bind_params(self, params: cst.Parameters, args: list[Any], kwargs: dict[str, Any], env: Env,
                    entry: bool) -> bool:
        positional = [*params.posonly_params, *params.params]
        rest = list(args)
        for param in positional:
            name = param.name.value
            if rest:
                env.vars[name] = rest.pop(0)
            elif name in kwargs:
                env.vars[name] = kwargs.pop(name)
            elif param.default is not None:
                env.vars[name] = self.eval(param.default, env.parent or env)
            elif entry:
                env.vars[name] = UNKNOWN
            else:
                return False
        if isinstance(params.star_arg, cst.Param):
            env.vars[params.star_arg.name.value] = ListV([(a, None) for a in rest], True)
            rest = []
        if rest:
            return False
        for param in params.kwonly_params:
            name = param.name.value
            if name in kwargs:
                env.vars[name] = kwargs.pop(name)
            elif param.default is not None:
                env.vars[name] = self.eval(param.default, env.parent or env)
            elif entry:
                env.vars[name] = UNKNOWN
            else:
                return False
        if isinstance(params.star_kwarg, cst.Param):
            env.vars[params.star_kwarg.name.value] = DictV({k: (v, None) for k, v in kwargs.items()})
            kwargs = {}
        return not kwargs

    # -- classes -----------------------------------------------------------------------------
    def define_class(self, node: cst.ClassDef, env: Env) -> ClassV:
        name = node.name.value
        info = self.skippable_of.get(id(node))
        if info is not None:
            return ClassV(name, "skippable", info, node, env)
        kind = "plain"
        for base in node.bases:
            value = self.eval(base.value, env)
            if isinstance(value, ApiV) and value.symbol == "Sequential":
                kind = "sequential"
            elif isinstance(value, ClassV) and value.kind == "sequential":
                kind = "sequential"
            elif isinstance(value, ClassV) and value.kind == "plain":
                continue
            elif isinstance(value, ExternalV) and value.qualified.startswith("torch."):
                continue
            else:
                kind = "unknown"
                break
        return ClassV(name, kind, None, node, env, nests=self.class_nests(node, env) if kind == "plain" else "no")

    def class_nests(self, node: cst.ClassDef, env: Env) -> str:
        """What layers a plain module class's own code builds (they would be nested in it):
        "skippable" when some is a known skippable class, "unknown" when some class cannot be
        known, "no" when all are torch.nn built-ins, known plain classes or not modules at all."""
        return self._code_nests(node, env, set(), 0)

    def _code_nests(self, node: cst.CSTNode, env: Env, seen: builtins.set[int], depth: int) -> str:
        if id(node) in seen or depth > 6:
            return "no"
        seen.add(id(node))
        found = "no"
        for inner in syntax.walk(node, into_scopes=True):
            if not (isinstance(inner, cst.Call) and isinstance(inner.func, (cst.Name, cst.Attribute))):
                continue
            head = inner.func
            while isinstance(head, cst.Attribute):
                head = head.value  # type: ignore[assignment]
            if isinstance(head, cst.Name) and head.value == "self":
                continue  # the class's own methods: walked as part of its body
            verdict = self._callee_nests(inner.func, env, seen, depth)
            if verdict == "skippable":
                return verdict
            if verdict == "unknown":
                found = verdict
        return found

    def _callee_nests(self, func: cst.BaseExpression, env: Env, seen: builtins.set[int], depth: int) -> str:
        value: Any = UNKNOWN
        if isinstance(func, cst.Name):
            found, value = env.find(func.value)
            if not found:
                late = self._late_definition(func.value)
                if late is not None:
                    if id(late) in self.skippable_of:
                        return "skippable"
                    return self._code_nests(late, self._module_env, seen, depth + 1)
                value = self.imported(func, env)
        else:
            value = self.imported(func, env)
        if isinstance(value, ClassV):
            if value.kind == "skippable":
                return "skippable"
            if value.kind == "plain":
                return value.nests
            if value.kind == "sequential" and value.node is not None:
                return self._code_nests(value.node, value.env or env, seen, depth + 1)
            return "unknown"
        if isinstance(value, FuncV):
            return self._code_nests(value.node, value.env, seen, depth + 1)
        if isinstance(value, LambdaV):
            return self._code_nests(value.node, value.env, seen, depth + 1)
        if isinstance(value, ApiV) and value.symbol == "skippable":
            return "unknown"  # skippable(...)(cls) built in the class's code
        return "no"  # torch.nn built-ins, the skip API, functions of other packages, values

    def _late_definition(self, name: str) -> Optional[cst.CSTNode]:
        """A module-level class or function defined after the code that names it."""
        found: Optional[cst.CSTNode] = None
        for stmt in self.index.module.body:
            if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)) and stmt.name.value == name:
                found = stmt
        return found

    def held_layers(self, args: list[tuple[Any, Any]], kwargs: dict[str, Any]) -> bool:
        """Whether constructor arguments hand skippable (or unknown) layers to a module."""
        def holds(value: Any, depth: int) -> bool:
            if depth > 4:
                return False
            if isinstance(value, LayerV):
                return value.kind in ("skippable", "container", "unknown")
            if isinstance(value, ClassV):
                return value.kind in ("skippable", "unknown") or value.nests != "no"
            if isinstance(value, SeqV):
                return any(holds(child, depth + 1) for _, child, _ in value.children) or not value.complete
            if isinstance(value, ListV):
                return any(holds(item, depth + 1) for item, _ in value.items)
            if isinstance(value, DictV):
                return any(holds(item, depth + 1) for item, _ in value.items.values())
            return False

        return any(holds(value, 0) for value, _ in (*args, *kwargs.values()))

    def instantiate(self, cls: ClassV, args: list[tuple[Any, Any]], kwargs: dict[str, Any],
                    node: cst.CSTNode, entry: bool = False) -> Any:
        if cls.kind == "skippable":
            return LayerV("skippable", cls.name, cls.info)
        if cls.kind == "plain":
            holds = cls.nests != "no" or self.held_layers(args, kwargs)
            return LayerV("container" if holds else "plain", cls.name)
        if cls.kind != "sequential":
            return LayerV("unknown", cls.name)
        seq = SeqV(cls.name, node, name=cls.name if entry else None)
        self.sequences.append(seq)
        init = _class_method(cls, "__init__") if cls.node is not None else None
        if init is None:
            if cls.node is None:
                seq.stop(f"{cls.name} is a Sequential subclass defined in another module")
            else:
                self.fill_sequential(seq, args, kwargs, node)
            return seq
        result = self.call_function(FuncV(init, cls.env or self._module_env, seq),
                                    [a for a, _ in args], {k: v for k, (v, _) in kwargs.items()},
                                    entry=entry)
        if result is UNKNOWN:
            seq.stop(f"{cls.name}.__init__ cannot be followed")
        return seq

    # -- results -----------------------------------------------------------------------------
    def facts(self, path: str) -> ModelFacts:
        converted: dict[int, Composition] = {}

        def convert(seq: SeqV) -> Composition:
            done = converted.get(id(seq))
            if done is None:
                done = self.composition(seq)
                converted[id(seq)] = done
            return done

        compositions = [convert(seq) for seq in self.sequences
                        if (seq.piped or not seq.nested_in) and not self.fragment(seq)]
        pipes = []
        for record in self.pipes:
            module = record.module
            found: Optional[Composition] = None
            if isinstance(module, SeqV):
                found = convert(module)
            elif isinstance(module, LayerV) and record.kind == "LazyModule":
                found = self.composition(_single(module, record.node))
            name = record.name or (found.name if found is not None else record.kind)
            pipes.append(Pipe(record.kind, name, found, record.balance,  # type: ignore[arg-type]
                              Site(record.node, self.locator)))
        # verify_skippables runs on these (directly, or in a pipe's constructor): a record each,
        # so that the checks know where a stash nobody pops fails.
        for seq in self.sequences:
            if seq.verified or (seq.escapes and not seq.nested_in and not self.fragment(seq)):
                found = convert(seq)
                kind = "verify_skippables" if seq.verified else "exported"
                pipes.append(Pipe(kind, found.name, found, None,  # type: ignore[arg-type]
                                  Site(seq.node, self.locator)))
        return ModelFacts(path, tuple(compositions), tuple(pipes))

    def fragment(self, seq: SeqV) -> bool:
        """A partition given to inspect_skip_layout (in this run or another run of the same code)
        and never to a pipe or verify_skippables: a piece of a model, not checked alone."""
        return (seq.partition or id(seq.node) in self.partition_nodes) and not (seq.piped or seq.verified)

    def composition(self, seq: SeqV) -> Composition:
        layers: list[Layer] = []
        ns_label: dict[int, str] = {}
        complete = seq.complete and not seq.tainted
        unknown = seq.unknown if not seq.complete else ("changed under a condition" if seq.tainted else None)
        seen: set[int] = set()
        for index, (key, value, node) in enumerate(seq.children):
            if id(value) in seen and value is not UNKNOWN:
                complete = False
                unknown = f"layer {index} is the same module as an earlier layer"
                break
            seen.add(id(value))
            site = Site(node, self.locator) if node is not None else None
            layers.append(self.layer(index, key, value, node, site, ns_label))
        if seq.name is None:
            line = self.locator.position(seq.node)[0]
            seq.name = f"{seq.label}@{line}"
        return Composition(seq.name, tuple(layers), complete, Site(seq.node, self.locator), seq.piped,
                           tuple(sorted(ns_label.items())), unknown)

    def layer(self, index: int, key: str, value: Any, node: Any, site: Optional[Site],
              ns_label: dict[int, str]) -> Layer:
        if isinstance(value, SeqV):
            nested = tuple(self.nested_skippables(value, ns_label))
            return Layer(index, key, value.label, "container", site=site, nested=nested)
        if isinstance(value, LayerV):
            if value.kind == "container":
                hidden = (Layer(-1, "?", value.label, "unknown"),)
                return Layer(index, key, value.label, "container", site=site, nested=hidden)
            if value.kind != "skippable":
                return Layer(index, key, value.label, value.kind, site=site)
            info = value.info
            if value.tainted or info is None or info.stash is None or info.pop is None:
                return Layer(index, key, value.label, "unknown", site=site)
            both = info.stash & info.pop

            def keys(names: frozenset[str]) -> tuple[SkipKey, ...]:
                out = []
                for name in sorted(names - both):
                    ns = value.namespaces.get(name)
                    if ns is not None:
                        ns_label.setdefault(ns.serial, ns.origin or self.ns_text(ns))
                    out.append((ns.serial if ns is not None else None, name))
                return tuple(out)

            return Layer(index, key, value.label, "skippable", keys(info.stash), keys(info.pop),
                         tuple(sorted(both)), site)
        label = _code(node) if node is not None else "?"
        return Layer(index, key, label, "unknown", site=site)

    def ns_text(self, ns: NS) -> str:
        if ns.node is None:
            return f"#{ns.serial}"
        return f"Namespace() of line {self.locator.position(ns.node)[0]}"

    def nested_skippables(self, seq: SeqV, ns_label: dict[int, str], depth: int = 0) -> Iterator[Layer]:
        """Skippable (or unknown) layers anywhere inside a container."""
        if depth > 8 or not seq.complete or seq.tainted:
            yield Layer(-1, "?", seq.label, "unknown")
            if depth > 8:
                return
        for index, (key, value, node) in enumerate(seq.children):
            if isinstance(value, SeqV):
                yield from self.nested_skippables(value, ns_label, depth + 1)
                continue
            site = Site(node, self.locator) if node is not None else None
            layer = self.layer(index, key, value, node, site, ns_label)
            if layer.kind in ("skippable", "unknown"):
                yield layer
            elif layer.kind == "container":
                yield from layer.nested


def _single(layer: LayerV, node: cst.CSTNode) -> SeqV:
    seq = SeqV("LazyModule", node)
    seq.children.append(("0", layer, node))
    return seq


# -- helpers -----------------------------------------------------------------------------------

_MISSING = object()
_STAR_UNKNOWN = object()

_AUG = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
        cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo}
_COMPARE = {
    cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b,
    cst.LessThan: lambda a, b: a < b, cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b, cst.GreaterThanEqual: lambda a, b: a >= b,
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _comparable(value: Any) -> bool:
    return isinstance(value, (int, str)) or value is None


def _hashable_constant(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _binary(left: Any, op: Any, right: Any) -> Any:
    if _is_int(left) and _is_int(right):
        try:
            if op is cst.Add:
                return left + right
            if op is cst.Subtract:
                return left - right
            if op is cst.Multiply:
                return left * right if abs(left * right) < 10**9 else UNKNOWN
            if op is cst.FloorDivide:
                return left // right
            if op is cst.Modulo:
                return left % right
            if op is cst.Power and 0 <= right < 64:
                return left ** right
        except ZeroDivisionError:
            return UNKNOWN
        return UNKNOWN
    if isinstance(left, str) and isinstance(right, str) and op is cst.Add:
        return left + right
    if isinstance(left, ListV) and isinstance(right, ListV) and op is cst.Add:
        if left.tainted or right.tainted:
            return ListV([], tainted=True)
        return ListV(left.items + right.items, left.is_tuple)
    if isinstance(left, ListV) and _is_int(right) and op is cst.Multiply:
        if left.tainted or len(left.items) * max(right, 0) > MAX_UNROLL:
            return ListV([], tainted=True)
        return ListV(left.items * right, left.is_tuple)
    return UNKNOWN


def _builtin(name: str, args: list[Any], builder: Builder) -> Any:
    if name == "range":
        if 1 <= len(args) <= 3 and all(_is_int(a) for a in args):
            try:
                return range(*args)
            except ValueError:
                return UNKNOWN
        return UNKNOWN
    if name == "super":
        return UNKNOWN
    if name in ("reversed", "list", "tuple", "sorted") and len(args) == 1:
        items = builder.iterate(args[0], with_nodes=True)
        if items is None:
            return UNKNOWN
        if name == "reversed":
            items.reverse()
        if name == "sorted":
            if not all(_comparable(v) for v, _ in items):
                return UNKNOWN
            items.sort(key=lambda item: item[0])
        return ListV(items, name == "tuple")
    if name in ("list", "tuple") and not args:
        return ListV([], name == "tuple")
    if name == "enumerate" and len(args) in (1, 2):
        items = builder.iterate(args[0], with_nodes=True)
        start = args[1] if len(args) == 2 else 0
        if items is None or not _is_int(start):
            return UNKNOWN
        return ListV([(ListV([(i + start, None), item], True), None) for i, item in enumerate(items)])
    if name == "zip" and args:
        lists = [builder.iterate(a, with_nodes=True) for a in args]
        if any(items is None for items in lists):
            return UNKNOWN
        return ListV([(ListV(list(group), True), None) for group in zip(*lists)])
    if name == "len" and len(args) == 1:
        items = builder.iterate(args[0])
        return len(items) if items is not None else UNKNOWN
    if name == "dict":
        if not args:
            return DictV({})
        return _to_dict(args[0], ordered=False) if len(args) == 1 else UNKNOWN
    if name in ("min", "max", "sum") and args:
        values = args if len(args) > 1 else builder.iterate(args[0])
        if values is None or not all(_is_int(v) for v in values) or not values:
            return UNKNOWN
        return min(values) if name == "min" else max(values) if name == "max" else sum(values)
    if name == "abs" and len(args) == 1 and _is_int(args[0]):
        return abs(args[0])
    if name == "int" and len(args) == 1 and _is_int(args[0]):
        return args[0]
    return UNKNOWN


def _to_dict(value: Any, ordered: bool) -> Any:
    if isinstance(value, DictV):
        return DictV(dict(value.items), ordered=ordered, tainted=value.tainted)
    if isinstance(value, ListV) and not value.tainted:
        out = DictV({}, ordered=ordered)
        for pair, _ in value.items:
            if not (isinstance(pair, ListV) and len(pair.items) == 2 and not pair.tainted):
                return DictV({}, ordered=ordered, tainted=True)
            key = pair.items[0][0]
            if not _hashable_constant(key):
                return DictV({}, ordered=ordered, tainted=True)
            out.items[key] = pair.items[1]
        return out
    return DictV({}, ordered=ordered, tainted=True)


def _taint(value: Any) -> None:
    if isinstance(value, (ListV, DictV, LayerV, SeqV)):
        value.tainted = True
    elif isinstance(value, ObjV):
        for attr in value.attrs.values():
            _taint(attr)


def _argument(args: list[tuple[Any, Any]], kwargs: dict[str, Any], position: int, keyword: str) -> Any:
    if keyword in kwargs:
        return kwargs[keyword][0]
    if len(args) > position:
        return args[position][0]
    return None


def _balance(value: Any) -> Optional[tuple[int, ...]]:
    if isinstance(value, ListV) and not value.tainted:
        numbers = [v for v, _ in value.items]
        if numbers and all(_is_int(n) for n in numbers):
            return tuple(numbers)
    return None


def _class_functions(node: cst.ClassDef) -> list[cst.FunctionDef]:
    if not isinstance(node.body, cst.IndentedBlock):
        return []
    return [item for item in node.body.body if isinstance(item, cst.FunctionDef)]


def _class_method(cls: ClassV, name: str) -> Optional[cst.FunctionDef]:
    if cls.node is None:
        return None
    for item in _class_functions(cls.node):
        if item.name.value == name:
            return item
    return None


_CODE_MODULE = cst.Module(body=())


def _code(node: Any) -> str:
    if node is None:
        return "?"
    try:
        text: str = _CODE_MODULE.code_for_node(node)
    except Exception:  # a node libcst cannot print alone: name it by its type
        return type(node).__name__
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= 40 else text[:37] + "..."


def _skip_info(cls: SkippableClass) -> SkipInfo:
    stash = cls.stash.name_set if cls.stash.known else None
    pop = cls.pop.name_set if cls.pop.known else None
    return SkipInfo(cls.name, stash, pop)


def class_from_summary(name: str, kind: str, stash: Optional[frozenset[str]],
                       pop: Optional[frozenset[str]]) -> ClassV:
    """A class of another project module, as the builder sees it."""
    info = SkipInfo(name, stash, pop) if kind == "skippable" else None
    return ClassV(name, kind, info)


def relevant(text: str) -> bool:
    """Whether a module's text can build a composition or call a pipe at all (cheap test)."""
    return any(needle in text for needle in NEEDLES)


def extract(module: cst.Module, path: str, facts: ModuleFacts, index: ModuleIndex,
            locator: Optional[Locator] = None, resolve_class: Optional[Any] = None,
            max_unroll: Optional[int] = None, verified_functions: Sequence[str] = ()) -> ModelFacts:
    """The compositions and pipes of one parsed module (whose skippable classes are in `facts`).

    `verified_functions`: module-level functions whose result is given to a pipe by a harness (the
    runtime companion's `FILE:build` target), so that verify_skippables runs on it."""
    if locator is None:
        locator = next((c.site.locator for c in facts.skippables if c.site is not None), None) or Locator(module)
    builder = Builder(index, facts, locator, resolve_class)
    if max_unroll is not None:
        builder.max_unroll = max(int(max_unroll), 0)
    builder.verified_functions = frozenset(verified_functions)
    builder.run()
    return builder.facts(path)
