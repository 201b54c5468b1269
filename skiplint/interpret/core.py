"""The interpreter's state and its budget: what every part (statements, expressions, calls,
classes, the skip API) shares, and the signatures by which the parts call one another."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import libcst as cst

from skiplint.facts import IsolateName, Locator, ModuleFacts, Site, Unknown
from skiplint.interpret.env import Break, Continue, Env, LoopUnknown, OutOfBudget, Return
from skiplint.interpret.rebinding import Rebinding
from skiplint.interpret.values import (
    ClassV, DirectCall, FuncV, LambdaV, LayerV, PipeRecord, SeqV, SkipInfo, TrackedSkip, skip_info,
)
from skiplint.limits import Budget
from skiplint.skippables import ModuleIndex, computed

#: (qualified name of a class of another project module) -> its ClassV, or None.
ClassResolver = Callable[[str], Optional[ClassV]]
#: Positional arguments of a call: (value, node) each; keywords: name -> (value, node).
Args = list[tuple[Any, Any]]
Kwargs = dict[str, Any]


@dataclass(eq=False)
class Definition:
    """One execution of a class statement (remembered by skiplint.interpret.specialize)."""

    node: cst.ClassDef
    #: Where it ran: read again for the values forward sees when it runs.
    env: Env
    #: Each frame's variables when it ran, innermost first.
    then: list[dict[str, Any]]
    #: The class attributes its body bound (names read as `self.<name>`).
    attrs: dict[str, Any]
    #: The entry point of the run it belongs to (Core.run_serial).
    run: int
    #: What the class made declares, as the compositions that hold its layers see it.
    info: SkipInfo


class Core:
    """State of one module's run: what has been built, and how much of the budget is spent."""

    def __init__(self, index: ModuleIndex, facts: ModuleFacts, locator: Locator, budget: Budget,
                 resolve_class: Optional[ClassResolver] = None) -> None:
        self.index = index
        self.locator = locator
        self.budget = budget
        self.resolve_class = resolve_class
        self.skippable_of: dict[int, SkipInfo] = {}
        for cls in facts.skippables:
            if cls.site is not None:
                self.skippable_of[id(cls.site.node)] = skip_info(cls)
        self.steps = 0
        self.depth = 0
        self.ns_serial = 0
        self.sequences: list[SeqV] = []
        self.pipes: list[PipeRecord] = []
        #: Creation nodes of Sequentials used as inspect_skip_layout partitions (in any run).
        self.partition_nodes: set[int] = set()
        #: Functions that some code of the module called (the others run on their own).
        self.ran: set[int] = set()
        self.module_env = Env(None, index.scope)
        #: Module-level functions whose result a harness gives to a pipe (`skiplint verify FILE:build`).
        self.verified_functions: frozenset[str] = frozenset()
        #: Module-level functions by node: what they return can be named after them, as
        #: `skiplint verify FILE:NAME` names a factory (`skiplint layout FILE:NAME`).
        self.top_functions: dict[int, str] = {id(stmt): stmt.name.value for stmt in index.module.body
                                               if isinstance(stmt, cst.FunctionDef)}
        #: Skippable layers called directly (`layer(x)`), in the order they ran.
        self.direct_calls: list[DirectCall] = []
        #: Names that the running entry point may have stashed so far into the skip tracker its
        #: direct calls use (the thread's default one, unless a fixture gives each test its own);
        #: None: any name.
        self.tracker: Optional[set[TrackedSkip]] = set()
        #: Names that some entry point may leave in the thread's default tracker, where an entry
        #: point run after it finds them; None: any name.
        self.tracker_leaks: Optional[set[TrackedSkip]] = set()
        #: Inside a `with` that may install another skip tracker (`use_skip_tracker(...)`, a
        #: context manager of the project): what a direct pop finds there cannot be known.
        self.other_tracker = 0
        #: The kind of the entry point running: "module", "test" (a pytest test function), "other".
        self.entry_kind = "module"
        #: An autouse fixture of the module runs each test inside `use_skip_tracker(...)` with a
        #: tracker of its own, so a test starts with an empty tracker whatever ran before it.
        self.fresh_test_trackers = False
        #: Skippable classes whose names their code alone cannot tell, and each execution of
        #: their class statements (skiplint.interpret.specialize).
        self.open_classes: builtins.set[int] = {
            id(cls.site.node) for cls in facts.skippables if cls.site is not None and computed(cls)}
        self.definitions: list[Definition] = []
        #: At `.isolate(...)` calls, each (call argument, name) once: the names a class never
        #: declares (not those the module's own pass found: `Cls(...).isolate(...)` of a class it
        #: knows), and what cannot be known.
        self.isolate_names: list[IsolateName] = []
        self.unknowns: list[Unknown] = []
        self.noted: builtins.set[tuple[int, str]] = {
            (id(found.site.node), found.name) for found in facts.isolate_names if found.site is not None}
        self.definition_count: dict[int, int] = {}
        #: id(SkipInfo of one execution) -> that with what its specialization adds (the pops it
        #: discards, the stashes that share its output).
        self.refined: dict[int, SkipInfo] = {}
        #: The entry point running (one per `guarded` call), and those that did not finish.
        self.run_serial = 0
        self.aborted_runs: builtins.set[int] = builtins.set()
        #: What the module's `global` and `nonlocal` declarations rebind; None without any.
        self.rebinding = Rebinding(index) if index.declarations else None
        #: The overlays of the branches under unknown conditions running now (Statements.if_).
        self.branches: list[Env] = []

    def guarded(self, action: Callable[..., Any], kind: str = "other") -> None:
        """Run one entry point; an exhausted budget or stray control flow ends just that one.
        Each starts with nothing stashed by itself; what it may stash stays in the thread's
        default tracker for the entry points after it (all of it, when it did not finish)."""
        self.run_serial += 1
        self.entry_kind = kind
        self.tracker = set()
        try:
            action()
        except (OutOfBudget, RecursionError):
            self.aborted_runs.add(self.run_serial)
        except (Return, Break, Continue, LoopUnknown):
            self.aborted_runs.add(self.run_serial)
        if self.run_serial in self.aborted_runs or self.tracker is None:
            self.tracker_leaks = None
        elif self.tracker_leaks is not None:
            self.tracker_leaks |= self.tracker

    def note_isolate_name(self, node: cst.CSTNode, name: str, cls: str) -> None:
        """`only=` (at `node`) names `name`, which `cls` never declares."""
        if self._first(node, name):
            self.isolate_names.append(IsolateName(name, cls, Site(node, self.locator)))

    def note_unknown(self, node: cst.CSTNode, what: str) -> None:
        """`what` (at `node`) cannot be known."""
        if self._first(node, what):
            self.unknowns.append(Unknown(what, Site(node, self.locator)))

    def _first(self, node: cst.CSTNode, key: str) -> bool:
        if (id(node), key) in self.noted:
            return False
        self.noted.add((id(node), key))
        return True

    def tick(self, cost: int = 1) -> None:
        self.steps += cost
        if not self.budget.allows_steps(self.steps):
            raise OutOfBudget

    if TYPE_CHECKING:
        # statements.py
        def block(self, stmts: Sequence[cst.CSTNode], env: Env) -> None: ...
        def suite(self, suite: cst.BaseSuite, env: Env) -> None: ...
        def set(self, name: str, value: Any, env: Env) -> None: ...
        def assign(self, target: cst.BaseExpression, value: Any, env: Env,
                   node: Optional[cst.CSTNode]) -> None: ...
        def taint_block(self, node: cst.CSTNode, env: Env) -> None: ...
        def not_run(self, func: Any) -> None: ...
        # expressions.py
        def eval(self, node: cst.BaseExpression, env: Env) -> Any: ...
        def imported(self, node: cst.BaseExpression, env: Env) -> Any: ...
        def subscript_key(self, node: cst.Subscript, env: Env) -> Any: ...
        def iterate(self, value: Any, with_nodes: bool = False, spread: bool = False) -> Optional[list[Any]]: ...
        # calls.py
        def call_expr(self, node: cst.Call, env: Env) -> Any: ...
        def arguments(self, node: cst.Call, env: Env) -> tuple[Args, Kwargs, bool]: ...
        def call_function(self, func: FuncV | LambdaV, args: list[Any], kwargs: dict[str, Any],
                          entry: bool = False) -> Any: ...
        # classes.py
        def define_class(self, node: cst.ClassDef, env: Env) -> ClassV: ...
        # specialize.py
        def remember_definition(self, node: cst.ClassDef, env: Env, info: SkipInfo) -> SkipInfo: ...
        def instantiate(self, cls: ClassV, args: Args, kwargs: Kwargs, node: cst.CSTNode,
                        entry: bool = False) -> Any: ...
        # api.py
        def api_call(self, symbol: str, args: Args, kwargs: Kwargs, node: cst.Call, known: bool) -> Any: ...
        def fill_sequential(self, seq: SeqV, args: Args, kwargs: Kwargs, node: cst.CSTNode) -> None: ...
        def add_child(self, seq: SeqV, key: Optional[str], value: Any, node: Any) -> None: ...
        def isolate(self, layer: LayerV, values: list[Any], kwargs: Kwargs, node: cst.Call) -> Any: ...
        def lazy_layers(self, module: Any, node: cst.Call) -> Optional[SeqV]: ...
