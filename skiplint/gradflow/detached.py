"""Pops whose tensor reaches forward's output only detached (`.detach()`, `torch.no_grad()`,
`.detach_()` right after the pop), as a discarded one does (SKP305)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import libcst as cst

from skiplint import syntax

if TYPE_CHECKING:  # read in annotations only: SKP303's check imports this package from the rules
    from skiplint.imports import Scope
from skiplint.gradflow.walker import targets


def detached_pops(forward: cst.FunctionDef, scope: Scope, pops: Sequence[cst.Call]) -> set[int]:
    """The pop calls (by id) whose tensor certainly never reaches forward's output with its
    history: `name = yield pop(...)`, `name` bound nowhere else in forward, and every read of it
    is `name.detach()` or inside `with torch.no_grad():` (or there is none), or the next statement
    is `name.detach_()`. Measured: such a pop
    across partitions fails backward as a discarded one does (its portal gets no gradient)."""
    wanted = {id(call) for call in pops}
    assigned: dict[str, list[cst.CSTNode]] = {}
    in_place = False  # some `.detach_()`
    for node in syntax.walk(forward.body, into_scopes=True):
        if type(node) is cst.Attribute and node.attr.value == "detach_":
            in_place = True
        for target in targets(node) + ([node.asname.name] if isinstance(node, cst.WithItem) and node.asname else []):
            for part in syntax.walk(target):
                if isinstance(part, cst.Name):
                    assigned.setdefault(part.value, []).append(node)
        if isinstance(node, (cst.Global, cst.Nonlocal, cst.Del, cst.Import, cst.ImportFrom, cst.FunctionDef,
                             cst.ClassDef, cst.ExceptHandler)):
            for part in syntax.walk(node):
                if isinstance(part, cst.Name):
                    assigned.setdefault(part.value, []).extend((node, node))
    found: set[int] = set()
    detached_next = _detached_at_once(forward.body) if in_place else set()
    for node in syntax.walk(forward.body):
        if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                and isinstance(node.value, cst.Yield) and isinstance(node.value.value, cst.Call)
                and id(node.value.value) in wanted):
            continue
        name = node.targets[0].target.value
        if len(assigned.get(name, ())) != 1:
            continue
        if id(node) in detached_next or not _reads_with_history(forward.body, name, scope, node, False):
            found.add(id(node.value.value))
    return found


def _detached_at_once(body: cst.CSTNode) -> set[int]:
    """The assignments `name = ...` followed, as the next statement of their block, by
    `name.detach_()`: every later read of `name` has no history."""
    found: set[int] = set()
    for block in syntax.walk(body):
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            continue
        statements = list(block.body)
        for first, second in zip(statements, statements[1:]):
            if not (isinstance(first, cst.SimpleStatementLine) and isinstance(second, cst.SimpleStatementLine)
                    and len(first.body) == 1 and len(second.body) == 1):
                continue
            assign, expr = first.body[0], second.body[0]
            if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                    and isinstance(assign.targets[0].target, cst.Name) and isinstance(expr, cst.Expr)):
                continue
            call = expr.value
            if (isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute)
                    and call.func.attr.value == "detach_" and isinstance(call.func.value, cst.Name)
                    and call.func.value.value == assign.targets[0].target.value):
                found.add(id(assign))
    return found


def _reads_with_history(node: cst.CSTNode, name: str, scope: Scope, binding: cst.CSTNode, no_grad: bool) -> bool:
    """Whether `node` reads `name` other than as `name.detach()` or under torch.no_grad()."""
    if node is binding:
        return False
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return any(isinstance(n, cst.Name) and n.value == name for n in syntax.walk(node, into_scopes=True))
    if isinstance(node, cst.Name):
        return node.value == name and not no_grad
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "detach"
            and isinstance(node.func.value, cst.Name) and node.func.value.value == name and not node.args):
        return False
    if isinstance(node, cst.With):
        stops = any(scope.qualified(item.item.func if isinstance(item.item, cst.Call) else item.item)
                    in ("torch.no_grad", "torch.inference_mode") for item in node.items)
        return (any(_reads_with_history(item, name, scope, binding, no_grad) for item in node.items)
                or _reads_with_history(node.body, name, scope, binding, no_grad or stops))
    return any(_reads_with_history(child, name, scope, binding, no_grad) for child in syntax.children(node))


def detached_in_place(forward: cst.FunctionDef, pops: Sequence[cst.Call]) -> dict[int, cst.Call]:
    """The pop calls (by id) whose tensor forward certainly detaches in place, each with that
    `.detach_()` call: `name = yield pop(...)` is a statement of forward's own body, after no
    statement that may leave it (`return`, `raise`), and the next one is `name.detach_()`."""
    wanted = {id(call) for call in pops}
    found: dict[int, cst.Call] = {}
    statements = list(forward.body.body) if isinstance(forward.body, cst.IndentedBlock) else []
    for first, second in zip(statements, statements[1:]):
        if any(isinstance(node, (cst.Return, cst.Raise)) for node in syntax.walk(first)):
            break
        if not (isinstance(first, cst.SimpleStatementLine) and isinstance(second, cst.SimpleStatementLine)
                and len(first.body) == 1 and len(second.body) == 1):
            continue
        assign, expr = first.body[0], second.body[0]
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)
                and isinstance(assign.value, cst.Yield) and id(assign.value.value) in wanted
                and isinstance(expr, cst.Expr)):
            continue
        call = expr.value
        if (isinstance(call, cst.Call) and not call.args and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "detach_" and isinstance(call.func.value, cst.Name)
                and call.func.value.value == assign.targets[0].target.value):
            found[id(assign.value.value)] = call
    return found
