"""Turns what one run of the interpreter built into facts: a Composition for each Sequential that
is a model (not a part of one), a Pipe for each pipe call and for each model that
verify_skippables runs on (or that leaves the module)."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Optional

from skiplint import gradflow
from skiplint.facts import Composition, Layer, ModelFacts, Pipe, Site, SkipKey
from skiplint.interpret.core import Core
from skiplint.interpret.values import NS, UNKNOWN, LayerV, SeqV, code, skip_keys


#: torch.nn layers that keep their input's autograd history in their output.
_KEEPING = gradflow.PARAM_LAYERS | gradflow.SAVING_LAYERS | gradflow.PASSING_LAYERS


class Conversion:
    """The facts of one run (`Core` state after the module and its entry points ran)."""

    def __init__(self, run: Core) -> None:
        self.built = run.built
        self.entries = run.entries
        self.locator = run.locator
        self.budget = run.budget
        self.refined = run.specializing.refined

    def facts(self, path: str) -> ModelFacts:
        converted: dict[int, Composition] = {}

        def convert(seq: SeqV) -> Composition:
            if id(seq) not in converted:
                converted[id(seq)] = self.composition(seq)
            return converted[id(seq)]

        compositions = [convert(seq) for seq in self.built.sequences
                        if (seq.piped or not seq.nested_in) and not self.fragment(seq)]
        compositions.extend(self.composition(seq) for seq in self.direct_pops())
        pipes = []
        for record in self.built.pipes:
            module = record.module
            found: Optional[Composition] = None
            if isinstance(module, SeqV):
                found = convert(module)
            elif isinstance(module, LayerV) and record.kind == "LazyModule":
                found = self.composition(SeqV("LazyModule", record.node, [("0", module, record.node)]))
            name = record.name or (found.name if found is not None else record.kind)
            pipes.append(Pipe(record.kind, name, found, record.balance,  # type: ignore[arg-type]
                              Site(record.node, self.locator), record.chunks, record.checkpoint,
                              record.sample_grad))
        # verify_skippables runs on these (directly, or in a pipe's constructor): a record each,
        # so that the checks know where a stash nobody pops fails.
        for seq in self.built.sequences:
            if seq.verified or (seq.escapes and not seq.nested_in and not self.fragment(seq)):
                found = convert(seq)
                kind = "verify_skippables" if seq.verified else "exported"
                pipes.append(Pipe(kind, found.name, found, None,  # type: ignore[arg-type]
                                  Site(seq.node, self.locator)))
        return ModelFacts(path, tuple(compositions), tuple(pipes), isolate_names=tuple(self.built.isolate_names),
                          unknowns=tuple(self.built.unknowns))

    def direct_pops(self) -> Iterator[SeqV]:
        """A composition of one for each popping layer called directly (`layer(x)`, `Pop()(x)`):
        its forward runs with the thread's skip tracker, where nothing stashed its names, so it
        raises "'name' has not been stashed" before its body runs, wherever the call is (inside
        `pytest.raises` or `try` too). Judged only when the instance is handed to nothing else (no
        Sequential, container, attribute or argument) and nothing may have stashed its names
        before: no direct call earlier in its entry point (the module's code, a test, a builder),
        and, but for the module's own code (it runs first) and tests that an autouse fixture
        gives a tracker of their own, no direct call of any entry point (run in any order)."""
        seen: set[int] = set()
        for call in self.built.direct_calls:
            layer, func_node, before = call.layer, call.node, call.before
            stash, pop = layer.names("stash"), layer.names("pop")
            if before is not None and not (call.entry == "module" or (call.entry == "test" and
                                                                      self.entries.fresh_test_trackers)):
                before = None if self.entries.leaks is None else before | self.entries.leaks
            if (id(func_node) in seen or layer.placed or layer.tainted or layer.unsure or stash is None
                    or not pop or stash & pop or before is None or skip_keys(layer, pop) & before):
                continue
            seen.add(id(func_node))
            yield SeqV("direct call", func_node, [(code(func_node), layer, func_node)], name=f"{code(func_node)}(...)")

    def fragment(self, seq: SeqV) -> bool:
        """A partition given to inspect_skip_layout (in this run or another run of the same code),
        or a Sequential whose children were spread into a larger one, and never given to a pipe
        or verify_skippables: a piece of a model, not checked alone."""
        piece = seq.partition or seq.part or id(seq.node) in self.built.partition_nodes
        return piece and not (seq.piped or seq.verified)

    def composition(self, seq: SeqV) -> Composition:
        layers: list[Layer] = []
        ns_label: dict[int, str] = {}
        complete = seq.complete and not seq.tainted
        unknown = seq.unknown if not seq.complete else ("changed under a condition" if seq.tainted else None)
        seen: set[int] = set()
        for index, (key, value, node) in enumerate(seq.children):
            if id(value) in seen and value is not UNKNOWN:
                complete = False
                unknown = f"layer {index} is the same module as an earlier layer"
                break
            seen.add(id(value))
            site = Site(node, self.locator) if node is not None else None
            layers.append(self.layer(index, key, value, node, site, ns_label))
        if seq.name is None:
            line = self.locator.position(seq.node)[0]
            seq.name = f"{seq.label}@{line}"
        return Composition(seq.name, tuple(layers), complete, Site(seq.node, self.locator), seq.piped,
                           tuple(sorted(ns_label.items())), unknown, tuple(seq.factories))

    def layer(self, index: int, key: str, value: Any, node: Any, site: Optional[Site],
              ns_label: dict[int, str]) -> Layer:
        if isinstance(value, SeqV):
            nested = tuple(self.nested_skippables(value, ns_label))
            return Layer(index, key, value.label, "container", site=site, nested=nested)
        if isinstance(value, LayerV):
            if value.kind == "container":
                hidden = (Layer(-1, "?", value.label, "unknown"),)
                return Layer(index, key, value.label, "container", site=site, nested=hidden)
            if value.kind != "skippable":
                return Layer(index, key, value.label, value.kind, site=site, frozen=value.frozen)
            info = self.refined.get(id(value.info), value.info)
            stash, pop = (info.names("stash"), info.names("pop")) if info is not None else (None, None)
            if value.tainted or info is None or stash is None or pop is None:
                return Layer(index, key, value.label, "unknown", site=site)
            both = stash & pop
            if value.unsure:
                return Layer(index, key, value.label, "skippable", both=tuple(sorted(both)), site=site,
                             unknown_names=tuple(sorted((stash | pop) - both)))

            def keys(names: frozenset[str]) -> tuple[SkipKey, ...]:
                out = []
                for name in sorted(names - both):
                    ns = value.namespaces.get(name)
                    if ns is not None:
                        ns_label.setdefault(ns.serial, ns.origin or self.ns_text(ns))
                    out.append((ns.serial if ns is not None else None, name))
                return tuple(out)

            return Layer(index, key, value.label, "skippable", keys(stash), keys(pop),
                         tuple(sorted(both)), site, cls=info)
        label = code(node) if node is not None else "?"
        return Layer(index, key, label, "unknown", site=site)

    def ns_text(self, ns: NS) -> str:
        if ns.node is None:
            return f"#{ns.serial}"
        return f"Namespace() of line {self.locator.position(ns.node)[0]}"

    def nested_skippables(self, seq: SeqV, ns_label: dict[int, str], depth: int = 0,
                          tail_keeps: bool = True, head_saves: bool = False) -> Iterator[Layer]:
        """Skippable (or unknown) layers anywhere inside a container. `tail_keeps`: what follows
        `seq` in the containers around it keeps the autograd history of its output; `head_saves`:
        its input certainly holds a node that saved tensors, made inside the direct child."""
        if depth > self.budget.nesting or not seq.complete or seq.tainted:
            yield Layer(-1, "?", seq.label, "unknown")
            if depth > self.budget.nesting:
                return
        keeps = [self.keeps_history(value) for _, value, _ in seq.children]
        saves = head_saves
        for index, (key, value, node) in enumerate(seq.children):
            follows = tail_keeps and all(keeps[index + 1:])
            if index:
                before = seq.children[index - 1][1]
                saves = (saves and keeps[index - 1]) or self.saves(before)
            if isinstance(value, SeqV):
                yield from self.nested_skippables(value, ns_label, depth + 1, follows, saves)
                continue
            site = Site(node, self.locator) if node is not None else None
            layer = self.layer(index, key, value, node, site, ns_label)
            if layer.unknown_names:
                yield Layer(-1, "?", layer.label, "unknown")
            elif layer.kind in ("skippable", "unknown"):
                yield dataclasses.replace(layer, feeds_output=follows, input_saves=saves) \
                    if follows and layer.kind == "skippable" else layer
            elif layer.kind == "container":
                yield from layer.nested

    def saves(self, value: Any) -> bool:
        """A layer whose output certainly holds a node that saved tensors: a torch.nn layer with
        parameters, not frozen, or a skippable layer whose forward makes one (skiplint.gradflow)."""
        if not isinstance(value, LayerV) or value.tainted:
            return False
        if value.kind == "skippable" and value.info is not None:
            return self.refined.get(id(value.info), value.info).output_saves
        return value.kind == "plain" and value.label in gradflow.PARAM_LAYERS and not value.frozen

    def keeps_history(self, value: Any) -> bool:
        """A torch.nn layer, or a skippable layer, whose output carries its input's autograd
        history (skiplint.gradflow)."""
        if not isinstance(value, LayerV):
            return False
        if value.kind == "skippable" and value.info is not None:
            return self.refined.get(id(value.info), value.info).keeps_input and not value.tainted
        return value.kind == "plain" and value.label in _KEEPING
