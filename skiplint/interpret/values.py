"""The abstract values the interpreter computes, and what the skip API's constants are.

A value is a Python constant (int, str, bool, None, a range), one of the kinds below, or UNKNOWN.
Containers that may have changed in a way that cannot be followed are marked `tainted`; a
Sequential past an unknown child is `complete=False` with the reason in `unknown`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import libcst as cst

from skiplint.facts import GradKind, LayerKind, Site, SkippableClass
from skiplint.limits import BUDGET

if TYPE_CHECKING:
    from skiplint.interpret.env import Env

#: Pipe classes: the first argument is the module, the second (but for torch's) the balance.
PIPES = ("GPipe", "FairscalePipe", "TorchPipe", "MultiProcessPipe", "AsyncPipe")
#: Calls that run verify_skippables on the module they are given (SKP202 needs one to fail).
VERIFIERS = ("GPipe", "FairscalePipe", "TorchPipe", "MultiProcessPipe")
#: Methods that change the container they are called on.
MUTATORS = frozenset({"append", "extend", "insert", "add_module", "isolate", "update", "pop",
                      "remove", "clear", "setdefault", "__setitem__", "register_module", "reverse",
                      "sort", "popitem"})
#: nn.Module methods that return the module itself.
MODULE_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "double", "half",
                            "requires_grad_", "share_memory", "type", "bfloat16"})


class Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = Unknown()


@dataclass(frozen=True)
class SkipInfo:
    """What a skippable class declares; None: computed at run time."""

    name: str
    stash: Optional[frozenset[str]]
    pop: Optional[frozenset[str]]
    #: Popped names whose tensor forward discards, with the `pop(...)` call.
    discarded: tuple[tuple[str, Site], ...] = ()
    #: ... assigned but used only detached (Command.detached_only).
    detached: tuple[tuple[str, Site], ...] = ()
    #: Stashed names of which some stash shares autograd history with forward's output; ... when
    #: the layer's input requires grad; popped names forward's output does not depend on.
    output_stashes: frozenset[str] = frozenset()
    input_output_stashes: frozenset[str] = frozenset()
    inert_pops: frozenset[str] = frozenset()
    #: Stashed names that some `stash(name, None)` stashes as None, with the call (SKP501).
    none_stashes: tuple[tuple[str, Site], ...] = ()
    #: Its output carries its input's autograd history (`facts.Forward.keeps_input`), and
    #: requires grad (`facts.Forward.output_grad`).
    keeps_input: bool = False
    output_grad: GradKind = "no"
    #: `facts.SkippableClass.input_history_stashes`, `facts.Forward.output_saves`.
    input_history_stashes: frozenset[str] = frozenset()
    output_saves: bool = False


@dataclass(eq=False)
class NS:
    serial: int
    origin: Optional[str] = None
    node: Optional[cst.CSTNode] = None


@dataclass(eq=False)
class LayerV:
    kind: LayerKind
    label: str
    info: Optional[SkipInfo] = None
    namespaces: dict[str, NS] = field(default_factory=dict)
    tainted: bool = False
    #: `.isolate(ns, only=...)` with names that cannot be known: which skips it isolates is unknown.
    unsure: bool = False
    #: For `LazyModule(fn)`: what `fn()` builds (a layer, or UNKNOWN).
    lazy: Any = None
    #: Handed on: an argument, an element of a container, an attribute, a return value. Such an
    #: instance may run inside a model, so its direct calls are not judged alone.
    placed: bool = False
    #: `requires_grad_(...)` was called on it, not certainly with True: its parameters may not
    #: require grad.
    frozen: bool = False


@dataclass(eq=False)
class SeqV:
    """An nn.Sequential (or subclass) instance; also a layer when nested."""

    label: str
    node: cst.CSTNode
    children: list[tuple[str, Any, Optional[cst.CSTNode]]] = field(default_factory=list)
    complete: bool = True
    unknown: Optional[str] = None
    name: Optional[str] = None
    nested_in: bool = False
    piped: bool = False
    tainted: bool = False
    #: Given to verify_skippables (or a pipe that calls it): a stash never popped fails.
    verified: bool = False
    #: An element of the partition list given to inspect_skip_layout: a fragment, not a model.
    partition: bool = False
    #: Its children were spread into another list or module (`*seq`, `list(seq)`): a part.
    part: bool = False
    #: Leaves the module: returned by a builder nobody here calls, or bound at module level.
    #: Its pipe may be in another file, so it counts as verified for SKP202.
    escapes: bool = False
    #: Module-level functions that return it, alone or first in a (model, sample) pair.
    factories: list[str] = field(default_factory=list)

    def add(self, key: Optional[str], value: Any, node: Optional[cst.CSTNode]) -> None:
        if not self.complete:
            return
        if not BUDGET.allows_layers(len(self.children) + 1):
            self.stop(f"more than {BUDGET.layers} layers")
        elif value is UNKNOWN or isinstance(value, (LayerV, SeqV)):
            self.children.append((key if key is not None else str(len(self.children)), value, node))
        else:
            self.stop("a child that is not a module")

    def stop(self, why: str) -> None:
        if self.complete:
            self.complete = False
            self.unknown = why


@dataclass(eq=False)
class ListV:
    items: list[tuple[Any, Optional[cst.CSTNode]]]
    is_tuple: bool = False
    tainted: bool = False
    origin: Optional[str] = None


@dataclass(eq=False)
class DictV:
    items: dict[Any, tuple[Any, Optional[cst.CSTNode]]]
    ordered: bool = False
    tainted: bool = False


@dataclass(eq=False)
class FuncV:
    node: cst.FunctionDef
    env: "Env"
    self_value: Any = None


@dataclass(eq=False)
class LambdaV:
    node: cst.Lambda
    env: "Env"


@dataclass(eq=False)
class ClassV:
    name: str
    kind: str  # "skippable" | "sequential" | "plain" | "unknown"
    info: Optional[SkipInfo] = None
    node: Optional[cst.ClassDef] = None
    env: Optional["Env"] = None
    #: For a plain module class: whether its own code builds skippable layers that would be nested
    #: in it: "no", "skippable" (known skippable classes), or "unknown" (classes that cannot be known).
    nests: str = "no"


@dataclass(eq=False)
class ObjV:
    """An instance of a plain class whose methods are being run (`self`)."""

    cls: ClassV
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiV:
    symbol: str


@dataclass(frozen=True)
class BuiltinV:
    name: str


@dataclass(frozen=True)
class ExternalV:
    """Something imported from outside the project: `torch.nn.Conv2d`, `timm`, ..."""

    qualified: str


@dataclass(eq=False)
class BoundV:
    obj: Any
    attr: str


@dataclass(eq=False)
class PipeV:
    record: "PipeRecord"


#: A skip as a tracker holds it: (the serial of its namespace, None for the default one; its name).
TrackedSkip = tuple[Optional[int], str]


def skip_keys(layer: LayerV, names: frozenset[str]) -> frozenset[TrackedSkip]:
    """The skips of `names` as `layer` stashes or pops them (its namespaces applied)."""
    return frozenset((layer.namespaces[name].serial if name in layer.namespaces else None, name) for name in names)


@dataclass(frozen=True)
class DirectCall:
    """A skippable layer called directly (`layer(x)`, `Pop()(x)`)."""

    layer: LayerV
    #: The callee expression: where a pop with nothing stashed before it is reported.
    node: cst.BaseExpression
    #: Names the entry point it ran in may have stashed before it into the tracker it uses; None:
    #: any name (an unknown call ran before it, or another tracker may be installed).
    before: Optional[frozenset[TrackedSkip]]
    #: The kind of that entry point (Core.entry_kind).
    entry: str


@dataclass(eq=False)
class PipeRecord:
    kind: str
    node: cst.Call
    module: Any
    balance: Optional[tuple[int, ...]]
    name: Optional[str] = None
    chunks: Optional[int] = None
    checkpoint: Optional[str] = None
    #: For a balancer: the sample certainly requires grad (`requires_grad=True`, `.requires_grad_()`).
    sample_grad: bool = False


#: A name one branch of an `if` did not bind.
MISSING = object()
#: `*items` in a call whose items cannot be known.
STAR_UNKNOWN = object()


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def comparable(value: Any) -> bool:
    return isinstance(value, (int, str)) or value is None


def hashable_constant(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def place(value: Any) -> None:
    """A layer handed on to something else (see LayerV.placed)."""
    if isinstance(value, LayerV):
        value.placed = True


def taint(value: Any) -> None:
    """A value that something unknown may have changed can no longer be followed."""
    if isinstance(value, (ListV, DictV, LayerV, SeqV)):
        value.tainted = True
    elif isinstance(value, ObjV):
        for attr in value.attrs.values():
            taint(attr)


def class_functions(node: cst.ClassDef) -> list[cst.FunctionDef]:
    if not isinstance(node.body, cst.IndentedBlock):
        return []
    return [item for item in node.body.body if isinstance(item, cst.FunctionDef)]


def class_method(cls: ClassV, name: str) -> Optional[cst.FunctionDef]:
    if cls.node is None:
        return None
    for item in class_functions(cls.node):
        if item.name.value == name:
            return item
    return None


CODE_MODULE = cst.Module(body=())


def code(node: Any) -> str:
    """A short one-line text of a node, for messages."""
    if node is None:
        return "?"
    try:
        text: str = CODE_MODULE.code_for_node(node)
    except RecursionError:  # nested too deeply to print: name it by its type
        return type(node).__name__
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= 40 else text[:37] + "..."


def skip_info(cls: SkippableClass) -> SkipInfo:
    """What the extracted facts of a skippable class declare."""
    stash = cls.stash.name_set if cls.stash.known else None
    pop = cls.pop.name_set if cls.pop.known else None
    discarded = tuple((c.name, c.site) for c in (cls.forward.commands if cls.forward is not None else ())
                      if c.kind == "pop" and c.yielded and c.discarded and c.name is not None
                      and c.site is not None)
    detached = tuple((c.name, c.site) for c in (cls.forward.commands if cls.forward is not None else ())
                     if c.kind == "pop" and c.yielded and c.detached_only and not c.discarded and c.name is not None
                     and c.site is not None)
    none_stashes = tuple((c.name, c.site) for c in (cls.forward.commands if cls.forward is not None else ())
                         if c.kind == "stash" and c.yielded and c.name is not None and c.site is not None
                         and _stashes_none(c.site.node))
    return SkipInfo(cls.name, stash, pop, discarded, detached, cls.output_stashes, cls.input_output_stashes,
                    cls.inert_pops, none_stashes, cls.forward is not None and cls.forward.keeps_input,
                    cls.forward.output_grad if cls.forward is not None else "no", cls.input_history_stashes,
                    cls.forward is not None and cls.forward.output_saves)


def _stashes_none(node: cst.CSTNode) -> bool:
    """Whether a `stash(...)` call's tensor argument is the literal None."""
    if not isinstance(node, cst.Call):
        return False
    value = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "tensor"), None)
    if value is None:
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        value = positional[1].value if len(positional) > 1 else None
    return isinstance(value, cst.Name) and value.value == "None"

