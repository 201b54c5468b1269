"""The facts of a module's @skippable classes: each class, its declarations and its forward's
commands and paths, and what is wrong outside them (misused decorators, undecorated yields, imports
of the removed torch pipeline, `.isolate(only=...)` names no class declares)."""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Iterator, Optional

import libcst as cst

from skiplint import gradflow, syntax
from skiplint.facts import (
    Brought, GradKind, Command, Declaration, Forward, IsolateName, Kind, Locator, ModuleFacts, RemovedImport, Site,
    SkippableClass, SkippableMisuse, UndecoratedYield, ViewKind,
)
from skiplint.imports import Scope, dotted_name, removed_module
from skiplint.limits import BUDGET
from skiplint.skippables.index import ClassInfo, ModuleIndex, command_kind
from skiplint.skippables.names import NameResolver, arity_problem, declaration, skippable_arguments, static_string
from skiplint.skippables.paths import ForwardAnalysis, is_generator


def _required_inputs(forward: cst.FunctionDef) -> int:
    params = forward.params
    positional = [*params.posonly_params, *params.params]
    required = [p for p in positional if p.default is None]
    return max(len(required) - 1, 0)  # minus self


def extract(module: cst.Module, path: str, source: Optional[str] = None,
            index: Optional[ModuleIndex] = None, locator: Optional[Locator] = None,
            imported: Optional[gradflow.FunctionResolver] = None) -> ModuleFacts:
    """All skip facts of one parsed module (`source`, when given, lets rare walks be skipped).
    One `locator` per module lets every finding of it be located in one pass; `imported` finds
    the functions of other project modules that forwards call (their dataflow is followed)."""
    index = index or ModuleIndex(module)
    if imported is not None:
        index.imported = path, imported
    locator = locator or Locator(module)
    misuses: list[SkippableMisuse] = []
    undecorated: list[UndecoratedYield] = []
    skippables: list[SkippableClass] = []
    reported_loose: set[int] = set()

    # @skippable used as a decorator on classes and functions, and the skippable(...)(Cls) form.
    decorated: dict[int, cst.Call] = {}
    for info in index.classes:
        for decorator in info.node.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and info.outer.api(expr.func) == "skippable":
                decorated[id(info.node)] = expr
            elif info.outer.api(expr) == "skippable":
                misuses.append(SkippableMisuse(None, Site(decorator, locator)))
    for func, scope in index.functions:
        for decorator in func.decorators:
            expr = decorator.decorator
            target = expr.func if isinstance(expr, cst.Call) else expr
            if scope.api(target) == "skippable":
                misuses.append(SkippableMisuse(func.name.value, Site(decorator, locator)))
    by_scope_name = {(id(info.outer), info.node.name.value): info for info in index.classes}
    wrapped_names: set[str] = set()
    for call, scope in _wrapping_calls(index):
        wrap = _wrap(call, scope)
        if wrap is not None:
            inner, name = wrap
            wrapped_names.add(name)
            search: Optional[Scope] = scope
            while search is not None:
                wrapped_info = by_scope_name.get((id(search), name))
                if wrapped_info is not None:
                    decorated.setdefault(id(wrapped_info.node), inner)
                    break
                search = search.parent

    bases_used = {
        base.value.value
        for info in index.classes for base in info.node.bases if isinstance(base.value, cst.Name)
    }

    for info in index.classes:
        decorator_call = decorated.get(id(info.node))
        forward = info.methods.get("forward")
        if decorator_call is None:
            name = info.node.name.value
            # Another decorator may be a re-export of skippable; a wrap inside an expression,
            # `skippable(...)(Cls)()`, is found textually: in both cases, abstain.
            wrapped = name in wrapped_names or (
                source is not None and re.search(r"\)\(\s*" + re.escape(name) + r"\s*\)", source) is not None)
            if forward is not None and not info.node.decorators and not wrapped and name not in bases_used:
                first = _first_command_yield(index, info, forward)
                if first is not None:
                    kind, node = first
                    undecorated.append(UndecoratedYield(info.node.name.value, kind, Site(node, locator)))
            continue
        index.skippable_calls[id(info.node)] = (info, decorator_call)
        skippables.append(_skippable_class(index, info, decorator_call, forward, locator, reported_loose))

    # Commands built as whole statements anywhere else (module level, plain functions).
    loose: list[Command] = []
    for call, scope, stmt in index.statement_calls:
        if id(call) in reported_loose or not isinstance(stmt, cst.Expr):
            continue
        loose_kind = command_kind(scope.api(call.func))
        if loose_kind is not None:
            name_node = arity_problem(loose_kind, call)[1].get("name")
            loose_name = static_string(index, scope, name_node) if name_node is not None else None
            loose.append(Command(loose_kind, loose_name, Site(call, locator), yielded=False))

    removed: list[RemovedImport] = []
    for stmt, guarded in index.imports:
        if guarded:
            continue
        module_name = removed_module(stmt)
        if module_name is not None:
            removed.append(RemovedImport(module_name, removed_import_brings(stmt), Site(stmt, locator)))

    isolate_names = _isolate_names(index, skippables, locator) if source is None or "only" in source else []
    return ModuleFacts(path, tuple(skippables), (), tuple(loose), tuple(misuses), tuple(undecorated),
                       tuple(removed), tuple(isolate_names))


_SKIP_API_NAMES = frozenset({"skippable", "stash", "pop", "Namespace", "verify_skippables", "inspect_skip_layout",
                             "Skippable", "skip", "_skip"})


def _wrapping_calls(index: ModuleIndex) -> Iterator[tuple[cst.Call, Scope]]:
    """The calls that may wrap a class: whole statement values, and the calls reached from them
    through lambda bodies and call arguments (`lambda: skippable(...)(Impl)`,
    `functools.partial(skippable(...), Impl)`), bounded by the budget's nesting."""
    starts: list[tuple[cst.BaseExpression, Scope]] = [(call, scope) for call, scope, _ in index.statement_calls]
    starts.extend(index.statement_lambdas)
    for start, scope in starts:
        pending: list[tuple[cst.BaseExpression, int]] = [(start, 0)]
        while pending:
            node, depth = pending.pop()
            if type(node) is cst.Lambda:
                if depth < BUDGET.nesting:
                    pending.append((node.body, depth + 1))
            elif type(node) is cst.Call:
                yield node, scope
                if depth < BUDGET.nesting:
                    pending.extend((arg.value, depth + 1) for arg in node.args)


def _wrap(call: cst.Call, scope: Scope) -> Optional[tuple[cst.Call, str]]:
    """`skippable(...)(Cls)` or `partial(skippable(...), Cls)`: the skippable(...) call and Cls."""
    inner = call.func
    if (isinstance(inner, cst.Call) and scope.api(inner.func) == "skippable" and len(call.args) == 1
            and isinstance(call.args[0].value, cst.Name)):
        return inner, call.args[0].value.value
    if (scope.qualified(call.func) == "functools.partial" and len(call.args) == 2
            and all(arg.keyword is None and not arg.star for arg in call.args)):
        first, second = call.args[0].value, call.args[1].value
        if isinstance(first, cst.Call) and scope.api(first.func) == "skippable" and isinstance(second, cst.Name):
            return first, second.value
    return None


def removed_import_brings(stmt: cst.Import | cst.ImportFrom) -> tuple[Brought, ...]:
    """What an import of the removed torch.distributed.pipeline brings in, by what replaces it."""
    kinds: list[Brought] = []

    def add(kind: Brought) -> None:
        if kind not in kinds:
            kinds.append(kind)

    def module_kind(module: str) -> Brought:
        parts = module.split(".")
        return "skip" if "skip" in parts or "_skip" in parts else "package"

    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            dotted = dotted_name(alias.name)
            if dotted is not None and removed_module(cst.Import(names=[alias.with_changes(
                    comma=cst.MaybeSentinel.DEFAULT)])) is not None:
                add(module_kind(dotted))
    else:
        base = dotted_name(stmt.module) if stmt.module is not None else None
        base_kind = module_kind(base or "")
        if base_kind == "skip" or isinstance(stmt.names, cst.ImportStar):
            add(base_kind)
        else:
            for alias in stmt.names:
                name = alias.name.value if isinstance(alias.name, cst.Name) else ""
                if name in _SKIP_API_NAMES:
                    add("skip")
                elif name == "Pipe":
                    add("Pipe")
                elif name == "PipeSequential":
                    add("PipeSequential")
                elif name in ("partition_model", "WithDevice"):
                    add("placement")
                else:
                    add("package")
    if len(kinds) > 1 and "package" in kinds:
        kinds.remove("package")  # the named replacements say it; the general advice would repeat them
    return tuple(kinds) if kinds else ("package",)


def _first_command_yield(index: ModuleIndex, info: ClassInfo,
                         forward: cst.FunctionDef) -> Optional[tuple[Kind, cst.CSTNode]]:
    scope = index.scopes[id(forward)]
    for node in syntax.walk(forward.body):
        if type(node) is cst.Yield and type(node.value) is cst.Call:
            kind = command_kind(scope.api(node.value.func))
            if kind is not None:
                return kind, node
    return None


def _skippable_class(index: ModuleIndex, info: ClassInfo, call: cst.Call, forward: Optional[cst.FunctionDef],
                     locator: Locator, reported_loose: set[int],
                     resolve: Optional[NameResolver] = None) -> SkippableClass:
    args = skippable_arguments(call)
    if args is None:
        stash = Declaration("stash", None, Site(call, locator))
        pop = Declaration("pop", None, Site(call, locator))
    else:
        stash = declaration(index, info.outer, "stash", args["stash"], locator, resolve)
        pop = declaration(index, info.outer, "pop", args["pop"], locator, resolve)
    forward_facts: Optional[Forward] = None
    if forward is not None:
        analysis = ForwardAnalysis(index, info, forward, locator, skippable=True, resolve=resolve)
        generator_elsewhere = not analysis.is_generator and any(
            is_generator(m) for name, m in info.methods.items() if name != "forward")
        if not generator_elsewhere:
            commands, keeps_input, output_grad, output_saves = _with_gradflow(analysis)
            for command in commands:
                if not command.yielded and command.site is not None:
                    reported_loose.add(id(command.site.node))
            exits = analysis.exits if analysis.paths_known and not analysis.unknown else None
            forward_facts = Forward(
                Site(forward, locator), commands, tuple(analysis.non_commands.values()), exits,
                tuple(analysis.repeats.values()) if analysis.paths_known else (),
                tuple((key, Site(node, locator)) for key, node in analysis.first_branch.items()),
                _required_inputs(forward), frozenset(analysis.unknown),
                Site(analysis.early_exits[0], locator) if analysis.early_exits else None, keeps_input,
                output_grad, output_saves,
            )
    return SkippableClass(info.node.name.value, stash, pop, forward_facts, Site(info.node, locator))


def _with_gradflow(analysis: ForwardAnalysis) -> tuple[tuple[Command, ...], bool, GradKind, bool]:
    """The commands (by the id of their call) with what autograd dataflow through forward says of
    them (skiplint.gradflow): whether each stash shares saved history (or the input's) with the
    output, whether the output depends on each popped tensor, whether forward's code reads it with
    its history at all; and whether the output depends on forward's input, requires grad, and
    certainly holds a node that saved tensors."""
    flow, commands = analysis.flow, analysis.commands
    known = {call for call, c in commands.items() if c.yielded and c.name is not None and c.arity_problem is None}
    if not known:
        return tuple(commands.values()), False, "no", False
    # Past MAX_STATES paths the walk leaves code unread: no pop is known to be used only detached.
    detached = flow.assigned_pops - flow.read if analysis.paths_known else set()
    in_place = flow.detached_in_place
    keeps_input = flow.reaches_output(gradflow.INPUT_SOURCE)
    out = []
    for call, command in commands.items():
        if call not in known:
            out.append(command)
        elif command.kind == "stash":
            shares = flow.shares(call)
            stashed = flow.stashes.get(call)
            out.append(dataclasses.replace(
                command, shares_output=shares == gradflow.YES, shares_if_input_grad=shares == gradflow.INPUT,
                shares_input_history=stashed is not None and gradflow.INPUT_SOURCE in stashed.sources
                and keeps_input, view=_view(stashed)))
        else:
            out.append(dataclasses.replace(command, grad_used=not command.discarded and flow.reaches_output(call),
                                           detached_only=call in detached,
                                           detached_in_place=Site(in_place[call], command.site.locator)
                                           if call in in_place and command.site is not None else None))
    grad: GradKind = "no"
    if flow.returned:
        grad = "yes" if flow.output.grad == gradflow.YES else "input" if flow.output.grad == gradflow.INPUT else "no"
    saves = flow.returned and any(kind == gradflow.YES for _node, kind in flow.output.ops)
    return tuple(out), keeps_input, grad, saves


def _view(stashed: Optional[gradflow.Value]) -> ViewKind:
    view = stashed.view if stashed is not None else gradflow.NO
    if view in (gradflow.YES, gradflow.INPUT):
        return "yes" if view == gradflow.YES else "input"
    return "item" if view == gradflow.ITEM else "may" if view == gradflow.MAY else "no"


def computed(cls: SkippableClass) -> bool:
    """Whether a skippable class declares or uses a name that its code alone cannot tell."""
    forward = cls.forward
    return not (cls.stash.known and cls.pop.known) or (forward is not None and (
        bool(forward.unknown_kinds) or any(c.name is None and c.name_site is not None for c in forward.commands)))


def specialize(index: ModuleIndex, node: cst.ClassDef, locator: Locator,
               resolve: NameResolver) -> Optional[SkippableClass]:
    """The facts of one skippable class as one execution of its class statement makes it: the
    names it reads from its factory's parameters, a loop's variable or its class attributes are
    those `resolve` gives (`extract` must have run on `index`)."""
    found = index.skippable_calls.get(id(node))
    if found is None:
        return None
    info, call = found
    return _skippable_class(index, info, call, info.methods.get("forward"), locator, set(), resolve)


def _isolate_names(index: ModuleIndex, skippables: Iterable[SkippableClass],
                   locator: Locator) -> list[IsolateName]:
    """`Cls(...).isolate(ns, only=[...])` naming a skip Cls never declares."""
    known = {cls.name: cls for cls in skippables}
    if not known:
        return []
    found: list[IsolateName] = []
    for node in syntax.walk(index.module, into_scopes=True):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "isolate"):
            continue
        receiver = node.func.value
        if not (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)):
            continue
        cls = known.get(receiver.func.value)
        if cls is None or not (cls.stash.known and cls.pop.known):
            continue
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value != "only":
                continue
            if not isinstance(arg.value, (cst.List, cst.Tuple, cst.Set)):
                continue
            declared = cls.stash.name_set | cls.pop.name_set
            for element in arg.value.elements:
                name = syntax.string_value(element.value)
                if name is not None and name not in declared:
                    found.append(IsolateName(name, cls.name, Site(arg, locator)))
    return found
