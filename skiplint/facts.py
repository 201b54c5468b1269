"""What source code says about skips: a small frozen data model, separate from checks and reporters.

The static extractor (skippables.py, the interpret package) fills it from libcst trees; the runtime
companion fills the same types from live modules (with `site=None`), so the two can be compared
as plain values. Sites compare equal regardless of position, so facts from two sources diff cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

import libcst as cst

from skiplint.findings import AnalyzerBug, Finding as Finding
# Site holds a Locator; both stay importable from here for the modules that take them with the
# data model (engine, interpret.core, skippables).
from skiplint.positions import Locator as Locator, with_room as with_room

Kind = Literal["stash", "pop"]
#: Whether a tensor requires grad: certainly, when the layer's input does, not certainly.
GradKind = Literal["yes", "input", "no"]
#: Whether a stashed tensor is a view: certainly ("yes"), certainly the layer's input itself (a view
#: where that is a micro-batch: "input"), an integer index of that input (a view where it is a
#: tensor or a micro-batch: "item"), maybe ("may": cannot be known), or certainly not ("no").
ViewKind = Literal["yes", "input", "item", "may", "no"]
#: A command a forward performs: ("stash", "skip") or ("pop", "skip").
Key = tuple[Kind, str]


@dataclass(frozen=True, eq=False)
class Site:
    """Where a fact comes from in source: a node of a parsed module. Equal to every other Site."""

    node: cst.CSTNode
    locator: Locator = field(repr=False)

    @property
    def position(self) -> tuple[int, int]:
        return self.locator.position(self.node)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Site)

    def __hash__(self) -> int:
        return 0


@dataclass(frozen=True)
class Declared:
    """One name in a `stash=`/`pop=` declaration."""

    name: str
    site: Optional[Site] = None


@dataclass(frozen=True)
class Declaration:
    """The `stash=` or `pop=` argument of @skippable."""

    kind: Kind
    #: The declared names in order; None when they are computed at run time (unknown).
    names: Optional[tuple[Declared, ...]]
    #: The argument expression; None when the argument is absent.
    site: Optional[Site] = None
    #: The string itself when the argument is a bare string (SKP106).
    bare_string: Optional[str] = None

    @classmethod
    def of(cls, kind: Kind, names: Optional[frozenset[str]], site: Optional[Site] = None) -> Declaration:
        """A declaration of `names` (None: computed at run time), in sorted order."""
        return cls(kind, None if names is None else tuple(Declared(name) for name in sorted(names)), site)

    @property
    def known(self) -> bool:
        return self.names is not None

    @property
    def name_set(self) -> frozenset[str]:
        return frozenset(d.name for d in self.names or ())


@dataclass(frozen=True)
class Command:
    """A `stash(...)`/`pop(...)` call inside forward or a helper generator it delegates to."""

    kind: Kind
    #: The skip name; None when computed at run time.
    name: Optional[str]
    site: Optional[Site] = None
    #: The name argument (for SKP901), when there is one.
    name_site: Optional[Site] = None
    yielded: bool = True
    #: For a yielded pop: whether the popped tensor is used (SKP116).
    discarded: bool = False
    #: What is wrong with the arguments (SKP112), if anything.
    arity_problem: Optional[str] = None
    #: For a yielded stash: the tensor certainly shares, with what forward returns, an autograd node
    #: that saved tensors for backward (skiplint.gradflow), whatever the layer's input.
    shares_output: bool = False
    #: ... shares one only when the layer's input requires grad (`h = x * 2`, stashed and returned).
    shares_if_input_grad: bool = False
    #: ... both carry the history of the layer's input (what a layer before it in its child saved).
    shares_input_history: bool = False
    #: For a yielded pop: forward's output depends differentiably on the popped tensor (not only
    #: through `detach()`, `no_grad` or a discarded value), as far as its dataflow shows.
    grad_used: bool = True
    #: For a yielded pop: the popped tensor reaches the output only detached (`.detach()`,
    #: `torch.no_grad()`), or not at all though it is assigned: as a discarded one, no gradient
    #: flows back through it (SKP305).
    detached_only: bool = False
    #: For a yielded stash: whether its tensor is a view (skiplint.gradflow), SKP206.
    view: ViewKind = "no"
    #: For a yielded pop: the `name.detach_()` call that certainly follows it (SKP206).
    detached_in_place: Optional[Site] = None


@dataclass(frozen=True)
class NonCommandYield:
    """A `yield` in a skippable forward whose value cannot be a command (SKP108)."""

    what: str
    site: Optional[Site] = None


@dataclass(frozen=True)
class Forward:
    """The facts of a skippable class's forward, helpers reached by `yield from` included."""

    site: Optional[Site]
    commands: tuple[Command, ...]
    non_commands: tuple[NonCommandYield, ...] = ()
    #: The commands performed on each path that leaves forward normally (return or fall-through).
    #: None when paths cannot be known (computed names, an unresolved `yield from`, too many paths).
    exits: Optional[frozenset[frozenset[Key]]] = None
    #: Commands reached on some path on which the same command was already performed (SKP110).
    repeats: tuple[Command, ...] = ()
    #: The branching statement that makes each key conditional (named in SKP111's message).
    branches: tuple[tuple[Key, Site], ...] = ()
    #: Required positional parameters besides self (SKP114).
    required_inputs: int = 1
    #: Kinds whose commands cannot all be known (computed names, unresolved delegation).
    unknown_kinds: frozenset[Kind] = frozenset()
    #: The first branching statement that leaves forward early (a conditional return).
    early_exit: Optional[Site] = None
    #: Forward's output depends differentiably on its input: the autograd history of the input
    #: passes through the layer (as far as its dataflow shows).
    keeps_input: bool = False
    #: Forward's output requires grad: certainly ("yes", a parameter of its own takes part), when
    #: its input does ("input"), or not certainly ("no").
    output_grad: GradKind = "no"
    #: Forward's output certainly holds an autograd node that saved tensors, whatever its input.
    output_saves: bool = False


@dataclass(frozen=True)
class SkippableClass:
    """A class decorated with @skippable(...) (or wrapped as skippable(...)(Cls))."""

    name: str
    stash: Declaration
    pop: Declaration
    #: None when forward is not defined in the class body, or cannot be analysed.
    forward: Optional[Forward]
    site: Optional[Site] = None
    #: For one execution of a class statement (skiplint.interpret.classes): the variables that
    #: forward reads after they were rebound, each (variable, value when the class was made,
    #: value when forward runs).
    late: tuple[tuple[str, str, str], ...] = ()

    def declared(self, kind: Kind) -> Declaration:
        return self.stash if kind == "stash" else self.pop

    def names(self, kind: Kind) -> Optional[frozenset[str]]:
        """The names declared as `kind`; None when they are computed at run time."""
        declared = self.declared(kind)
        return declared.name_set if declared.known else None

    def _yielded(self, kind: Kind) -> list[tuple[str, Command]]:
        """Forward's yielded commands of `kind` whose names are known, each with its name."""
        commands = self.forward.commands if self.forward is not None else ()
        return [(c.name, c) for c in commands if c.kind == kind and c.yielded and c.name is not None]

    @property
    def output_stashes(self) -> frozenset[str]:
        """Stashed names of which some yielded stash shares autograd history with forward's output."""
        return frozenset(name for name, c in self._yielded("stash") if c.shares_output)

    @property
    def input_output_stashes(self) -> frozenset[str]:
        """... shares it only when the layer's input requires grad."""
        shares = frozenset(name for name, c in self._yielded("stash") if c.shares_if_input_grad)
        return shares - self.output_stashes

    @property
    def input_history_stashes(self) -> frozenset[str]:
        """Stashed names of which some yielded stash carries the input's history, as the output does."""
        return frozenset(name for name, c in self._yielded("stash") if c.shares_input_history)

    @property
    def inert_pops(self) -> frozenset[str]:
        """Popped names whose tensor forward's output does not certainly depend on (every pop of
        the name discarded, detached, used under no_grad or not followed)."""
        pops = self._yielded("pop")
        return frozenset(name for name, _ in pops) - frozenset(name for name, c in pops if c.grad_used)

    def stashed_view(self, name: str) -> ViewKind:
        """Whether every yielded stash of `name` is certainly a view ("yes"), a view or the input itself
        ("input"), a view or an integer index of the input ("item"), none is a view ("no", also where
        there is none), or some may be ("may")."""
        kinds = {c.view for stashed, c in self._yielded("stash") if stashed == name}
        if not kinds or kinds == {"no"}:
            return "no"
        if "may" in kinds or "no" in kinds:
            return "may"
        return "item" if "item" in kinds else "input" if "input" in kinds else "yes"

    def detaches_in_place(self, name: str) -> Optional[Site]:
        """The `.detach_()` call that certainly follows a yielded pop of `name`, if one does."""
        return next((c.detached_in_place for popped, c in self._yielded("pop")
                     if popped == name and c.detached_in_place is not None), None)

    @property
    def views(self) -> bool:
        """Whether some yielded stash is (or may be) a view or the input, or some pop is detached in place."""
        commands = (*self._yielded("stash"), *self._yielded("pop"))
        return any(c.view != "no" or c.detached_in_place is not None for _, c in commands)

    @property
    def discarded(self) -> tuple[tuple[str, Site], ...]:
        """Popped names whose tensor forward discards, with the `pop(...)` call."""
        return tuple((name, c.site) for name, c in self._yielded("pop") if c.discarded and c.site is not None)

    @property
    def detached(self) -> tuple[tuple[str, Site], ...]:
        """... assigned but used only detached (Command.detached_only)."""
        return tuple((name, c.site) for name, c in self._yielded("pop")
                     if c.detached_only and not c.discarded and c.site is not None)

    @property
    def none_stashes(self) -> tuple[tuple[str, Site], ...]:
        """Stashed names that some `stash(name, None)` stashes as None, with the call (SKP501)."""
        return tuple((name, c.site) for name, c in self._yielded("stash")
                     if c.site is not None and _stashes_none(c.site.node))

    @property
    def keeps_input(self) -> bool:
        return self.forward is not None and self.forward.keeps_input

    @property
    def output_grad(self) -> GradKind:
        return self.forward.output_grad if self.forward is not None else "no"

    @property
    def output_saves(self) -> bool:
        return self.forward is not None and self.forward.output_saves


def _stashes_none(node: cst.CSTNode) -> bool:
    """Whether a `stash(...)` call's tensor argument is the literal None."""
    if not isinstance(node, cst.Call):
        return False
    value = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "tensor"), None)
    if value is None:
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        value = positional[1].value if len(positional) > 1 else None
    return isinstance(value, cst.Name) and value.value == "None"


@dataclass(frozen=True)
class SkippableMisuse:
    """`@skippable` written without its call (`function` None), or decorating the function
    `function` rather than a class."""

    function: Optional[str]
    site: Optional[Site] = None


@dataclass(frozen=True)
class UndecoratedYield:
    """The first `yield stash(...)`/`yield pop(...)` in the forward of a class that is not
    @skippable (nor wrapped, decorated otherwise, or a base of another class of the module)."""

    cls: str
    kind: Kind
    site: Optional[Site] = None


#: What an import of the removed torch.distributed.pipeline brings in, by what replaces it: the
#: skip API, the Pipe class, PipeSequential, device placement, or the package as a whole.
Brought = Literal["skip", "Pipe", "PipeSequential", "placement", "package"]


@dataclass(frozen=True)
class RemovedImport:
    """An import (outside a guard that catches ImportError) of the removed torch.distributed.pipeline."""

    module: str
    brings: tuple[Brought, ...]
    site: Optional[Site] = None


@dataclass(frozen=True)
class IsolateName:
    """A name that `.isolate(ns, only=[...])` gives, which the layer's class `cls` never declares."""

    name: str
    cls: str
    site: Optional[Site] = None


@dataclass(frozen=True)
class Unknown:
    """Something a check needs that cannot be known statically (computed at run time): `what` it
    is, for people, at the expression that computes it."""

    what: str
    site: Optional[Site] = None


@dataclass(frozen=True)
class ModuleFacts:
    """Everything one module says about skips."""

    path: str
    skippables: tuple[SkippableClass, ...] = ()
    #: Findings made downstream of extraction and carried with the module (those of its
    #: compositions and pipes, an analyzer failure): extraction itself makes none.
    findings: tuple[Finding, ...] = ()
    #: Commands built as whole statements outside any skippable forward (never yielded).
    loose_commands: tuple[Command, ...] = ()
    misuses: tuple[SkippableMisuse, ...] = ()
    undecorated_yields: tuple[UndecoratedYield, ...] = ()
    removed_imports: tuple[RemovedImport, ...] = ()
    #: `Cls(...).isolate(ns, only=[...])` of a class the module declares, naming a skip it never declares.
    isolate_names: tuple[IsolateName, ...] = ()
    #: The analyzer's failure on the module's compositions (its SKP902 finding is among `findings`), or None.
    bug: Optional[AnalyzerBug] = None


# -- compositions and pipes (SKP2xx, SKP3xx, `skiplint layout`) ----------------------------------

#: A namespaced skip: (namespace, name). The namespace is None for the default one, else a number
#: that identifies one `Namespace()` result within the module's analysis.
SkipKey = tuple[Optional[int], str]
LayerKind = Literal["skippable", "plain", "container", "unknown"]


@dataclass(frozen=True)
class Layer:
    """A direct child of a composition, as verify_skippables and inspect_skip_layout see it."""

    index: int
    #: Its name in named_children(): "0", "1", ... or the OrderedDict / add_module key.
    key: str
    #: What it is, for people: the class name, or the source text when that is all there is.
    label: str
    #: skippable: declarations known; plain: no skips; container: a Sequential or module whose own
    #: children may hold skippables (invisible to verify_skippables); unknown: cannot be known.
    kind: LayerKind
    stash: tuple[SkipKey, ...] = ()
    pop: tuple[SkipKey, ...] = ()
    #: Names declared both as stashable and poppable (SKP105; verify_skippables skips them).
    both: tuple[str, ...] = ()
    site: Optional[Site] = None
    #: For a container: the skippable layers nested in it (kind "unknown" where a nested child
    #: cannot be known), invisible to verify_skippables (SKP205).
    nested: tuple["Layer", ...] = ()
    #: Declared names whose namespace cannot be known (`.isolate(ns, only=[<unknown>])`): no
    #: finding or route is given for these names, the other names are still checked.
    unknown_names: tuple[str, ...] = ()
    #: For a nested layer: only torch.nn layers that keep autograd history follow it in its
    #: containers, so the direct child's output carries its own (balance_by_time profiles direct
    #: children).
    feeds_output: bool = False
    #: For a plain layer: `requires_grad_(...)` was called on it, not certainly with True (its
    #: parameters may not require grad).
    frozen: bool = False
    #: For a skippable layer whose names are known: its class, as the execution of its class
    #: statement that made the layer (one record of what it does: SKP303, SKP305, SKP501 read it).
    cls: Optional[SkippableClass] = field(default=None, repr=False)
    #: For a nested layer: its input certainly holds a node that saved tensors, made before it in
    #: its direct child (a stash that carries its input's history then shares it with the child's output).
    input_saves: bool = False

    def shares_output(self, input_grad: bool = False) -> frozenset[str]:
        """The names the layer declares as stashed whose tensor shares an autograd node with its
        output (SkippableClass.output_stashes); with `input_grad`, also those that share one only
        when its input requires grad; where `input_saves`, also those that carry its input's history
        (SkippableClass.input_history_stashes)."""
        if self.cls is None:
            return frozenset()
        shares = self.cls.output_stashes | (self.cls.input_output_stashes if input_grad else frozenset())
        if self.input_saves:
            shares |= self.cls.input_history_stashes
        return shares & (self.cls.names("stash") or frozenset())


@dataclass(frozen=True)
class Composition:
    """An nn.Sequential (or subclass) and its children, in order."""

    name: str
    layers: tuple[Layer, ...]
    #: False when the children past the last listed layer cannot be known (their count included).
    complete: bool
    site: Optional[Site] = None
    #: Whether it is given to a pipe in the same module (verify_skippables surely runs on it).
    piped: bool = False
    #: Namespace number -> how the source refers to it (`ns`, `namespaces[2]`).
    namespaces: tuple[tuple[int, str], ...] = ()
    #: Why the composition (or its tail) cannot be known, for `skiplint layout`.
    unknown: Optional[str] = None
    #: Module-level functions that return it, alone or first in a (model, sample) pair: the
    #: names `skiplint verify FILE:NAME` would build it by (`skiplint layout FILE:NAME` takes them).
    factories: tuple[str, ...] = ()


PipeKind = Literal["GPipe", "FairscalePipe", "TorchPipe", "MultiProcessPipe", "AsyncPipe",
                   "balance_by_time", "balance_by_size", "LazyModule", "exported"]


@dataclass(frozen=True)
class Pipe:
    """A call that hands a composition to pipeline machinery: a pipe, a balancer, a LazyModule."""

    kind: PipeKind
    name: str
    composition: Optional[Composition]
    #: Layers per partition, when given literally (None: absent or computed).
    balance: Optional[tuple[int, ...]] = None
    site: Optional[Site] = None
    #: For GPipe and fairscale's Pipe: `chunks=` and `checkpoint=` (their defaults when not given;
    #: None when computed).
    chunks: Optional[int] = None
    checkpoint: Optional[str] = None
    #: For a balancer: the sample it profiles with certainly requires grad.
    sample_requires_grad: bool = False


@dataclass(frozen=True)
class SkipRoute:
    """Where one skip is stashed and popped: the static inspect_skip_layout."""

    ns: Optional[int]
    name: str
    stash_layer: Optional[int]
    pop_layer: Optional[int]
    stash_partition: Optional[int] = None
    pop_partition: Optional[int] = None


@dataclass(frozen=True)
class ModelFacts:
    """The compositions and pipes one module builds."""

    path: str
    compositions: tuple[Composition, ...] = ()
    pipes: tuple[Pipe, ...] = ()
    #: Skippable classes as each execution of their class statement made them (a factory's
    #: arguments, a loop's variable): they replace the facts of those class statements.
    specialized: tuple[SkippableClass, ...] = ()
    #: `.isolate(ns, only=[...])` naming a skip its class never declares, in the layers the module
    #: builds (each not already among the module's own `isolate_names`).
    isolate_names: tuple[IsolateName, ...] = ()
    #: A namespace or `only=` names given to `.isolate(...)` that cannot be known.
    unknowns: tuple[Unknown, ...] = ()
