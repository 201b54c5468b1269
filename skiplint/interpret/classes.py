"""Classes: what a class statement defines (skippable, Sequential subclass, plain module), whether
a plain class's own code nests skippable layers, and what instantiating each kind builds.

Skippable classes whose skip names their code alone cannot tell: a class made by a factory
(`def make(name): @skippable(stash=[name]) class ...`), in a loop (`for name in (...)`), or reading
a class attribute (`self.skip_name`). Each execution of such a class statement is remembered with
the values its frames held then, and checked as the class it made: the decorator's names are those
of that moment (it runs with the class statement), forward's free variables those of the end of
the run (forward runs when the model does, after the code that built it). A variable that forward
reads and that was rebound in between is late-bound, which SKP117 reports."""

from __future__ import annotations

import builtins
import dataclasses
from typing import Any, Optional

import libcst as cst

from skiplint import skippables, syntax
from skiplint.facts import Declaration, SkippableClass
from skiplint.imports import Scope
from skiplint.interpret.core import Args, Core, Definition, Env, Kwargs
from skiplint.interpret.values import (
    UNKNOWN, ApiV, ClassV, DictV, ExternalV, FuncV, LambdaV, LayerV, ListV, SeqV, class_method,
)
from skiplint.skippables import Resolved

#: What a call's callee must be for `code_nests` to follow it: a name or a dotted name.
_CALLEE_TYPES = frozenset({cst.Name, cst.Attribute})


def _assigned_on_self(node: cst.ClassDef) -> set[str]:
    """Attributes that some method of the class assigns through `self`."""
    out: set[str] = set()
    for inner in syntax.walk(node, into_scopes=True):
        for target in skippables.assignment_targets(inner):
            for part in syntax.walk(target):
                if isinstance(part, cst.Attribute) and isinstance(part.value, cst.Name) and part.value.value == "self":
                    out.add(part.attr.value)
    return out


class Classes(Core):
    """Defines and instantiates classes; remembers the executions of class statements with computed
    names, and checks each."""

    def define_class(self, node: cst.ClassDef, env: Env) -> ClassV:
        name = node.name.value
        info = self.skippable_of.get(id(node))
        if info is not None:
            if not (info.stash.known and info.pop.known):
                info = self.declared_here(node, info, env)
            if id(node) in self.specializing.open_classes:
                info = self.remember_definition(node, env, info)
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
        nests = self.code_nests(node, env, set(), 0) if kind == "plain" else "no"
        return ClassV(name, kind, None, node, env, nests=nests)

    def declared_here(self, node: cst.ClassDef, info: SkippableClass, env: Env) -> SkippableClass:
        """The declarations of a skippable class whose `stash=`/`pop=` read variables (a factory's
        parameters, a loop's variable), evaluated where the class statement runs: the decorator
        runs once per class statement, with the values bound at that moment."""
        for decorator in node.decorators:
            call = decorator.decorator
            if not isinstance(call, cst.Call):
                continue
            func = self.eval(call.func, env)
            if not (isinstance(func, ApiV) and func.symbol == "skippable"):
                continue
            given: dict[str, Any] = {"stash": frozenset(), "pop": frozenset()}
            for position, arg in enumerate(call.args):
                keyword = arg.keyword.value if arg.keyword is not None else ("stash", "pop")[min(position, 1)]
                if arg.star or keyword not in given or (arg.keyword is None and position > 1):
                    return info
                given[keyword] = self.eval(arg.value, env)
            stash, pop = [known if known.known else Declaration.of(known.kind, self.names(given[known.kind]))
                          for known in (info.stash, info.pop)]
            return dataclasses.replace(info, stash=stash, pop=pop)
        return info

    def names(self, value: Any) -> Optional[frozenset[str]]:
        """A declaration's names, as `frozenset(value)` makes them; None when they cannot be known."""
        if isinstance(value, frozenset):  # not given
            return value
        if isinstance(value, str):
            return frozenset(value)
        items = self.iterate(value) if isinstance(value, ListV) else None
        if items is None or not all(isinstance(item, str) for item in items):
            return None
        return frozenset(items)

    def code_nests(self, node: cst.CSTNode, env: Env, seen: builtins.set[int], depth: int) -> str:
        """What layers a plain module class's own code builds (they would be nested in it):
        "skippable" when some is a known skippable class, "unknown" when some class cannot be
        known, "no" when all are torch.nn built-ins, known plain classes or not modules at all."""
        if id(node) in seen or depth > self.budget.code_depth:
            return "no"
        seen.add(id(node))
        found = "no"
        for inner in syntax.walk(node, into_scopes=True):
            self.tick()  # walking code costs as much as running it
            if type(inner) is not cst.Call or type(inner.func) not in _CALLEE_TYPES:
                continue  # node types compared by identity: libcst's concrete classes have no subclasses
            head = inner.func
            while type(head) is cst.Attribute:
                head = head.value
            if type(head) is cst.Name and head.value == "self":
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
                    return self.code_nests(late, self.module_env, seen, depth + 1)
                value = self.imported(func, env)
        else:
            value = self.imported(func, env)
        if isinstance(value, ClassV):
            if value.kind == "skippable":
                return "skippable"
            if value.kind == "plain":
                return value.nests
            if value.kind == "sequential" and value.node is not None:
                return self.code_nests(value.node, value.env or env, seen, depth + 1)
            return "unknown"
        if isinstance(value, (FuncV, LambdaV)):
            return self.code_nests(value.node, value.env, seen, depth + 1)
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

    def held_layers(self, args: Args, kwargs: Kwargs) -> bool:
        """Whether constructor arguments hand skippable (or unknown) layers to a module."""
        def holds(value: Any, depth: int) -> bool:
            if depth > self.budget.held_depth:
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

    def instantiate(self, cls: ClassV, args: Args, kwargs: Kwargs,
                    node: cst.CSTNode, entry: bool = False) -> Any:
        if cls.kind == "skippable":
            return LayerV("skippable", cls.name, cls.info)
        if cls.kind == "plain":
            holds = cls.nests != "no" or self.held_layers(args, kwargs)
            return LayerV("container" if holds else "plain", cls.name)
        if cls.kind != "sequential":
            return LayerV("unknown", cls.name)
        seq = SeqV(cls.name, node, name=cls.name if entry else None)
        self.built.sequences.append(seq)
        init = class_method(cls.node, "__init__")
        if init is None:
            if cls.node is None:
                seq.stop(f"{cls.name} is a Sequential subclass defined in another module")
            else:
                self.fill_sequential(seq, args, kwargs, node)
            return seq
        result = self.call_function(FuncV(init, cls.env or self.module_env, seq),
                                    [a for a, _ in args], {k: v for k, (v, _) in kwargs.items()},
                                    entry=entry)
        if result is UNKNOWN:
            seq.stop(f"{cls.name}.__init__ cannot be followed")
        return seq

    def remember_definition(self, node: cst.ClassDef, env: Env, info: SkippableClass) -> SkippableClass:
        """Remember one execution of a class statement; what the class it makes declares (an
        object of its own, which `specializations` refines)."""
        count = self.specializing.count.get(id(node), 0) + 1
        self.specializing.count[id(node)] = count
        if count > self.budget.specializations or env.overlay:
            return info  # past the budget, or made under an unknown condition: its names abstain
        frames: list[dict[str, Any]] = []
        frame: Optional[Env] = env
        while frame is not None:
            frames.append(dict(frame.vars))
            frame = frame.parent
        own = dataclasses.replace(info)
        attrs = self.class_attributes(node, env)
        self.specializing.definitions.append(Definition(node, env, frames, attrs, self.entries.serial, own))
        return own

    def class_attributes(self, node: cst.ClassDef, env: Env) -> dict[str, Any]:
        """`name = value` statements of the class body, evaluated as the body runs them."""
        overwritten = _assigned_on_self(node)
        body = Env(env, env.scope)
        for stmt in syntax.statements(node.body):
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if (isinstance(small, cst.Assign) and len(small.targets) == 1
                        and isinstance(small.targets[0].target, cst.Name)):
                    body.vars[small.targets[0].target.value] = self.eval(small.value, body)
        return {name: value for name, value in body.vars.items() if name not in overwritten}

    def specializations(self) -> tuple[SkippableClass, ...]:
        """Each remembered execution as the class it made; none for a class statement run more
        often than the budget allows, or in a run that did not finish (its frames are not final).
        What each made class discards and stashes of its output is added to what its layers declare
        (`refined`)."""
        out = []
        for definition in self.specializing.definitions:
            if (self.specializing.count[id(definition.node)] > self.budget.specializations
                    or definition.run in self.entries.aborted):
                continue
            made = self.specialized(definition)
            if made is not None:
                out.append(made)
                if (made.discarded or made.detached or made.output_stashes or made.input_output_stashes
                        or made.inert_pops or made.none_stashes or made.keeps_input or made.output_grad != "no"
                        or made.input_history_stashes or made.output_saves or made.views):
                    self.specializing.refined[id(definition.info)] = dataclasses.replace(
                        definition.info, forward=made.forward)
        return tuple(out)

    def specialized(self, definition: Definition) -> Optional[SkippableClass]:
        found = self.index.skippable_calls.get(id(definition.node))
        if found is None:
            return None
        outer = found[0].outer
        enclosing: set[int] = set()
        scope: Optional[Scope] = outer
        while scope is not None:
            enclosing.add(id(scope))
            scope = scope.parent
        in_decorators = {id(n) for decorator in definition.node.decorators for n in syntax.walk(decorator)}
        late: dict[str, tuple[str, str]] = {}

        def then(name: str) -> Any:
            for frame in definition.then:
                if name in frame:
                    return frame[name]
            return None

        def resolve(node: cst.BaseExpression, where: Scope) -> Resolved:
            if isinstance(node, cst.Attribute):
                if isinstance(node.value, cst.Name) and node.value.value == "self":
                    value = definition.attrs.get(node.attr.value)
                    return value if isinstance(value, str) else None
                return None
            if not isinstance(node, cst.Name):
                return None
            if id(node) in in_decorators:
                return self.strings(then(node.value))
            owner = where.owner(node.value)
            if owner is None or id(owner) not in enclosing:
                return None  # forward's own variable, or a builtin
            known, now = definition.env.find(node.value)
            resolved = self.strings(now) if known else None
            made = then(node.value)
            if isinstance(resolved, str) and isinstance(made, str) and made != resolved:
                late[node.value] = (made, resolved)
            return resolved

        made_class = skippables.specialize(self.index, definition.node, self.locator, resolve)
        if made_class is not None and late:
            made_class = dataclasses.replace(made_class, late=tuple((v, m, n) for v, (m, n) in sorted(late.items())))
        return made_class

    def strings(self, value: Any) -> Resolved:
        """A string, or the strings of a known list or tuple; None for anything else."""
        if isinstance(value, str):
            return value
        if isinstance(value, ListV):
            items = self.iterate(value)
            if items is not None and all(isinstance(item, str) for item in items):
                return tuple(items)
        return None
