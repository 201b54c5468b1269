"""Turns what one run of the interpreter built into facts: a Composition for each Sequential that
is a model (not a part of one), a Pipe for each pipe call and for each model that
verify_skippables runs on (or that leaves the module)."""

from __future__ import annotations

from typing import Any, Iterator, Optional

import libcst as cst

from skiplint.facts import Composition, Layer, ModelFacts, Pipe, Site, SkipKey
from skiplint.interpret.core import Core
from skiplint.interpret.values import NS, UNKNOWN, LayerV, SeqV, code


class Conversion:
    """The facts of one run (`Core` state after the module and its entry points ran)."""

    def __init__(self, run: Core) -> None:
        self.sequences = run.sequences
        self.pipes = run.pipes
        self.locator = run.locator
        self.partition_nodes = run.partition_nodes
        self.budget = run.budget
        self.direct_calls = run.direct_calls
        self.tracker_names = run.tracker_names
        self.refined = run.refined

    def facts(self, path: str) -> ModelFacts:
        converted: dict[int, Composition] = {}

        def convert(seq: SeqV) -> Composition:
            done = converted.get(id(seq))
            if done is None:
                done = self.composition(seq)
                converted[id(seq)] = done
            return done

        compositions = [convert(seq) for seq in self.sequences
                        if (seq.piped or not seq.nested_in) and not self.fragment(seq)]
        compositions.extend(self.composition(seq) for seq in self.direct_pops())
        pipes = []
        for record in self.pipes:
            module = record.module
            found: Optional[Composition] = None
            if isinstance(module, SeqV):
                found = convert(module)
            elif isinstance(module, LayerV) and record.kind == "LazyModule":
                found = self.composition(single(module, record.node))
            name = record.name or (found.name if found is not None else record.kind)
            pipes.append(Pipe(record.kind, name, found, record.balance,  # type: ignore[arg-type]
                              Site(record.node, self.locator)))
        # verify_skippables runs on these (directly, or in a pipe's constructor): a record each,
        # so that the checks know where a stash nobody pops fails.
        for seq in self.sequences:
            if seq.verified or (seq.escapes and not seq.nested_in and not self.fragment(seq)):
                found = convert(seq)
                kind = "verify_skippables" if seq.verified else "exported"
                pipes.append(Pipe(kind, found.name, found, None,  # type: ignore[arg-type]
                                  Site(seq.node, self.locator)))
        return ModelFacts(path, tuple(compositions), tuple(pipes))

    def direct_pops(self) -> Iterator[SeqV]:
        """A composition of one for each popping layer called directly (`layer(x)`, `Pop()(x)`):
        its forward runs with the thread's default skip tracker, where nothing was stashed, so its
        first pop raises "'name' has not been stashed". Judged only when the instance is handed to
        nothing else (no Sequential, container, attribute or argument), the call is not expected
        to fail (`pytest.raises`, `try`), and no direct call in the module may stash the names."""
        if self.tracker_names is None:
            return
        seen: set[int] = set()
        for layer, func_node in self.direct_calls:
            info = layer.info
            if (id(func_node) in seen or layer.placed or layer.tainted or layer.unsure or info is None
                    or info.stash is None or info.pop is None or not info.pop or info.stash & info.pop
                    or info.pop & self.tracker_names):
                continue
            seen.add(id(func_node))
            seq = SeqV("direct call", func_node, name=f"{code(func_node)}(...)")
            seq.children.append((code(func_node), layer, func_node))
            yield seq

    def fragment(self, seq: SeqV) -> bool:
        """A partition given to inspect_skip_layout (in this run or another run of the same code),
        or a Sequential whose children were spread into a larger one, and never given to a pipe
        or verify_skippables: a piece of a model, not checked alone."""
        piece = seq.partition or seq.part or id(seq.node) in self.partition_nodes
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
                return Layer(index, key, value.label, value.kind, site=site)
            info = self.refined.get(id(value.info), value.info)
            if value.tainted or info is None or info.stash is None or info.pop is None:
                return Layer(index, key, value.label, "unknown", site=site)
            both = info.stash & info.pop
            if value.unsure:
                return Layer(index, key, value.label, "skippable", both=tuple(sorted(both)), site=site,
                             unknown_names=tuple(sorted((info.stash | info.pop) - both)))

            def keys(names: frozenset[str]) -> tuple[SkipKey, ...]:
                out = []
                for name in sorted(names - both):
                    ns = value.namespaces.get(name)
                    if ns is not None:
                        ns_label.setdefault(ns.serial, ns.origin or self.ns_text(ns))
                    out.append((ns.serial if ns is not None else None, name))
                return tuple(out)

            return Layer(index, key, value.label, "skippable", keys(info.stash), keys(info.pop),
                         tuple(sorted(both)), site, discarded=info.discarded,
                         output_stashes=tuple(sorted(info.output_stashes & info.stash)))
        label = code(node) if node is not None else "?"
        return Layer(index, key, label, "unknown", site=site)

    def ns_text(self, ns: NS) -> str:
        if ns.node is None:
            return f"#{ns.serial}"
        return f"Namespace() of line {self.locator.position(ns.node)[0]}"

    def nested_skippables(self, seq: SeqV, ns_label: dict[int, str], depth: int = 0) -> Iterator[Layer]:
        """Skippable (or unknown) layers anywhere inside a container."""
        if depth > self.budget.nesting or not seq.complete or seq.tainted:
            yield Layer(-1, "?", seq.label, "unknown")
            if depth > self.budget.nesting:
                return
        for index, (key, value, node) in enumerate(seq.children):
            if isinstance(value, SeqV):
                yield from self.nested_skippables(value, ns_label, depth + 1)
                continue
            site = Site(node, self.locator) if node is not None else None
            layer = self.layer(index, key, value, node, site, ns_label)
            if layer.unknown_names:
                yield Layer(-1, "?", layer.label, "unknown")
            elif layer.kind in ("skippable", "unknown"):
                yield layer
            elif layer.kind == "container":
                yield from layer.nested


def single(layer: LayerV, node: cst.CSTNode) -> SeqV:
    """A composition of the one layer a LazyModule builds."""
    seq = SeqV("LazyModule", node)
    seq.children.append(("0", layer, node))
    return seq
