"""What a statement reads: the variables it reads a popped tensor from, with its history (the walk's
`Flow.read`, for SKP305's pops used only detached)."""

from __future__ import annotations

from typing import Callable

import libcst as cst

from skiplint import syntax


def read_names(node: cst.CSTNode, reach: Callable[[str], frozenset[int]], read: set[int],
                defined: list[cst.CSTNode]) -> None:
    """Add to `read` the `reach` of each variable `node` reads, other than as `name.detach()` or
    `name.detach_()`; the functions, classes and lambdas in it go to `defined`."""
    stack = [node]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name:
            read |= reach(node.value)  # type: ignore[attr-defined]
        elif kind is cst.Attribute:
            stack.append(node.value)  # type: ignore[attr-defined]
        elif kind is cst.Arg:
            stack.append(node.value)  # type: ignore[attr-defined]
        elif kind is cst.Call and _detaches_name(node):  # type: ignore[arg-type]
            continue
        elif kind in (cst.Lambda, cst.FunctionDef, cst.ClassDef):
            defined.append(node)
        elif isinstance(node, (cst.Assign, cst.AnnAssign)):  # a name assigned to is not read
            if node.value is not None:
                stack.append(node.value)
            for target in (node.targets if isinstance(node, cst.Assign) else [node]):
                if type(target.target) is not cst.Name:
                    stack.append(target.target)
        elif kind not in (cst.Del, cst.Global, cst.Nonlocal, cst.Import, cst.ImportFrom, cst.Annotation):
            stack.extend(syntax.children(node))


def _detaches_name(call: cst.Call) -> bool:
    """`name.detach()` or `name.detach_()`: no read of the name's history."""
    func = call.func
    return (not call.args and type(func) is cst.Attribute and func.attr.value in ("detach", "detach_")
            and type(func.value) is cst.Name)
