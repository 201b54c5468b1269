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
from skiplint.interpret.specialize import Specializations
from skiplint.interpret.statements import Statements
from skiplint.interpret.values import ClassV, FuncV, ListV, ObjV, SeqV, class_functions, code


class Interpreter(Statements, Expressions, Calls, Classes, Api, Specializations):
    """Runs one module's model-building code abstractly and records compositions and pipes."""

    def run(self) -> None:
        env = self.module_env
        env.vars["__name__"] = "__main__"
        self.fresh_test_trackers = any(isinstance(stmt, cst.FunctionDef) and fresh_tracker_fixture(stmt)
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
                    else:
                        self.guarded(lambda i=item, c=cls: self.mark_escape(self.call_function(
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
