"""The one walk of a forward body (and of the methods, functions and submodules it reaches): each
statement and expression evaluated to a `model.Value`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional, Sequence, Union

import libcst as cst

from skiplint import syntax

if TYPE_CHECKING:  # read in annotations only: SKP303's check imports this package from the rules
    from skiplint.imports import Scope
from skiplint.gradflow.attributes import Attributes, torch_layers, truth
from skiplint.gradflow.model import BREAKING, Env, Flow, INPUT, INPUT_SOURCE, NO, NOTHING, PARAM_LAYERS, PASSING, PASSING_LAYERS, SAVING, SAVING_LAYERS, Value, YES, container, meet, meet_all, meet_envs, saving, union, unknown_call


class Analysis:
    def __init__(self, scope_of: dict[int, Scope], methods: dict[str, cst.FunctionDef],
                 attributes: Attributes, commands: Mapping[int, str],
                 functions: Optional[Mapping[str, cst.FunctionDef]] = None,
                 classes: Optional[Mapping[str, Mapping[str, cst.FunctionDef]]] = None, depth_limit: int = 8) -> None:
        self.scope_of = scope_of
        #: The methods and attributes of the module whose code runs now (`self`).
        self.methods: Mapping[str, cst.FunctionDef] = methods
        self.attributes = attributes
        self.classes = classes or {}
        self._attributes_of: dict[str, Attributes] = {}
        #: Module-level functions of the same module, by name (followed where a forward calls them).
        self.functions = functions or {}
        #: id(stash/pop call) -> "stash" / "pop" (the API's commands, resolved by the caller).
        self.commands = commands
        self.flow = Flow()
        self.no_grad = 0
        self.in_loop = 0
        self.active: list[cst.FunctionDef] = []
        self.depth_limit = depth_limit

    # -- functions -------------------------------------------------------------------------------
    def run(self, func: cst.FunctionDef, args: Sequence[Value], bound: bool = True) -> tuple[Value, bool]:
        """Run a function with its positional arguments (after self, for a method: `bound`): its
        return value, and whether every path that leaves it returns a value."""
        self.active.append(func)
        env: Env = {}
        params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
        for i, name in enumerate(params[1:] if bound else params):
            env[name] = args[i] if i < len(args) else NOTHING
        returns: list[Value] = []
        try:
            out = self.block(syntax.statements(func.body), env, returns)
        finally:
            self.active.pop()
        if out is not None:  # falls off the end: returns None
            return NOTHING, False
        if not returns:
            return NOTHING, False
        value = returns[0]
        for other in returns[1:]:
            value = meet(value, other)
        return value, True

    def scope(self) -> Scope:
        return self.scope_of[id(self.active[-1])]

    # -- statements: each returns the env after it, or None when no path goes on ---------------------
    def block(self, stmts: Sequence[cst.CSTNode], env: Optional[Env], returns: list[Value]) -> Optional[Env]:
        for stmt in stmts:
            if env is None:
                return None
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if env is None:
                        break
                    env = self.small(small, env, returns)
            elif isinstance(stmt, cst.BaseSmallStatement):
                env = self.small(stmt, env, returns)
            else:
                env = self.compound(stmt, env, returns)  # type: ignore[arg-type]
        return env

    def small(self, small: cst.BaseSmallStatement, env: Env, returns: list[Value]) -> Optional[Env]:
        if isinstance(small, cst.Assign):
            value = self.eval(small.value, env)
            for target in small.targets:
                self.assign(target.target, value, env)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self.assign(small.target, self.eval(small.value, env), env)
        elif isinstance(small, cst.AugAssign):
            current = self.eval(small.target, env)
            value = self.eval(small.value, env)
            if isinstance(small.operator, (cst.AddAssign, cst.SubtractAssign)):
                result = union((current, value))
            else:
                result = saving(small, (current, value))
            self.assign(small.target, self.grad_off(result), env)
        elif isinstance(small, cst.Expr):
            self.eval(small.value, env)
        elif isinstance(small, cst.Return):
            value = self.eval(small.value, env) if small.value is not None else NOTHING
            returns.append(NOTHING if self.in_loop else value)
            return None
        elif isinstance(small, cst.Raise):
            return None
        elif isinstance(small, (cst.Global, cst.Nonlocal, cst.Del)):
            for node in syntax.walk(small):
                if isinstance(node, cst.Name):
                    env[node.value] = NOTHING
        return env

    def compound(self, stmt: cst.BaseCompoundStatement, env: Env, returns: list[Value]) -> Optional[Env]:
        if isinstance(stmt, cst.If):
            self.eval(stmt.test, env)
            decided = self.decide(stmt.test, env)
            body: Optional[Env] = None
            other: Optional[Env] = None
            if decided is not False:
                body = self.block(syntax.statements(stmt.body), dict(env), returns)
            if decided is not True:
                if isinstance(stmt.orelse, cst.If):
                    other = self.compound(stmt.orelse, dict(env), returns)
                elif isinstance(stmt.orelse, cst.Else):
                    other = self.block(syntax.statements(stmt.orelse.body), dict(env), returns)
                else:
                    other = env
            alive = [e for e in (body, other) if e is not None]
            if decided is not None:
                return alive[0] if alive else None
            return meet_envs(alive) if alive else None
        if isinstance(stmt, cst.With):
            stops = sum(1 for item in stmt.items if self.stops_grad(item.item))
            for item in stmt.items:
                self.eval(item.item, env)
                if item.asname is not None:
                    self.assign(item.asname.name, NOTHING, env)
            self.no_grad += stops
            try:
                return self.block(syntax.statements(stmt.body), env, returns)
            finally:
                self.no_grad -= stops
        if isinstance(stmt, (cst.For, cst.While)):
            if isinstance(stmt, cst.For):
                self.eval(stmt.iter, env)
            else:
                self.eval(stmt.test, env)
            # One node of the source is a new node on each iteration: what a loop computes is not
            # followed (its values hold nothing, its stashes and returns share nothing).
            inner = dict(env)
            if isinstance(stmt, cst.For):
                self.assign(stmt.target, NOTHING, inner)
            self.in_loop += 1
            try:
                self.block(syntax.statements(stmt.body), inner, returns)
            finally:
                self.in_loop -= 1
            after_loop = dict(env)
            for node in syntax.walk(stmt):
                for target in targets(node):
                    self.assign(target, NOTHING, after_loop)
                changed = self.in_place(node) if type(node) is cst.Call else None
                if changed is not None:
                    self.assign(changed, NOTHING, after_loop)
            if stmt.orelse is not None:
                return self.block(syntax.statements(stmt.orelse.body), after_loop, returns)
            return after_loop
        if isinstance(stmt, cst.Try):
            body = self.block(syntax.statements(stmt.body), dict(env), returns)
            reached: list[Env] = []
            if body is not None:
                done = body if stmt.orelse is None else self.block(syntax.statements(stmt.orelse.body), body, returns)
                if done is not None:
                    reached.append(done)
            for handler in stmt.handlers:
                # A handler starts from any point of the body: only what holds before it is sure.
                start = meet_envs([env] + ([body] if body is not None else []))
                if handler.name is not None:
                    self.assign(handler.name.name, NOTHING, start)
                out = self.block(syntax.statements(handler.body), start, returns)
                if out is not None:
                    reached.append(out)
            merged: Optional[Env] = meet_envs(reached) if reached else None
            if stmt.finalbody is not None and merged is not None:
                merged = self.block(syntax.statements(stmt.finalbody.body), merged, returns)
            return merged
        # def, class, match, try*: what they bind is not followed
        for node in syntax.walk(stmt):
            if isinstance(node, cst.Name):
                env[node.value] = NOTHING
        return env

    def decide(self, test: cst.BaseExpression, env: Env) -> Optional[bool]:
        """The branch a condition certainly takes when balance_by_time profiles the layer (and when
        a pipe trains it): `self.training` is true there, and a popped tensor is not None."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self.decide(test.expression, env)
            return None if inner is None else not inner
        if (isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name) and test.value.value == "self"
                and test.attr.value == "training"):
            return True
        if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)
                and isinstance(test.comparisons[0].comparator, cst.Name)
                and test.comparisons[0].comparator.value == "None"):
            value = env.get(test.left.value)
            if value is None or not (value.sources - {INPUT_SOURCE}):
                return None  # not known to hold a popped tensor
            operator = test.comparisons[0].operator
            if isinstance(operator, cst.IsNot):
                return True
            if isinstance(operator, cst.Is):
                return False
        return None

    def stops_grad(self, item: cst.BaseExpression) -> bool:
        func = item.func if isinstance(item, cst.Call) else item
        qualified = self.scope().qualified(func)
        return qualified in ("torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad")

    def assign(self, target: cst.BaseExpression, value: Value, env: Env) -> None:
        key = self.key(target)
        if key is not None:
            env[key] = value
            return
        if isinstance(target, (cst.Tuple, cst.List)) and not any(
                isinstance(e, cst.StarredElement) for e in target.elements):
            if value.items is not None and len(value.items) == len(target.elements):
                for element, item in zip(target.elements, value.items):
                    self.assign(element.value, item, env)
                return
            if value.items is None:  # the parts of a tensor (chunk, split, unbind) are views of it
                part = Value(value.ops, value.grad, value.sources)
                for element in target.elements:
                    self.assign(element.value, part, env)
                return
        for node in syntax.walk(target):
            node_key = self.key(node) if isinstance(node, cst.BaseExpression) else None
            if node_key is not None:
                env[node_key] = NOTHING

    def key(self, node: cst.CSTNode) -> Optional[str]:
        if isinstance(node, cst.Name):
            return node.value
        if (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                and node.value.value == "self"):
            return "self." + node.attr.value
        return None

    # -- expressions ---------------------------------------------------------------------------------
    def grad_off(self, value: Value) -> Value:
        return Value() if self.no_grad else value

    def eval(self, node: cst.BaseExpression, env: Env) -> Value:
        return self.grad_off(self.value(node, env)) if not isinstance(node, cst.Name) else self.value(node, env)

    def value(self, node: cst.BaseExpression, env: Env) -> Value:
        if isinstance(node, cst.Name):
            return env.get(node.value, NOTHING)
        if isinstance(node, cst.Attribute):
            key = self.key(node)
            if key is not None:
                found = env.get(key)
                return found if found is not None else self.attributes.parameter(node.attr.value)
            owner = node.value
            if (isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self"
                    and node.attr.value in ("weight", "bias") and "self." + owner.attr.value not in env):
                return self.attributes.layer_weight(owner.attr.value)
            if node.attr.value in ("data",):
                self.eval(node.value, env)
                return NOTHING
            if node.attr.value in ("T", "mT", "real"):
                return self.eval(node.value, env)
            self.eval(node.value, env)
            return NOTHING
        if isinstance(node, cst.Yield):
            return self.yielded(node, env)
        if isinstance(node, cst.Call):
            return self.call(node, env)
        if isinstance(node, cst.BinaryOperation):
            left, right = self.eval(node.left, env), self.eval(node.right, env)
            if isinstance(node.operator, (cst.Add, cst.Subtract)):
                return union((left, right))
            return saving(node, (left, right))
        if isinstance(node, cst.UnaryOperation):
            inner = self.eval(node.expression, env)
            return inner if isinstance(node.operator, (cst.Minus, cst.Plus)) else NOTHING
        if isinstance(node, cst.Subscript):  # indexing and slicing are views
            whole = self.eval(node.value, env)
            index = _constant_index(node)
            if whole.items is not None:
                if index is not None and -len(whole.items) <= index < len(whole.items):
                    return whole.items[index]
                return meet_all(whole.items)
            return whole
        if isinstance(node, cst.IfExp):
            self.eval(node.test, env)
            decided = self.decide(node.test, env)
            if decided is not None:
                return self.eval(node.body if decided else node.orelse, env)
            return meet(self.eval(node.body, env), self.eval(node.orelse, env))
        if isinstance(node, (cst.Tuple, cst.List)):
            items = [self.eval(e.value, env) for e in node.elements]
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return union(items)
            return container(items)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.comprehension(node, env)
        if isinstance(node, (cst.Set, cst.Dict)):
            return union([self.eval(child, env) for child in syntax.children(node)
                           if isinstance(child, cst.BaseExpression)] + [
                self.eval(e.value, env) for e in getattr(node, "elements", ()) if hasattr(e, "value")])
        for child in syntax.children(node):
            if isinstance(child, cst.BaseExpression) and not isinstance(child, cst.Lambda):
                self.eval(child, env)
        return NOTHING

    def comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp, env: Env) -> Value:
        """A comprehension with one `for` over known items holds what its element holds for each
        item; over a tensor, what its element holds for a view of it."""
        clause = node.for_in
        iterated = self.eval(clause.iter, env)
        if clause.inner_for_in is not None or clause.ifs or clause.asynchronous is not None:
            inner = dict(env)
            self.assign(clause.target, NOTHING, inner)
            self.eval(node.elt, inner)
            return NOTHING
        results = []
        view = Value(iterated.ops, iterated.grad, iterated.sources)
        for item in iterated.items if iterated.items is not None else (view,):
            inner = dict(env)
            self.assign(clause.target, item, inner)
            results.append(self.eval(node.elt, inner))
        if iterated.items is not None:
            return container(results) if isinstance(node, cst.ListComp) else union(results)
        return Value(results[0].ops, results[0].grad, results[0].sources)

    def yielded(self, node: cst.Yield, env: Env) -> Value:
        value = node.value
        if isinstance(value, cst.From):
            target = value.item
            method = self.delegate(target)
            args = [self.eval(arg.value, env) for arg in target.args] if isinstance(target, cst.Call) else []
            if method is None or any(arg.keyword is not None or arg.star for arg in getattr(target, "args", ())):
                return NOTHING
            result, returned = self.run(method, args)
            return result if returned else NOTHING
        if isinstance(value, cst.Call) and id(value) in self.commands:
            kind = self.commands[id(value)]
            if kind == "stash":
                tensor = value.args[1].value if len(value.args) > 1 and value.args[1].keyword is None else next(
                    (a.value for a in value.args if a.keyword is not None and a.keyword.value == "tensor"), None)
                stashed = self.eval(tensor, env) if tensor is not None and not self.in_loop else NOTHING
                known = self.flow.stashes.get(id(value))
                self.flow.stashes[id(value)] = stashed if known is None else meet(known, stashed)
                return NOTHING
            return Value(frozenset(), NO, frozenset({id(value)}))
        if value is not None:
            self.eval(value, env)
        return NOTHING

    def delegate(self, target: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        if not (isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute)
                and isinstance(target.func.value, cst.Name) and target.func.value.value == "self"):
            return None
        method = self.methods.get(target.func.attr.value)
        if method is None or method in self.active or len(self.active) > self.depth_limit:
            return None
        return method

    def followed(self, func: Optional[cst.FunctionDef]) -> bool:
        """Whether a call of `func` (a plain function, not a generator) is run here."""
        return (func is not None and func not in self.active and len(self.active) <= self.depth_limit
                and not any(isinstance(n, cst.Yield) for n in syntax.walk(func.body)))

    def in_place(self, node: cst.CSTNode) -> Optional[cst.BaseExpression]:
        """The tensor an in-place method call changes (`out.add_(skip)`), when it is a name."""
        func = node.func  # type: ignore[attr-defined]
        if (type(func) is cst.Attribute and func.attr.value.endswith("_") and not func.attr.value.endswith("__")
                and self.key(func.value) is not None):
            return func.value
        return None

    def call(self, node: cst.Call, env: Env) -> Value:
        func = node.func
        args = [self.eval(arg.value, env) for arg in node.args]
        if any(arg.star for arg in node.args):
            return unknown_call(args)
        positional = [value for value, arg in zip(args, node.args) if arg.keyword is None]
        # self.<layer>(x), self.<method>(x), self.<container>[i](x)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            attr = func.attr.value
            method = self.methods.get(attr)
            held = self.attributes.submodules.get(attr)
            if held is not None:
                return self.submodule_call(held, "forward", args, positional)
            if method is not None and attr not in self.attributes.kinds:
                if self.followed(method) and len(positional) == len(args):
                    result, returned = self.run(method, args)
                    return result if returned else NOTHING
                return unknown_call(args)
            return self.layer_call(node, attr, None, args)
        if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute)
                and isinstance(func.value.value, cst.Name) and func.value.value.value == "self"):
            held = self.attributes.submodules.get(func.value.attr.value)
            if held is None:
                return unknown_call(args)  # a method of something `self` holds: not a tensor's
            inner = self.attributes_of(held)
            if func.attr.value in inner.kinds:
                return self.layer_call(node, func.attr.value, None, args, inner)
            return self.submodule_call(held, func.attr.value, args, positional)
        if (isinstance(func, cst.Subscript) and isinstance(func.value, cst.Attribute)
                and isinstance(func.value.value, cst.Name) and func.value.value.value == "self"):
            key = syntax.string_value(func.slice[0].slice.value) if (
                len(func.slice) == 1 and isinstance(func.slice[0].slice, cst.Index)) else None
            return self.layer_call(node, func.value.attr.value, key if key is not None else _constant_index(func), args)
        owner = self.scope().owner(func.value) if isinstance(func, cst.Name) and func.value not in env else None
        if owner is not None and owner.kind == "module" and isinstance(func, cst.Name):
            function = self.functions.get(func.value)
            if self.followed(function) and len(positional) == len(args):
                result, returned = self.run(function, args, bound=False)  # type: ignore[arg-type]
                return result if returned else NOTHING
        qualified = self.scope().qualified(func)
        if qualified is not None and qualified.startswith("torch."):
            name = qualified.rsplit(".", 1)[-1]
            return self.operation(node, name, args, unknown_saves=True)
        changed = self.in_place(node)
        if changed is not None and qualified is None:
            name = func.attr.value  # type: ignore[attr-defined]
            receiver = self.eval(changed, env)
            result = self.operation(node, name[:-1], [receiver, *args], unknown_saves=True)
            if name == "requires_grad_":
                result = receiver if not node.args or truth(node.args[0].value) is not False else NOTHING
            self.assign(changed, self.grad_off(result), env)
            return result
        if isinstance(func, cst.Attribute) and qualified is None:  # a method of a tensor
            return self.operation(node, func.attr.value, [self.eval(func.value, env), *args], unknown_saves=True)
        return unknown_call(args)

    def attributes_of(self, cls: str) -> Attributes:
        found = self._attributes_of.get(cls)
        if found is None:
            found = torch_layers(self.classes[cls], self.scope_of, self.classes)
            self._attributes_of[cls] = found
        return found

    def submodule_call(self, cls: str, name: str, args: Sequence[Value], positional: Sequence[Value]) -> Value:
        """`self.<attr>(...)` (its forward) or `self.<attr>.<method>(...)` of an instance of a class
        of the module: run with that class's methods and attributes."""
        method = self.classes[cls].get(name)
        if method is None or not self.followed(method) or len(positional) != len(args):
            return unknown_call(args)
        outer = self.methods, self.attributes
        self.methods, self.attributes = self.classes[cls], self.attributes_of(cls)
        try:
            result, returned = self.run(method, args)
        finally:
            self.methods, self.attributes = outer
        return result if returned else NOTHING

    def layer_call(self, node: cst.Call, attr: str, index: Union[int, str, None], args: Sequence[Value],
                   attributes: Optional[Attributes] = None) -> Value:
        """A call of a torch.nn layer that __init__ stores (`index`: of a container's child)."""
        attributes = attributes or self.attributes
        kinds = attributes.called(attr, index)
        if kinds is None:
            return unknown_call(args)
        value = union(args)
        frozen = attr in attributes.frozen or attributes.all_frozen
        for kind in kinds:
            if kind in PARAM_LAYERS:
                value = saving(node, (value,), NO if frozen else YES)
            elif kind in SAVING_LAYERS:
                value = saving(node, (value,))
            elif kind not in PASSING_LAYERS:
                return unknown_call(args)
        return value

    def operation(self, node: cst.CSTNode, name: str, args: Sequence[Value], unknown_saves: bool = False) -> Value:
        if name in BREAKING:
            return NOTHING
        if name in PASSING:
            return union(args)
        if name in SAVING or unknown_saves:
            return saving(node, args)
        return NOTHING


def _constant_index(node: cst.Subscript) -> Optional[int]:
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


def targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return [node.target]
    if isinstance(node, (cst.For, cst.CompFor)):
        return [node.target]
    if isinstance(node, cst.NamedExpr):
        return [node.target]
    return []


def analyse(forward: cst.FunctionDef, methods: dict[str, cst.FunctionDef], scope_of: dict[int, Scope],
            commands: Mapping[int, str], functions: Optional[Mapping[str, cst.FunctionDef]] = None,
            classes: Optional[Mapping[str, Mapping[str, cst.FunctionDef]]] = None) -> Flow:
    """The dataflow of one skippable forward (`commands`: id of each stash/pop call -> its kind;
    `functions`: the module-level functions of its module, followed where forward calls them;
    `classes`: the methods of its module-level classes, followed where forward runs an instance
    that __init__ stores)."""
    classes = classes or {}
    analysis = Analysis(scope_of, methods, torch_layers(methods, scope_of, classes), commands, functions, classes)
    output, returned = analysis.run(forward, [Value(frozenset(), INPUT, frozenset({INPUT_SOURCE}))])
    analysis.flow.output = output
    analysis.flow.returned = returned
    return analysis.flow
