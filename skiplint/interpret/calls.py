"""Calls: arguments, dispatch by callee, functions and lambdas with their parameters, and the
methods of lists, dicts and modules."""

from __future__ import annotations

from typing import Any

import libcst as cst

from skiplint import syntax
from skiplint.interpret.api import balance_of
from skiplint.interpret.core import Args, Break, Continue, Core, Env, Kwargs, LoopUnknown, Return
from skiplint.interpret.operations import call_builtin
from skiplint.interpret.values import (
    MODULE_METHODS, MUTATORS, STAR_UNKNOWN, UNKNOWN, ApiV, BoundV, BuiltinV, ClassV, DictV, DirectCall, ExternalV,
    FuncV, LambdaV, LayerV, ListV, ObjV, PipeRecord, PipeV, SeqV, hashable_constant, is_int, place, skip_keys,
    taint,
)


class Calls(Core):
    """Runs calls: what each kind of callee does with its arguments."""

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
        self.forward_call(func, func_node, bool(node.args))
        if not known and not isinstance(func, ApiV):
            for value, _ in args:
                taint(value)
            self.not_run(func)
            return UNKNOWN
        return self.call(func, args, kwargs, node, known)

    def arguments(self, node: cst.Call, env: Env) -> tuple[list[tuple[Any, Any]], dict[str, Any], bool]:
        args: list[tuple[Any, Any]] = []
        kwargs: dict[str, Any] = {}
        known = True
        for arg in node.args:
            value = self.eval(arg.value, env)
            if arg.star == "*":
                items = self.iterate(value, with_nodes=True, spread=True)
                if items is None:
                    known = False
                    args.append((STAR_UNKNOWN, arg.value))
                else:
                    args.extend(items)
            elif arg.star == "**":
                if isinstance(value, DictV) and not value.tainted and all(isinstance(k, str) for k in value.items):
                    kwargs.update(value.items)
                else:
                    known = False
            elif arg.keyword is not None:
                kwargs[arg.keyword.value] = (value, arg.value)
            else:
                args.append((value, arg.value))
        for value, _ in (*args, *kwargs.values()):
            place(value)
        return args, kwargs, known

    def forward_call(self, func: Any, func_node: cst.BaseExpression, with_arguments: bool) -> None:
        """A call that may run a module's forward: a skippable layer called directly is recorded;
        whatever may stash into the thread's default skip tracker is noted (a direct pop after a
        direct stash of the same name, in the same namespace, finds it there, and takes it out
        where the pop surely runs)."""
        tracker = None if self.entries.other_tracker else self.entries.tracker
        if isinstance(func, LayerV) and func.kind == "skippable":
            before = frozenset(tracker) if tracker is not None else None
            self.built.direct_calls.append(DirectCall(func, func_node, before, self.entries.kind))
            pops = func.names("pop")
            if tracker is not None and not self.branches and pops is not None and not func.tainted and not func.unsure:
                tracker.difference_update(skip_keys(func, pops))
            self.note_stashes(func, 0)
        elif isinstance(func, (LayerV, SeqV)) or (with_arguments and (func is UNKNOWN or isinstance(func, ObjV))):
            self.note_stashes(func, 0)

    def note_stashes(self, value: Any, depth: int) -> None:
        """What a module run directly may stash into the tracker: a pop does take a stash out of
        it, but which namespace's is not followed, so the names only grow."""
        if self.entries.tracker is None:
            return
        if isinstance(value, LayerV) and value.kind == "plain":
            return
        stashes = value.names("stash") if isinstance(value, LayerV) and value.kind == "skippable" else None
        if stashes is not None and not value.tainted:
            self.entries.tracker.update(skip_keys(value, stashes))
            return
        if isinstance(value, SeqV) and value.complete and not value.tainted and depth <= self.budget.nesting:
            for _, child, _ in value.children:
                self.note_stashes(child, depth + 1)
            return
        if isinstance(value, PipeV):
            return  # a pipe runs its layers with skip trackers of its own
        self.entries.tracker = None

    def call(self, func: Any, args: Args, kwargs: Kwargs, node: cst.Call,
             known: bool = True) -> Any:
        if isinstance(func, ApiV):
            return self.api_call(func.symbol, args, kwargs, node, known)
        if not known:
            return UNKNOWN
        if (func is UNKNOWN or isinstance(func, ExternalV)) and args and (
                "balance" in kwargs or (len(args) > 1 and balance_of(args[1][0]) is not None)):
            # `pipe_cls(layers, balance=...)` with a callee that cannot be known (a parameter, a class
            # of another package): a list of `LazyModule`s that build skippable layers fails with every
            # pipe that accepts LazyModule lists (fairscale's MultiProcessPipe and AsyncPipe refuse
            # skippables under lazy construction), so the call is checked as such a pipe (SKP304).
            lazy = self.lazy_layers(args[0][0], node)
            if lazy is not None:
                self.built.pipes.append(PipeRecord("LazyModule", node, lazy, None))
        if isinstance(func, ClassV):
            return self.instantiate(func, args, kwargs, node)
        if isinstance(func, (FuncV, LambdaV)):
            return self.call_function(func, [a for a, _ in args], {k: v for k, (v, _) in kwargs.items()})
        if isinstance(func, BoundV):
            return self.method(func.obj, func.attr, args, kwargs, node)
        if isinstance(func, BuiltinV):
            return call_builtin(func.name, [a for a, _ in args], self)
        if isinstance(func, ExternalV) and func.qualified.startswith("torch.") \
                and func.qualified.split(".")[-1][:1].isupper():
            return LayerV("plain", func.qualified.split(".")[-1])
        for value, _ in (*args, *kwargs.values()):
            taint(value)
        return UNKNOWN

    def method(self, obj: Any, attr: str, args: Args, kwargs: Kwargs,
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
                items = self.iterate(values[0], with_nodes=True, spread=True)
                if items is None:
                    obj.tainted = True
                else:
                    obj.items.extend(items)
                return None
            if attr == "insert" and len(args) == 2 and is_int(values[0]):
                obj.items.insert(values[0], args[1])
                return None
            if attr == "reverse" and not args:
                obj.items.reverse()
                return None
            if attr == "copy" and not args:
                return ListV(list(obj.items))
            obj.tainted = attr in MUTATORS or obj.tainted
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
            if attr == "__setitem__" and len(args) == 2 and hashable_constant(values[0]):
                obj.items[values[0]] = args[1]
                return None
            if attr == "update" and len(args) == 1 and isinstance(values[0], DictV) and not values[0].tainted:
                obj.items.update(values[0].items)
                return None
            obj.tainted = attr in MUTATORS
            return UNKNOWN
        if isinstance(obj, SeqV):
            if attr in ("add_module", "register_module") and len(args) == 2 and isinstance(values[0], str):
                self.add_child(obj, values[0], values[1], args[1][1])
                return None
            if attr == "append" and len(args) == 1:
                self.add_child(obj, None, values[0], args[0][1])
                return obj
            if attr == "extend" and len(args) == 1:
                items = self.iterate(values[0], with_nodes=True, spread=True)
                if items is None:
                    obj.stop("extend() with items that cannot be known")
                else:
                    for value, vnode in items:
                        self.add_child(obj, None, value, vnode)
                return obj
            if attr in MODULE_METHODS:
                return obj
            if attr in MUTATORS or attr == "insert":
                obj.stop(f"{attr}()")
            return UNKNOWN
        if isinstance(obj, LayerV):
            if attr == "isolate" and obj.kind == "skippable":
                return self.isolate(obj, values, kwargs, node)
            if attr == "requires_grad_":
                flag = values[0] if values else kwargs.get("requires_grad", (True,))[0]
                obj.frozen = flag is not True
            if attr in MODULE_METHODS:
                return obj
            return UNKNOWN
        taint(obj)
        return UNKNOWN

    def call_function(self, func: FuncV | LambdaV, args: list[Any], kwargs: dict[str, Any],
                      entry: bool = False) -> Any:
        if isinstance(func, LambdaV):
            env = Env(func.env, func.env.scope, func.env.func)
            params = func.node.params
            if not self.bind_params(params, args, kwargs, env, entry=False):
                return UNKNOWN
            value = self.eval(func.node.body, env)
            place(value)
            return value
        node = func.node
        if not self.budget.allows_call(self.depth):
            self.not_run(func)
            return UNKNOWN
        self.ran.add(id(node))
        scope = self.index.scopes.get(id(node), func.env.scope)
        env = Env(func.env, scope, node)
        env.branching = len(self.branches)
        positional = list(args)
        if func.self_value is not None:
            positional.insert(0, func.self_value)
        if not self.bind_params(node.params, positional, kwargs, env, entry=entry):
            self.not_run(func)
            return UNKNOWN
        if self.rebinding is not None:
            unknowable = self.rebinding.unknowable.get(id(scope))
            for name in unknowable or ():
                if name in env.vars:
                    env.vars[name] = UNKNOWN  # a parameter that code run at another time may rebind
        self.depth += 1
        try:
            self.block(syntax.statements(node.body), env)
            result: Any = None
        except Return as ret:
            result = ret.value
            place(result)
        except (Break, Continue, LoopUnknown):
            result = UNKNOWN
            self.not_run(func)  # stopped part way: what it would assign after is not known
        finally:
            self.depth -= 1
        if env.vars.get("$maybe_returned"):
            result = UNKNOWN
        factory = self.top_functions.get(id(node))
        if factory is not None:
            made = result
            if isinstance(result, ListV) and result.is_tuple and len(result.items) == 2 and not result.tainted:
                made = result.items[0][0]  # a (model, sample) pair, as `skiplint verify` takes it
            if isinstance(made, SeqV) and factory not in made.factories:
                made.factories.append(factory)
        if entry and isinstance(result, SeqV) and result.name is None:
            result.name = f"{node.name.value}()"
        return result

    def _bind_by_name(self, param: cst.Param, kwargs: dict[str, Any], env: Env, entry: bool) -> bool:
        """Bind a parameter no positional argument filled: its keyword argument, else its default,
        else unknown at an entry point (a function nobody calls); False when the call cannot bind it."""
        name = param.name.value
        if name in kwargs:
            env.vars[name] = kwargs.pop(name)
        elif param.default is not None:
            env.vars[name] = self.eval(param.default, env.parent or env)
        elif entry:
            env.vars[name] = UNKNOWN
        else:
            return False
        return True

    def bind_params(self, params: cst.Parameters, args: list[Any], kwargs: dict[str, Any], env: Env,
                    entry: bool) -> bool:
        positional = [*params.posonly_params, *params.params]
        rest = list(args)
        for param in positional:
            if rest:
                env.vars[param.name.value] = rest.pop(0)
            elif not self._bind_by_name(param, kwargs, env, entry):
                return False
        # At an entry point (a function nobody calls), `*args` and `**options` hold what cannot be known.
        if isinstance(params.star_arg, cst.Param):
            env.vars[params.star_arg.name.value] = ListV([(a, None) for a in rest], True, tainted=entry)
            rest = []
        if rest:
            return False
        if not all(self._bind_by_name(param, kwargs, env, entry) for param in params.kwonly_params):
            return False
        if isinstance(params.star_kwarg, cst.Param):
            env.vars[params.star_kwarg.name.value] = DictV({k: (v, None) for k, v in kwargs.items()}, tainted=entry)
            kwargs = {}
        return not kwargs
