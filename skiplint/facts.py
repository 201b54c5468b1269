"""What source code says about skips: a small frozen data model, separate from checks and reporters.

The static extractor (skippables.py, compositions.py) fills it from libcst trees; the runtime
companion fills the same types from live modules (with `site=None`), so the two can be compared
as plain values. Sites compare equal regardless of position, so facts from two sources diff cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import sys
import threading
from typing import Callable, Literal, Optional, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

Kind = Literal["stash", "pop"]
T = TypeVar("T")


def with_deep_stack(func: Callable[[], T], depth: int = 50_000, stack_mb: int = 512) -> T:
    """Run `func` in a thread with a large stack and recursion limit (libcst's code generator
    recurses once per nesting level). Still raises RecursionError past `depth`."""
    result: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            result.append(func())
        except BaseException as error:  # re-raised in the caller's thread
            errors.append(error)

    old_limit, old_size = sys.getrecursionlimit(), threading.stack_size()
    try:
        threading.stack_size(stack_mb * 1024 * 1024)
        sys.setrecursionlimit(max(old_limit, depth))
        worker = threading.Thread(target=target, name="skiplint-deep-stack")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(old_size)
        sys.setrecursionlimit(old_limit)
    if errors:
        raise errors[0]
    return result[0]
#: A command a forward performs: ("stash", "skip") or ("pop", "skip").
Key = tuple[Kind, str]


class Locator:
    """Positions of a module's nodes, computed once, on first need (only when something is reported)."""

    __slots__ = ("_module", "_positions")

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._positions: Optional[object] = None

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        """(1-based line, 0-based column) of the node's first token."""
        if self._positions is None:
            def resolve() -> object:
                return MetadataWrapper(self._module, unsafe_skip_copy=True).resolve(PositionProvider)
            try:
                self._positions = resolve()
            except RecursionError:  # a long expression: retry with room to recurse
                self._positions = with_deep_stack(resolve)
        start = self._positions[node].start  # type: ignore[index]
        return start.line, start.column


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


@dataclass(frozen=True)
class SkippableClass:
    """A class decorated with @skippable(...) (or wrapped as skippable(...)(Cls))."""

    name: str
    stash: Declaration
    pop: Declaration
    #: None when forward is not defined in the class body, or cannot be analysed.
    forward: Optional[Forward]
    site: Optional[Site] = None

    def declared(self, kind: Kind) -> Declaration:
        return self.stash if kind == "stash" else self.pop


@dataclass(frozen=True)
class Finding:
    """A fact that is itself a finding, outside any one skippable class's declarations."""

    code: str
    args: tuple[tuple[str, str], ...]
    site: Optional[Site] = None


@dataclass(frozen=True)
class ModuleFacts:
    """Everything one module says about skips."""

    path: str
    skippables: tuple[SkippableClass, ...] = ()
    #: SKP107 outside skippable forwards, SKP109, SKP113, SKP115, SKP401.
    findings: tuple[Finding, ...] = ()


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
