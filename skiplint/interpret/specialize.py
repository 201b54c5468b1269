"""Skippable classes whose skip names their code alone cannot tell: a class made by a factory
(`def make(name): @skippable(stash=[name]) class ...`), in a loop (`for name in (...)`), or reading
a class attribute (`self.skip_name`). Each execution of such a class statement is remembered with
the values its frames held then, and checked as the class it made: the decorator's names are those
of that moment (it runs with the class statement), forward's free variables those of the end of
the run (forward runs when the model does, after the code that built it). A variable that forward
reads and that was rebound in between is late-bound, which SKP117 reports."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import libcst as cst

from skiplint import skippables, syntax
from skiplint.facts import SkippableClass
from skiplint.imports import Scope
from skiplint.interpret.core import Core, Definition
from skiplint.interpret.env import Env
from skiplint.interpret.values import ListV, SkipInfo, skip_info
from skiplint.skippables import Resolved


def _assigned_on_self(node: cst.ClassDef) -> set[str]:
    """Attributes that some method of the class assigns through `self`."""
    out: set[str] = set()
    for inner in syntax.walk(node, into_scopes=True):
        for target in skippables.assignment_targets(inner):
            for part in syntax.walk(target):
                if isinstance(part, cst.Attribute) and isinstance(part.value, cst.Name) and part.value.value == "self":
                    out.add(part.attr.value)
    return out


class Specializations(Core):
    """Remembers the executions of class statements with computed names, and checks each."""

    def remember_definition(self, node: cst.ClassDef, env: Env, info: SkipInfo) -> SkipInfo:
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
        self.specializing.definitions.append(Definition(node, env, frames, self.class_attributes(node, env), self.entries.serial,
                                           own))
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
                facts = skip_info(made)
                if (facts.discarded or facts.detached or facts.output_stashes or facts.input_output_stashes
                        or facts.inert_pops or facts.none_stashes or facts.keeps_input or facts.output_grad != "no"
                        or facts.input_history_stashes or facts.output_saves):
                    self.specializing.refined[id(definition.info)] = dataclasses.replace(
                        definition.info, discarded=facts.discarded, detached=facts.detached,
                        output_stashes=facts.output_stashes,
                        input_output_stashes=facts.input_output_stashes, inert_pops=facts.inert_pops,
                        none_stashes=facts.none_stashes, keeps_input=facts.keeps_input,
                        output_grad=facts.output_grad, input_history_stashes=facts.input_history_stashes,
                        output_saves=facts.output_saves)
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
