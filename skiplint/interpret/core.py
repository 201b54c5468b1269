"""The interpreter's shared state: scopes of the running code (one Env per frame, overlays for
branches) and the signals that unwind it; what a run keeps (what it built, its entry points and
their skip tracker, the class statements it specializes); and Core, which every part (statements,
expressions, calls, classes, the skip API) extends, with the signatures by which they call one
another."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import libcst as cst

from skiplint.facts import IsolateName, Locator, ModuleFacts, Site, SkippableClass, Unknown
from skiplint.imports import Scope
from skiplint.interpret.rebinding import Rebinding
from skiplint.interpret.values import ClassV, DirectCall, FuncV, LambdaV, LayerV, PipeRecord, SeqV, TrackedSkip
from skiplint.limits import Budget
from skiplint.skippables import ModuleIndex, computed


class Return(Exception):
    """`return` (or `raise`: an unknown result) leaves the running function."""

    def __init__(self, value: Any) -> None:
        self.value = value


class Break(Exception):
    """`break` leaves the innermost loop."""


class Continue(Exception):
    """`continue` starts the next iteration."""


class OutOfBudget(Exception):
    """The module's step budget is spent: the rest of its code is unknown."""


class LoopUnknown(Exception):
    """Control flow of a loop (break/continue/return under an unknown condition) cannot be known."""


class Env:
    """Variables of one running frame; a fork overlay writes locally and reads through."""

    __slots__ = ("vars", "parent", "scope", "func", "overlay", "branching")

    def __init__(self, parent: Optional[Env], scope: Scope, func: Optional[cst.FunctionDef] = None,
                 overlay: bool = False) -> None:
        self.vars: dict[str, Any] = {}
        self.parent = parent
        self.scope = scope
        self.func = func
        self.overlay = overlay
        #: How many branches under unknown conditions were running when this frame began
        #: (len(Core.branches)): a later write from a nested function under more is not certain.
        self.branching = 0

    def find(self, name: str) -> tuple[bool, Any]:
        env: Optional[Env] = self
        while env is not None:
            if name in env.vars:
                return True, env.vars[name]
            env = env.parent
        return False, None

    def frame(self) -> Env:
        """The function (or module) frame this env belongs to: where assignments go."""
        env = self
        while env.overlay and env.parent is not None:
            env = env.parent
        return env


@dataclass
class Built:
    """What the run built: the Sequentials and pipe calls, the skippable layers called directly,
    and what `.isolate(...)` calls name wrongly or leave unknown."""

    sequences: list[SeqV] = field(default_factory=list)
    pipes: list[PipeRecord] = field(default_factory=list)
    #: Creation nodes of Sequentials used as inspect_skip_layout partitions (in any run).
    partition_nodes: set[int] = field(default_factory=set)
    #: Skippable layers called directly (`layer(x)`), in the order they ran.
    direct_calls: list[DirectCall] = field(default_factory=list)
    #: At `.isolate(...)` calls, each (call argument, name) once (`noted`): the names a class never
    #: declares, and what cannot be known.
    isolate_names: list[IsolateName] = field(default_factory=list)
    unknowns: list[Unknown] = field(default_factory=list)
    noted: set[tuple[int, str]] = field(default_factory=set)


@dataclass
class Entries:
    """The entry points (the module's code, then each function nobody calls) and the thread's
    default skip tracker that their direct calls share."""

    #: The entry point running (one per `Core.guarded` call), its kind ("module", "test" (a
    #: pytest test function), "other"), and the entry points that did not finish.
    serial: int = 0
    kind: str = "module"
    aborted: set[int] = field(default_factory=set)
    #: The skips that the running entry point may have stashed so far into the tracker its direct
    #: calls use (the thread's default one, unless a fixture gives each test its own); None: any.
    tracker: Optional[set[TrackedSkip]] = field(default_factory=set)
    #: The skips that some entry point may leave in the thread's default tracker, where an entry
    #: point run after it finds them; None: any.
    leaks: Optional[set[TrackedSkip]] = field(default_factory=set)
    #: Inside a `with` that may install another skip tracker (`use_skip_tracker(...)`, a context
    #: manager of the project): what a direct pop finds there cannot be known.
    other_tracker: int = 0
    #: An autouse fixture of the module runs each test inside `use_skip_tracker(...)` with a
    #: tracker of its own, so a test starts with an empty tracker whatever ran before it.
    fresh_test_trackers: bool = False

    def start(self, kind: str) -> None:
        """A new entry point: nothing stashed by itself yet."""
        self.serial += 1
        self.kind = kind
        self.tracker = set()

    def end(self) -> None:
        """What it may have stashed stays in the thread's default tracker for the entry points
        after it (anything, when it did not finish)."""
        if self.serial in self.aborted or self.tracker is None:
            self.leaks = None
        elif self.leaks is not None:
            self.leaks |= self.tracker


@dataclass
class Specializing:
    """Skippable classes whose names their code alone cannot tell (`open_classes`, by class
    statement), and each execution of their class statements (skiplint.interpret.classes)."""

    open_classes: set[int] = field(default_factory=set)
    definitions: list[Definition] = field(default_factory=list)
    #: How often each class statement ran.
    count: dict[int, int] = field(default_factory=dict)
    #: id(the class of one execution) -> that class with the forward its specialization made.
    refined: dict[int, SkippableClass] = field(default_factory=dict)


#: (qualified name of a class of another project module) -> its ClassV, or None.
ClassResolver = Callable[[str], Optional[ClassV]]
#: Positional arguments of a call: (value, node) each; keywords: name -> (value, node).
Args = list[tuple[Any, Any]]
Kwargs = dict[str, Any]


@dataclass(eq=False)
class Definition:
    """One execution of a class statement (remembered by skiplint.interpret.classes)."""

    node: cst.ClassDef
    #: Where it ran: read again for the values forward sees when it runs.
    env: Env
    #: Each frame's variables when it ran, innermost first.
    then: list[dict[str, Any]]
    #: The class attributes its body bound (names read as `self.<name>`).
    attrs: dict[str, Any]
    #: The entry point of the run it belongs to (Entries.serial).
    run: int
    #: What the class made declares, as the compositions that hold its layers see it.
    info: SkippableClass


class Core:
    """State of one module's run: what has been built, and how much of the budget is spent."""

    def __init__(self, index: ModuleIndex, facts: ModuleFacts, locator: Locator, budget: Budget,
                 resolve_class: Optional[ClassResolver] = None) -> None:
        self.index = index
        self.locator = locator
        self.budget = budget
        self.resolve_class = resolve_class
        self.skippable_of = {id(cls.site.node): cls for cls in facts.skippables if cls.site is not None}
        self.steps = 0
        self.depth = 0
        self.ns_serial = 0
        #: Functions that some code of the module called (the others run on their own).
        self.ran: set[int] = set()
        self.module_env = Env(None, index.scope)
        #: Module-level functions whose result a harness gives to a pipe (`skiplint verify FILE:build`).
        self.verified_functions: frozenset[str] = frozenset()
        #: Module-level functions by node: what they return can be named after them, as
        #: `skiplint verify FILE:NAME` names a factory (`skiplint layout FILE:NAME`).
        self.top_functions: dict[int, str] = {id(stmt): stmt.name.value for stmt in index.module.body
                                               if isinstance(stmt, cst.FunctionDef)}
        #: The module's own pass found the names of `Cls(...).isolate(...)` of a class it knows.
        self.built = Built(noted={(id(found.site.node), found.name) for found in facts.isolate_names
                                  if found.site is not None})
        self.entries = Entries()
        self.specializing = Specializing(open_classes={
            id(cls.site.node) for cls in facts.skippables if cls.site is not None and computed(cls)})
        #: What the module's `global` and `nonlocal` declarations rebind; None without any.
        self.rebinding = Rebinding(index) if index.declarations else None
        #: The overlays of the branches under unknown conditions running now (Statements.if_).
        self.branches: list[Env] = []

    def guarded(self, action: Callable[..., Any], kind: str = "other") -> None:
        """Run one entry point; an exhausted budget or stray control flow ends just that one.
        Each starts with nothing stashed by itself; what it may stash stays in the thread's
        default tracker for the entry points after it (all of it, when it did not finish)."""
        self.entries.start(kind)
        try:
            action()
        except (OutOfBudget, RecursionError, Return, Break, Continue, LoopUnknown):
            self.entries.aborted.add(self.entries.serial)
        self.entries.end()

    def note_isolate_name(self, node: cst.CSTNode, name: str, cls: str) -> None:
        """`only=` (at `node`) names `name`, which `cls` never declares."""
        if self._first(node, name):
            self.built.isolate_names.append(IsolateName(name, cls, Site(node, self.locator)))

    def note_unknown(self, node: cst.CSTNode, what: str) -> None:
        """`what` (at `node`) cannot be known."""
        if self._first(node, what):
            self.built.unknowns.append(Unknown(what, Site(node, self.locator)))

    def _first(self, node: cst.CSTNode, key: str) -> bool:
        if (id(node), key) in self.built.noted:
            return False
        self.built.noted.add((id(node), key))
        return True

    def tick(self, cost: int = 1) -> None:
        self.steps += cost
        if not self.budget.allows_steps(self.steps):
            raise OutOfBudget

    if TYPE_CHECKING:
        # statements.py
        def block(self, stmts: Sequence[cst.CSTNode], env: Env) -> None: ...
        def set(self, name: str, value: Any, env: Env) -> None: ...
        def assign(self, target: cst.BaseExpression, value: Any, env: Env,
                   node: Optional[cst.CSTNode]) -> None: ...
        def taint_targets(self, targets: Sequence[cst.BaseExpression], env: Env) -> None: ...
        def taint_block(self, node: cst.CSTNode, env: Env) -> None: ...
        def not_run(self, func: Any) -> None: ...
        # expressions.py
        def eval(self, node: cst.BaseExpression, env: Env) -> Any: ...
        def imported(self, node: cst.BaseExpression, env: Env) -> Any: ...
        def subscript_key(self, node: cst.Subscript, env: Env) -> Any: ...
        def iterate(self, value: Any, with_nodes: bool = False, spread: bool = False) -> Optional[list[Any]]: ...
        # calls.py
        def call_expr(self, node: cst.Call, env: Env) -> Any: ...
        def call_function(self, func: FuncV | LambdaV, args: list[Any], kwargs: dict[str, Any],
                          entry: bool = False) -> Any: ...
        # classes.py
        def define_class(self, node: cst.ClassDef, env: Env) -> ClassV: ...
        def instantiate(self, cls: ClassV, args: Args, kwargs: Kwargs, node: cst.CSTNode,
                        entry: bool = False) -> Any: ...
        # api.py
        def api_call(self, symbol: str, args: Args, kwargs: Kwargs, node: cst.Call, known: bool) -> Any: ...
        def fill_sequential(self, seq: SeqV, args: Args, kwargs: Kwargs, node: cst.CSTNode) -> None: ...
        def add_child(self, seq: SeqV, key: Optional[str], value: Any, node: Any) -> None: ...
        def isolate(self, layer: LayerV, values: list[Any], kwargs: Kwargs, node: cst.Call) -> Any: ...
        def lazy_layers(self, module: Any, node: cst.Call) -> Optional[SeqV]: ...
