"""What the walk's statements read: the variables they read a popped tensor from with its history
(`Flow.read`, for SKP305's pops used only detached), what a pop is assigned to, and which pop
forward detaches in place at once (SKP206)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from skiplint import syntax
from skiplint.gradflow.model import Env, NOTHING
from skiplint.gradflow.walker import Walker


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
        elif kind is cst.Call and _detach_of(node) is not None:  # type: ignore[arg-type]
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


def _detach_of(call: cst.Call) -> Optional[tuple[str, str]]:
    """For `name.detach()` or `name.detach_()` (no read of the name's history): the name and the method."""
    func = call.func
    if (not call.args and isinstance(func, cst.Attribute) and func.attr.value in ("detach", "detach_")
            and isinstance(func.value, cst.Name)):
        return func.value.value, func.attr.value
    return None


class Reads(Walker):
    """Where the walk reads a popped tensor with its history (Flow.read, for SKP305), what a pop is
    assigned to, and which pop forward detaches in place at once (SKP206)."""

    #: Statements of forward's own code walked so far that leave it (`return`, `raise`).
    _leaves: int
    #: The functions, classes and lambdas forward defines: what they read is found at the end.
    _defined: list[cst.CSTNode]

    if TYPE_CHECKING:
        def command_kind(self, call: cst.Call) -> Optional[str]: ...
        def _at_forward(self) -> bool: ...

    def reads(self, node: cst.CSTNode, env: Optional[Env]) -> None:
        """Record the pops whose tensor `node` (a small statement or a compound statement's header)
        reads with its history (Flow.read): a variable that may hold one as popped, read in grad
        mode. Where the dataflow does not follow the code (env None), any variable that held one
        anywhere in the walk."""
        if self.no_grad or self.unrun or not self.flow.reach_of or (env is None and not self._at_forward()):
            return
        if env is not None:
            read_names(node, lambda name: env[name].reach if name in env else frozenset(),
                       self.flow.read, self._defined)
        else:
            read_names(node, self._held_anywhere, self.flow.read, self._defined)

    def finish_reads(self) -> None:
        """What the functions, classes and lambdas forward defines may read, whenever they run."""
        while self._defined:
            defined = self._defined.pop()
            for child in syntax.children(defined):
                read_names(child, self._held_anywhere, self.flow.read, self._defined)

    def _held_anywhere(self, name: str) -> frozenset[int]:
        return self.flow.reach_of.get(name, frozenset())

    def assigned_pop(self, small: cst.BaseSmallStatement) -> Optional[tuple[str, cst.Call]]:
        """`name = yield pop(...)` in forward's own code: the name and the pop call."""
        if not (type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name
                and type(small.value) is cst.Yield and type(small.value.value) is cst.Call and self._at_forward()):
            return None
        call = small.value.value
        if self.command_kind(call) != "pop":
            return None
        return small.targets[0].target.value, call

    def detach_in_place(self, first: cst.CSTNode, second: cst.CSTNode) -> None:
        """`name = yield pop(...)` in forward's body, followed by `name.detach_()` (Flow.detached_in_place)."""
        if not (type(first) is cst.SimpleStatementLine and type(second) is cst.SimpleStatementLine
                and len(first.body) == 1 and len(second.body) == 1 and type(second.body[0]) is cst.Expr):
            return
        popped = self.assigned_pop(first.body[0])
        call = second.body[0].value
        if popped is not None and type(call) is cst.Call and _detach_of(call) == (popped[0], "detach_"):
            self.flow.detached_in_place[id(popped[1])] = call

    def forget(self, node: cst.CSTNode, env: Env) -> None:
        """Every name in `node` holds nothing known (what it binds is not followed), but what it
        held anywhere (`Value.reach`)."""
        for part in syntax.walk(node):
            if isinstance(part, cst.Name):
                env[part.value] = self.flow.held(part.value, NOTHING)
