"""Expressions: names and imports, literals, operators, subscripts, comprehensions, iteration."""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from skiplint import syntax
from skiplint.interpret.core import Core, Env
from skiplint.interpret.operations import BUILTINS, COMPARE, binary
from skiplint.interpret.values import (
    UNKNOWN, NS, ApiV, BoundV, BuiltinV, DictV, ExternalV, FuncV, LambdaV, ListV, ObjV, SeqV,
    class_method, comparable, hashable_constant, is_int, place,
)
from skiplint.apiimports import framework_name


#: The node types eval tells apart, in the order it tests them (an index into this is cached
#: by node type: isinstance against libcst's classes goes through ABCMeta's hook).
_EVAL_ORDER: tuple[Any, ...] = (
    cst.Name,
    cst.Integer,
    (cst.SimpleString, cst.ConcatenatedString),
    cst.Call,
    cst.Attribute,
    (cst.List, cst.Tuple),
    cst.Dict,
    (cst.ListComp, cst.GeneratorExp),
    cst.Subscript,
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.IfExp,
    cst.Lambda,
)
_EVAL_KINDS: dict[type, int] = {}


def _eval_kind(node_type: type) -> int:
    kind = next((i for i, classes in enumerate(_EVAL_ORDER) if issubclass(node_type, classes)), -1)
    _EVAL_KINDS[node_type] = kind
    return kind


class Expressions(Core):
    """Evaluates expressions to abstract values."""

    def eval(self, node: cst.BaseExpression, env: Env) -> Any:
        self.tick()
        kind = _EVAL_KINDS.get(type(node))
        if kind is None:
            kind = _eval_kind(type(node))
        expr: Any = node  # its type is known from kind
        if kind == 0:
            return self.name(expr, env)
        if kind == 1:
            return self.integer(expr.value)
        if kind == 2:
            value = syntax.string_value(expr)
            return UNKNOWN if value is None or not self.budget.allows_length(len(value)) else value
        if kind == 3:
            return self.call_expr(expr, env)
        if kind == 4:
            return self.attribute(expr, env)
        if kind == 5:
            items: list[tuple[Any, Optional[cst.CSTNode]]] = []
            for element in expr.elements:
                if isinstance(element, cst.StarredElement):
                    inner = self.iterate(self.eval(element.value, env), with_nodes=True, spread=True)
                    if inner is None:
                        return ListV([], isinstance(expr, cst.Tuple), tainted=True)
                    items.extend(inner)
                else:
                    items.append((self.eval(element.value, env), element.value))
            for value, _ in items:
                place(value)
            return ListV(items, isinstance(expr, cst.Tuple))
        if kind == 6:
            result = DictV({}, ordered=False)
            for entry in expr.elements:
                if not isinstance(entry, cst.DictElement):
                    return DictV({}, tainted=True)
                key = self.eval(entry.key, env)
                if not hashable_constant(key):
                    return DictV({}, tainted=True)
                result.items[key] = (self.eval(entry.value, env), entry.value)
                place(result.items[key][0])
            return result
        if kind == 7:
            return self.comprehension(expr, env)
        if kind == 8:
            return self.subscript(expr, env)
        if kind == 9:
            left = self.eval(expr.left, env)
            right = self.eval(expr.right, env)
            return binary(left, type(expr.operator), right, self.budget)
        if kind == 10:
            value = self.eval(expr.expression, env)
            if isinstance(expr.operator, cst.Minus) and is_int(value):
                return -value
            if isinstance(expr.operator, cst.Not) and isinstance(value, (bool, int, str)):
                return not value
            return UNKNOWN
        if kind == 11:
            return self.comparison(expr, env)
        if kind == 12:
            left = self.eval(expr.left, env)
            if not isinstance(left, (bool, int, str)) and left is not None:
                return UNKNOWN
            if isinstance(expr.operator, cst.And):
                return self.eval(expr.right, env) if left else left
            return left if left else self.eval(expr.right, env)
        if kind == 13:
            test = self.eval(expr.test, env)
            if isinstance(test, (bool, int, str)) or test is None:
                return self.eval(expr.body if test else expr.orelse, env)
            return UNKNOWN
        if kind == 14:
            return LambdaV(expr, env)
        return UNKNOWN

    def integer(self, literal: str) -> Any:
        digits = literal.replace("_", "")
        if not self.budget.allows_literal(digits):
            return UNKNOWN
        value = int(digits, 0)
        return value if self.budget.allows_int(value) else UNKNOWN

    def name(self, node: cst.Name, env: Env) -> Any:
        if self.rebinding is not None and self.rebinding.kind(env.frame().scope, node.value) == "global":
            env = self.module_env  # not an enclosing function's variable of that name
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
            if self.resolve_class is not None and not framework_name(qualified):
                cls = self.resolve_class(qualified)
                if cls is not None:
                    return cls
            return ExternalV(qualified)
        if isinstance(node, cst.Name) and node.value in BUILTINS and scope.lookup(node.value) is None:
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
            method = class_method(obj.cls.node, attr)
            if method is not None:
                return FuncV(method, obj.cls.env or self.module_env, obj)
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
            if all(p is None or is_int(p) for p in parts):
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
            if is_int(key) and -len(obj.items) <= key < len(obj.items):
                value = obj.items[key][0]
                if isinstance(value, NS) and value.origin is None and obj.origin is not None:
                    value.origin = f"{obj.origin}[{key % len(obj.items)}]"
                return value
            return UNKNOWN
        if isinstance(obj, DictV) and not obj.tainted and hashable_constant(key):
            entry = obj.items.get(key)
            return entry[0] if entry is not None else UNKNOWN
        if isinstance(obj, SeqV) and obj.complete and not obj.tainted:
            if isinstance(key, slice):
                part = SeqV(obj.label, node)
                part.children = [(str(i), v, n) for i, (_, v, n) in enumerate(obj.children[key])]
                self.built.sequences.append(part)
                return part
            if is_int(key) and -len(obj.children) <= key < len(obj.children):
                return obj.children[key][1]
        return UNKNOWN

    def comparison(self, node: cst.Comparison, env: Env) -> Any:
        left = self.eval(node.left, env)
        for target in node.comparisons:
            right = self.eval(target.comparator, env)
            op = target.operator
            if isinstance(op, (cst.Is, cst.IsNot)):
                if (left is not None and right is not None) or left is UNKNOWN or right is UNKNOWN:
                    return UNKNOWN
                result = (left is right) == isinstance(op, cst.Is)
            elif not (comparable(left) and comparable(right)):
                return UNKNOWN
            else:
                try:
                    result = COMPARE[type(op)](left, right)
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
                place(out[-1][0])
                return self.budget.allows_unroll(len(out))
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

    def iterate(self, value: Any, with_nodes: bool = False, spread: bool = False) -> Optional[list[Any]]:
        """The items of a known iterable (bounded), or None. `spread`: the items become part of
        another list or module (`*seq`, `list(seq)`, `.extend(seq)`), so a Sequential spread so
        is a part of a model, not a model of its own."""
        unroll = self.budget.allows_unroll
        items: Optional[list[tuple[Any, Optional[cst.CSTNode]]]] = None
        if isinstance(value, ListV) and not value.tainted and unroll(len(value.items)):
            items = list(value.items)
        elif isinstance(value, range) and unroll(len(value)):
            items = [(i, None) for i in value]
        elif isinstance(value, DictV) and not value.tainted and unroll(len(value.items)):
            items = [(k, None) for k in value.items]
        elif isinstance(value, str) and unroll(len(value)):
            items = [(c, None) for c in value]
        elif isinstance(value, SeqV) and value.complete and not value.tainted and unroll(len(value.children)):
            items = [(v, n) for _, v, n in value.children]
            value.part = value.part or spread
        if items is None:
            return None
        return items if with_nodes else [item for item, _ in items]
