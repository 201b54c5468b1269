"""The interpreter: the parts put together, and what running a module means (its body, then each
function and method nobody in it called: builders and tests, with their parameters' defaults)."""

from __future__ import annotations

from typing import Any

import libcst as cst

from skiplint import syntax
from skiplint.interpret.api import Api
from skiplint.interpret.calls import Calls
from skiplint.interpret.classes import Classes
from skiplint.interpret.expressions import Expressions
from skiplint.interpret.statements import Bindings, Statements
from skiplint.interpret.values import ClassV, FuncV, ListV, ObjV, SeqV, class_functions, class_method, code


class Interpreter(Statements, Bindings, Expressions, Calls, Classes, Api):
    """Runs one module's model-building code abstractly and records compositions and pipes."""

    def run(self) -> None:
        env = self.module_env
        env.vars["__name__"] = "__main__"
        self.entries.fresh_test_trackers = any(isinstance(stmt, cst.FunctionDef) and fresh_tracker_fixture(stmt)
                                       for stmt in self.index.module.body)
        self.guarded(lambda: self.block(self.index.module.body, env), "module")
        for value in list(env.vars.values()):
            self.mark_escape(value)
        # Functions and methods nobody in the module ran: builders and tests, with defaults.
        for stmt in self.index.module.body:
            kind = "test" if isinstance(stmt, cst.FunctionDef) and stmt.name.value.startswith("test") else "other"
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.verified_functions:
                self.guarded(lambda s=stmt: self.verify_result(self.call_function(FuncV(s, env), [], {}, entry=True)),
                             kind)
            elif isinstance(stmt, cst.FunctionDef) and id(stmt) not in self.ran:
                self.guarded(lambda s=stmt: self.mark_escape(
                    self.call_function(FuncV(s, env), [], {}, entry=True)), kind)
            elif isinstance(stmt, cst.ClassDef):
                found, cls = env.find(stmt.name.value)
                if not (found and isinstance(cls, ClassV)) or cls.kind == "skippable":
                    continue
                for item in class_functions(stmt):
                    if id(item) in self.ran or item.name.value == "forward":
                        continue
                    if cls.kind == "sequential" and item.name.value == "__init__":
                        self.guarded(lambda c=cls: self.instantiate(c, [], {}, stmt, entry=True))
                    elif item.name.value == "__init__":
                        obj = ObjV(cls)
                        self.guarded(lambda i=item, c=cls, o=obj: self.mark_escape(self.call_function(
                            FuncV(i, c.env or env, o), [], {}, entry=True)))
                        self.stages(stmt, obj)
                    else:
                        self.guarded(lambda i=item, c=cls: self.mark_escape(self.call_function(
                            FuncV(i, c.env or env, ObjV(c)), [], {}, entry=True)))

    def stages(self, node: cst.ClassDef, obj: ObjV) -> None:
        """A module whose forward runs Sequentials it holds as attributes one after another
        (`x = self.s0(x)`, then `return self.s1(x)`, each once, outside any branch or loop): one
        route for the skips, as if their layers were one Sequential; each alone is a part."""
        if sum(1 for value in obj.attrs.values() if isinstance(value, SeqV)) < 2:
            return
        forward = class_method(node, "forward")
        if forward is None:
            return
        order: list[SeqV] = []
        for stmt in syntax.statements(forward.body):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for call in _calls_in_order(stmt):
                if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                        and isinstance(call.func.value, cst.Name) and call.func.value.value == "self"):
                    continue
                held = obj.attrs.get(call.func.attr.value)
                if isinstance(held, SeqV):
                    if held in order:
                        return  # run twice: not one route
                    order.append(held)
        if len(order) < 2 or any(isinstance(n, (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.Match))
                                 and any(isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute)
                                         and isinstance(obj.attrs.get(c.func.attr.value), SeqV)
                                         for c in syntax.walk(n)) for n in syntax.statements(forward.body)):
            return
        route = SeqV(f"{node.name.value}.forward", forward)
        for stage in order:
            stage.part = True
            if not stage.complete or stage.tainted:
                route.stop(stage.unknown or "a part that cannot be known")
            for _key, value, child in stage.children:
                route.add(None, value, child)
        self.built.sequences.append(route)

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


def _calls_in_order(node: cst.CSTNode) -> list[cst.Call]:
    """The calls of a statement in the order they run (arguments before the call)."""
    out: list[cst.Call] = []
    pending: list[tuple[cst.CSTNode, bool]] = [(node, False)]
    while pending:
        current, done = pending.pop()
        if done:
            out.append(current)  # type: ignore[arg-type]
            continue
        if isinstance(current, cst.Call):
            pending.append((current, True))
        pending.extend((child, False) for child in reversed(list(syntax.children(current))))
    return out


def fresh_tracker_fixture(func: cst.FunctionDef) -> bool:
    """`@pytest.fixture(autouse=True)` whose body makes a tracker current with `use_skip_tracker`
    (`with use_skip_tracker(SkipTracker()): yield`): every test of the module runs with a skip
    tracker of its own, empty when it starts."""
    autouse = False
    for decorator in func.decorators:
        call = decorator.decorator
        if isinstance(call, cst.Call) and code(call.func).split(".")[-1] == "fixture":
            autouse = autouse or any(arg.keyword is not None and arg.keyword.value == "autouse"
                                     and isinstance(arg.value, cst.Name) and arg.value.value == "True"
                                     for arg in call.args)
    if not autouse:
        return False
    made: set[str] = set()  # local names bound to a new SkipTracker()
    for node in syntax.walk(func.body):
        if (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                and _new_tracker(node.value)):
            made.add(node.targets[0].target.value)
        if isinstance(node, cst.With):
            for item in node.items:
                call = item.item
                if not (isinstance(call, cst.Call) and code(call.func).split(".")[-1] == "use_skip_tracker"
                        and len(call.args) == 1):
                    continue
                given = call.args[0].value
                if _new_tracker(given) or (isinstance(given, cst.Name) and given.value in made):
                    return True
    return False


def _new_tracker(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and not node.args and code(node.func).split(".")[-1] == "SkipTracker"
