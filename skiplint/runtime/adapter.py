"""The stage adapter: a skippable `nn.Sequential` cut at a balance into stages for
torch.distributed.pipelining that talk to their neighbours only.

Each stage holds the user's own child modules (the same objects, parameters and names, so its
`state_dict()` keys and parameter names are the model's) and returns its output followed by every
skip still in flight across its outgoing boundary; the next stage takes them after its input. A
skip stashed in stage 0 and popped in stage 3 is therefore carried by stages 1 and 2, and a stash
of the pipeline's own input leaves stage 0 like any other skip. Every schedule works on such
stages (GPipe, 1F1B, interleaved), since no value skips a neighbour.

Which skips cross which boundary is read from the model's structure, the way the libraries'
`inspect_skip_layout` reads it: each top-level child that is a `Skippable` declares the
(namespace, name) keys it stashes and pops (`stashable()`, `poppable()`, public methods of the
skippable classes of torchgpipe, fairscale and torch's old `pipeline.sync`). Inside a stage the
children run through their own `forward`, with a skip tracker of this module's own installed by
the library's `use_skip_tracker`, so the library's checks and messages are its own.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import torch
from torch import nn

#: The suffix of the module that defines each library's `Skippable` class, and the module beside it
#: that installs a skip tracker on the running thread.
_SKIPPABLE_MODULE, _TRACKER_MODULE = ".skip.skippable", ".skip.tracker"


class NoPlan(ValueError):
    """The model's structure has no stage plan at this balance; str() says why in one line."""


@dataclass(frozen=True)
class Skip:
    """One skip route: the layer that stashes it, the one that pops it, and their stages."""

    name: str
    stash_layer: int
    stash_stage: int
    #: None when no later layer pops it (it then ends with its stage, as in the libraries' pipes).
    pop_layer: Optional[int]
    pop_stage: Optional[int]
    #: The library's Namespace object (or None): the key is (namespace, name).
    namespace: Any = field(default=None, compare=False)

    @property
    def key(self) -> tuple[Any, str]:
        return (self.namespace, self.name)

    def crosses(self, boundary: int) -> bool:
        """Whether the skip is in flight across the boundary after stage `boundary`."""
        return self.pop_stage is not None and self.stash_stage <= boundary < self.pop_stage


@dataclass(frozen=True)
class Plan:
    """The stages of a model at a balance and the skips each boundary carries."""

    balance: tuple[int, ...]
    #: Every skip route, ordered by the layer that stashes it, then its name: the order in which a
    #: boundary carries them (the same in every process that builds the plan from the same model).
    skips: tuple[Skip, ...]

    @property
    def stages(self) -> int:
        return len(self.balance)

    def carried(self, boundary: int) -> tuple[Skip, ...]:
        """The skips in flight across the boundary after stage `boundary` (none before the first
        stage or after the last), in carrying order."""
        return tuple(s for s in self.skips if s.crosses(boundary))


def _library_root(cls: type) -> Optional[str]:
    """The package of the library whose `@skippable` class `cls` is (by its base's module), or None."""
    for base in cls.__mro__:
        module = getattr(base, "__module__", "") or ""
        if base.__name__ == "Skippable" and module.endswith(_SKIPPABLE_MODULE):
            return module[:-len(_SKIPPABLE_MODULE)]
    return None


def plan(model: nn.Sequential, balance: tuple[int, ...]) -> Plan:
    """The stage plan of `model` at `balance`; NoPlan when the structure has none (a balance that
    does not cover the layers, a pop with no stash before it)."""
    children = [name for name, _ in model.named_children()]
    if not balance or any(size < 1 for size in balance):
        raise NoPlan(f"balance {list(balance)}: every stage needs at least one layer")
    if sum(balance) != len(children):
        raise NoPlan(f"balance {list(balance)} sums to {sum(balance)} but the model has {len(children)} layers")
    stage_of = [stage for stage, size in enumerate(balance) for _ in range(size)]
    open_: dict[tuple[Any, str], int] = {}
    routes: list[Skip] = []
    for index, child in enumerate(model.children()):
        if _library_root(type(child)) is None:
            continue
        layer: Any = child
        # The library's forward loads every pop before it runs and saves every stash after.
        for ns, name in sorted(layer.poppable(), key=lambda key: key[1]):
            if (ns, name) not in open_:
                raise NoPlan(f"layer '{children[index]}' ({type(layer).__name__}) pops '{name}' "
                             "but no earlier layer stashes it")
            src = open_.pop((ns, name))
            routes.append(Skip(name, src, stage_of[src], index, stage_of[index], ns))
        for ns, name in sorted(layer.stashable(), key=lambda key: key[1]):
            if (ns, name) in open_:  # stashed again before its pop: the later value is the one popped
                src = open_[(ns, name)]
                routes.append(Skip(name, src, stage_of[src], None, None, ns))
            open_[(ns, name)] = index
    for (ns, name), src in open_.items():
        routes.append(Skip(name, src, stage_of[src], None, None, ns))
    routes.sort(key=lambda s: (s.stash_layer, s.name, s.pop_layer if s.pop_layer is not None else -1))
    return Plan(tuple(balance), tuple(routes))


class _Tracker:
    """The skip tracker a stage installs: skips by (namespace, name), the incoming ones preloaded.
    It speaks the protocol the libraries' `Skippable.forward` calls (save, load, copy, and
    fairscale's `index`, the micro-batch number a plain tracker gives: 0)."""

    index = 0

    def __init__(self, incoming: dict[tuple[Any, str], Any]) -> None:
        self.tensors = dict(incoming)

    def save(self, batch: Any, ns: Any, name: str, tensor: Any) -> None:
        self.tensors[(ns, name)] = tensor

    def load(self, batch: Any, ns: Any, name: str) -> Any:
        return self.tensors.pop((ns, name))

    def copy(self, batch: Any, prev_stream: Any, next_stream: Any, ns: Any, name: str) -> None:
        raise TypeError("copy is not supported for skips carried between stages")


class _ContiguousGrad(torch.autograd.Function):
    """Identity whose backward makes the gradient contiguous: the gradient a stage sends back
    through a carried value (an expanded `sum()` gradient, say) must be contiguous for the send."""

    @staticmethod
    def forward(ctx: Any, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.view_as(tensor)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad.contiguous()


class NotCarried(TypeError):
    """A value a stage would send to the next one is not a tensor (a `stash(name, None)`, a layer's
    output that is no tensor): torch.distributed.pipelining carries tensors only."""


class Stage(nn.Module):
    """One stage: the user's children of that stage, registered under their own names.

    forward(*inputs): the stage's input (one tensor, or the tensors of a tuple), then the incoming
    skips in carrying order; returns the output, followed by the outgoing skips when there are any.
    """

    def __init__(self, model: nn.Sequential, stage_plan: Plan, index: int) -> None:
        super().__init__()
        start = sum(stage_plan.balance[:index])
        for name, layer in list(model.named_children())[start:start + stage_plan.balance[index]]:
            self.add_module(name, layer)
        self.index = index
        self.incoming = stage_plan.carried(index - 1)
        self.outgoing = stage_plan.carried(index)
        # The `use_skip_tracker` of each library whose skippable layers the stage holds.
        roots = {_library_root(type(layer)) for layer in self.children()} - {None}
        self._use_trackers = [importlib.import_module(f"{root}{_TRACKER_MODULE}").use_skip_tracker
                              for root in sorted(roots)]  # type: ignore[type-var]

    def forward(self, *inputs: Any) -> Any:
        count = len(self.incoming)
        contiguous: Any = _ContiguousGrad.apply
        inputs = tuple(contiguous(t) if isinstance(t, torch.Tensor) and t.requires_grad else t for t in inputs)
        data, carried = (inputs[:len(inputs) - count], inputs[len(inputs) - count:]) if count else (inputs, ())
        value: Any = data[0] if len(data) == 1 else tuple(data)
        tracker = _Tracker({skip.key: tensor for skip, tensor in zip(self.incoming, carried)})
        with contextlib.ExitStack() as stack:
            for use in self._use_trackers:
                stack.enter_context(use(tracker))
            for layer in self.children():
                value = layer(value)
        if not self.outgoing:
            return value
        values = [*(value if isinstance(value, tuple) else (value,)), *(tracker.tensors[s.key] for s in self.outgoing)]
        first_skip = len(values) - len(self.outgoing)
        for position, item in enumerate(values):
            if not isinstance(item, torch.Tensor):
                what = (f"skip '{self.outgoing[position - first_skip].name}'" if position >= first_skip
                        else "output")
                raise NotCarried(f"stage {self.index} would send its {what} as a {type(item).__name__}, "
                                 "not a tensor")
        return tuple(item.contiguous() for item in values)


def stages(model: nn.Sequential, stage_plan: Plan, indices: Optional[list[int]] = None) -> list[Stage]:
    """The stages of `model` (all, or those at `indices`), holding its own children."""
    return [Stage(model, stage_plan, i) for i in (range(stage_plan.stages) if indices is None else indices)]


def check_carried(model: nn.Sequential, balance: tuple[int, ...], sample: torch.Tensor, chunks: int) -> None:
    """NotCarried when a stage would send a value that is not a tensor: the stages of a copy of the
    model run one after the other here, on the sample's first micro-batch, before any stage process
    starts."""
    twin = copy.deepcopy(model)
    with torch.no_grad():
        for _ in run_in_sequence(stages(twin, plan(twin, balance)), sample.chunk(chunks)[0]):
            pass


def run_in_sequence(all_stages: list[Stage], sample: Any) -> Iterator[tuple[int, Any]]:
    """Each stage's output, one stage after the other in this process: what the pipeline computes
    for one micro-batch, without the schedule."""
    value: Any = sample
    for stage in all_stages:
        value = stage(*(value if isinstance(value, tuple) else (value,)))
        yield stage.index, value
