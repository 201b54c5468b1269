"""Operations on constants: arithmetic, comparisons and the builtins the interpreter knows, each
under the budget (an int, str or list past it is UNKNOWN, never computed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import libcst as cst

from skiplint.interpret.values import UNKNOWN, DictV, ListV, comparable, hashable_constant, is_int
from skiplint.limits import Budget

if TYPE_CHECKING:
    from skiplint.interpret.core import Core

#: Builtins whose calls are run.
BUILTINS = frozenset({"range", "reversed", "enumerate", "list", "tuple", "len", "zip", "dict",
                       "min", "max", "abs", "super", "int", "sum", "sorted"})

#: Augmented assignments as the binary operator they apply.
AUG: dict[type, type] = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
        cst.FloorDivideAssign: cst.FloorDivide, cst.ModuloAssign: cst.Modulo}
COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    cst.Equal: lambda a, b: a == b, cst.NotEqual: lambda a, b: a != b,
    cst.LessThan: lambda a, b: a < b, cst.LessThanEqual: lambda a, b: a <= b,
    cst.GreaterThan: lambda a, b: a > b, cst.GreaterThanEqual: lambda a, b: a >= b,
}


def binary(left: Any, op: Any, right: Any, budget: Budget) -> Any:
    """`left op right` on constants, or UNKNOWN; nothing past the budget is computed."""
    if is_int(left) and is_int(right):
        result: Any = UNKNOWN
        if op is cst.Add:
            result = left + right
        elif op is cst.Subtract:
            result = left - right
        elif op is cst.Multiply:
            product = left * right
            result = product if budget.allows_product(product) else UNKNOWN
        elif op in (cst.FloorDivide, cst.Modulo) and right != 0:
            result = left // right if op is cst.FloorDivide else left % right
        elif op is cst.Power and budget.allows_power(left, right):
            result = left ** right
        return result if result is UNKNOWN or budget.allows_int(result) else UNKNOWN
    if isinstance(left, str) and isinstance(right, str) and op is cst.Add:
        return left + right if budget.allows_length(len(left) + len(right)) else UNKNOWN
    if isinstance(left, ListV) and isinstance(right, ListV) and op is cst.Add:
        if left.tainted or right.tainted or not budget.allows_length(len(left.items) + len(right.items)):
            return ListV([], tainted=True)
        return ListV(left.items + right.items, left.is_tuple)
    if isinstance(left, ListV) and is_int(right) and op is cst.Multiply:
        if left.tainted or not budget.allows_unroll(len(left.items) * max(right, 0)):
            return ListV([], tainted=True)
        return ListV(left.items * right, left.is_tuple)
    return UNKNOWN


def call_builtin(name: str, args: list[Any], builder: Core) -> Any:
    """A call of one of BUILTINS with known positional arguments."""
    if name == "range":
        if 1 <= len(args) <= 3 and all(is_int(a) for a in args):
            try:
                span = range(*args)
                len(span)  # a range longer than sys.maxsize can be neither measured nor iterated
            except (ValueError, OverflowError):
                return UNKNOWN
            return span
        return UNKNOWN
    if name in ("reversed", "list", "tuple", "sorted") and len(args) == 1:
        items = builder.iterate(args[0], with_nodes=True, spread=True)
        if items is None:
            return UNKNOWN
        if name == "reversed":
            items.reverse()
        if name == "sorted":
            if not all(comparable(v) for v, _ in items):
                return UNKNOWN
            items.sort(key=lambda item: item[0])
        return ListV(items, name == "tuple")
    if name in ("list", "tuple") and not args:
        return ListV([], name == "tuple")
    if name == "enumerate" and len(args) in (1, 2):
        items = builder.iterate(args[0], with_nodes=True)
        start = args[1] if len(args) == 2 else 0
        if items is None or not is_int(start):
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
        return to_dict(args[0], ordered=False) if len(args) == 1 else UNKNOWN
    if name in ("min", "max", "sum") and args:
        values = args if len(args) > 1 else builder.iterate(args[0])
        if values is None or not all(is_int(v) for v in values) or not values:
            return UNKNOWN
        if name == "sum":
            total = sum(values)
            return total if builder.budget.allows_int(total) else UNKNOWN
        return min(values) if name == "min" else max(values)
    if name == "abs" and len(args) == 1 and is_int(args[0]):
        return abs(args[0])
    if name == "int" and len(args) == 1 and is_int(args[0]):
        return args[0]
    return UNKNOWN


def to_dict(value: Any, ordered: bool) -> Any:
    """`dict(value)` / `OrderedDict(value)` of a dict or a list of pairs."""
    if isinstance(value, DictV):
        return DictV(dict(value.items), ordered=ordered, tainted=value.tainted)
    if isinstance(value, ListV) and not value.tainted:
        out = DictV({}, ordered=ordered)
        for pair, _ in value.items:
            if not (isinstance(pair, ListV) and len(pair.items) == 2 and not pair.tainted):
                return DictV({}, ordered=ordered, tainted=True)
            key = pair.items[0][0]
            if not hashable_constant(key):
                return DictV({}, ordered=ordered, tainted=True)
            out.items[key] = pair.items[1]
        return out
    return DictV({}, ordered=ordered, tainted=True)

