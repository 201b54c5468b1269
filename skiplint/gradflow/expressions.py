"""The walk's expressions: each evaluated to a `model.Value` (a `yield` of the skip API records
what it stashes and pops); the branch a condition takes; what an assignment binds."""

from __future__ import annotations

import dataclasses
from typing import Optional

import libcst as cst

from skiplint import syntax
from skiplint.gradflow.model import (
    INPUT, ITEM, MAY, Env, INPUT_SOURCE, NO, NOTHING, PLAIN, YES, Value, container, meet, meet_all, plain, saving,
    union,
)
from skiplint.gradflow.walker import Walker, arguments, bindable, bound, constant_index, rebound, unplain


class Expressions(Walker):
    """Evaluates expressions."""

    def eval(self, node: cst.BaseExpression, env: Env) -> Value:
        if type(node) is cst.Name:
            found = self.value(node, env)
            return plain(found) if node.value in NON_COMMAND_NAMES else found
        found = self.grad_off(self.value(node, env))
        return plain(found) if type(node) in NON_COMMAND_FORMS else found

    def value(self, node: cst.BaseExpression, env: Env) -> Value:
        if isinstance(node, cst.Name):
            return env.get(node.value, NOTHING)
        if isinstance(node, cst.Attribute):
            key = self.key(node)
            if key is not None:
                found = env.get(key)  # a call of a method may have set it to a command since
                return plain(found, False) if found is not None else self.attributes.parameter(node.attr.value)
            owner = node.value
            if (isinstance(owner, cst.Attribute) and isinstance(owner.value, cst.Name) and owner.value.value == "self"
                    and node.attr.value in ("weight", "bias") and "self." + owner.attr.value not in env):
                return self.attributes.layer_weight(owner.attr.value)
            if node.attr.value in ("data",):
                return PLAIN if self.eval(node.value, env).plain else NOTHING
            if node.attr.value in ("T", "mT"):
                return dataclasses.replace(self.eval(node.value, env), view=YES)
            if node.attr.value == "real":
                return self.eval(node.value, env)
            return PLAIN if self.eval(node.value, env).plain else NOTHING  # an attribute of a tensor is no command
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
            index = constant_index(node)
            if whole.items is not None:
                if index is not None and -len(whole.items) <= index < len(whole.items):
                    return whole.items[index]
                return meet_all(whole.items)
            return dataclasses.replace(whole, view=_subscript_view(node, whole))
        if isinstance(node, cst.IfExp):
            self.eval(node.test, env)
            decided = self.decide(node.test, env)
            if decided is not None:  # the other branch runs in eval mode: the value may be a command there
                self.unrun += 1
                try:
                    self.eval(node.orelse if decided else node.body, dict(env))
                finally:
                    self.unrun -= 1
                return plain(self.eval(node.body if decided else node.orelse, env), False)
            return meet(self.eval(node.body, env), self.eval(node.orelse, env))
        if isinstance(node, (cst.Tuple, cst.List)):
            items = [self.eval(e.value, env) for e in node.elements]
            if any(isinstance(e, cst.StarredElement) for e in node.elements):
                return union(items)
            return container(items)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.comprehension(node, env)
        if isinstance(node, cst.NamedExpr):  # what a walrus binds is not followed
            self.eval(node.value, env)
            unplain(rebound(node), env)
            return NOTHING
        if isinstance(node, (cst.Set, cst.Dict)):
            return union([self.eval(child, env) for child in syntax.children(node)
                           if isinstance(child, cst.BaseExpression)] + [
                self.eval(e.value, env) for e in getattr(node, "elements", ()) if hasattr(e, "value")])
        for child in syntax.children(node):
            if isinstance(child, cst.BaseExpression) and not isinstance(child, cst.Lambda):
                self.eval(child, env)
        return NOTHING

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
            if value.reach and not self.unrun:
                self.flow.hold(key, value.reach)
            return
        if isinstance(target, (cst.Tuple, cst.List)) and not any(
                isinstance(e, cst.StarredElement) for e in target.elements):
            if value.items is not None and len(value.items) == len(target.elements):
                for element, item in zip(target.elements, value.items):
                    self.assign(element.value, item, env)
                return
            if value.items is None:  # the parts of a tensor (chunk, split, unbind) are views of it
                part = Value(value.ops, value.grad, value.sources, view=MAY)
                for element in target.elements:
                    self.assign(element.value, part, env)
                return
        rebinds = set(bound(target))
        for node in syntax.walk(target):
            node_key = self.key(node) if isinstance(node, cst.BaseExpression) else None
            if node_key is not None:  # what `h[i] = ...` stores into is still no command if it was none
                env[node_key] = PLAIN if node_key not in rebinds and env.get(node_key, NOTHING).plain else NOTHING

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
            if not isinstance(target, cst.Call) or any(arg.star for arg in target.args):
                return NOTHING
            positional, keywords = arguments(target, args)
            of_self = isinstance(target.func, cst.Attribute)
            if method is None:  # a generator of another module of the project?
                found = self.imported_function(target.func)
                if found is None or not bindable(found[1], len(positional), keywords, bound=False):
                    return NOTHING
                return self.imported_call(found, positional, keywords)
            if not bindable(method, len(positional), keywords, of_self):
                return NOTHING
            result, returned, _ = self.run(method, positional, bound=of_self, keywords=keywords)
            return result if returned else NOTHING
        kind = self.command_kind(value) if isinstance(value, cst.Call) else None
        if isinstance(value, cst.Call) and kind is not None:
            if kind == "stash":
                tensor = value.args[1].value if len(value.args) > 1 and value.args[1].keyword is None else next(
                    (a.value for a in value.args if a.keyword is not None and a.keyword.value == "tensor"), None)
                stashed = self.eval(tensor, env) if tensor is not None and not self.in_loop else NOTHING
                known = self.flow.stashes.get(id(value))
                if not self.unrun:
                    self.flow.stashes[id(value)] = stashed if known is None else meet(known, stashed)
                return NOTHING
            return Value(frozenset(), NO, frozenset({id(value)}), reach=frozenset({id(value)}))
        if value is not None:
            self.yielded_value(node, self.eval(value, env))
        return NOTHING


#: Expressions that are no command by their form (SKP108): literals, displays, arithmetic.
NON_COMMAND_FORMS = frozenset({
    cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List,
    cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda,
    cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BooleanOperation,
})
#: Names that are no command: the constants.
NON_COMMAND_NAMES = frozenset({"None", "True", "False"})


def _subscript_view(node: cst.Subscript, whole: Value) -> int:
    """Whether `whole[...]` is a view: basic indexing (integers, slices, `...`, None) of a certain view
    (a tensor), or with an index only an array takes (two or more parts, one a slice, `...` or None),
    certainly is; an integer index of forward's input is an item of it (a tuple's) or a view of it, a
    view where the input is a micro-batch (ITEM). A mask or list index copies (NO), even of a view.
    Any other index may give a view (MAY): basic indexing of what may be a tensor, or an index whose
    value cannot be known (a variable: an integer or a tensor)."""
    parts = [element.slice for element in node.slice]
    if not all(_basic(part) for part in parts):
        copies = all(_basic(part) or (isinstance(part, cst.Index) and isinstance(part.value, _COPYING_INDEX))
                     for part in parts)
        return NO if copies else MAY
    if whole.view == YES or (len(parts) > 1 and any(
            not isinstance(part, cst.Index) or not isinstance(part.value, (cst.Integer, cst.UnaryOperation))
            for part in parts)):
        return YES
    if whole.view == INPUT and len(parts) == 1 and constant_index(node) is not None:
        return ITEM
    return MAY


#: Index expressions that are certainly a list or a tensor mask: advanced indexing, a copy.
_COPYING_INDEX = (cst.List, cst.ListComp, cst.Comparison)


def _basic(part: cst.BaseSlice) -> bool:
    """An index part that basic indexing takes: a slice, an integer, `...` or None."""
    if isinstance(part, cst.Slice):
        return True
    value = part.value if isinstance(part, cst.Index) else None
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Ellipsis)) or (isinstance(value, cst.Name) and value.value == "None")
