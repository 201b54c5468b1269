"""What the skip API's calls mean: Sequential, Namespace, OrderedDict, the pipes (GPipe, Pipe,
MultiProcessPipe, AsyncPipe), verify_skippables, inspect_skip_layout, the balancers, LazyModule,
skippable(...)(cls) and `.isolate(ns, only=...)`."""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from skiplint.interpret.core import Args, Core, Kwargs
from skiplint.interpret.operations import to_dict
from skiplint.interpret.values import (
    PIPES, STAR_UNKNOWN, UNKNOWN, VERIFIERS, NS, ApiV, BoundV, DictV, FuncV, LambdaV, LayerV, ListV,
    PipeRecord, PipeV, SeqV, code, is_int,
)


class Api(Core):
    """Runs the calls of the skip API."""

    def api_call(self, symbol: str, args: Args, kwargs: Kwargs, node: cst.Call,
                 known: bool) -> Any:
        if symbol == "Sequential":
            seq = SeqV("Sequential", node)
            self.built.sequences.append(seq)
            if kwargs:
                seq.stop("keyword arguments to Sequential")
            self.fill_sequential(seq, args, kwargs, node)
            return seq
        if symbol == "Namespace":
            self.ns_serial += 1
            return NS(self.ns_serial, node=node)
        if symbol == "OrderedDict":
            if not known or kwargs:
                return DictV({}, ordered=True, tainted=True)
            if not args:
                return DictV({}, ordered=True)
            return to_dict(args[0][0], ordered=True)
        if symbol in PIPES:
            module = argument(args, kwargs, 0, "module")
            balance = None if symbol == "TorchPipe" else argument(args, kwargs, 1, "balance")
            lazy = self.lazy_layers(module, node)
            if lazy is not None:
                # Skippables inside LazyModule lists: the pipe call that receives them fails (SKP304).
                record = PipeRecord("LazyModule", node, lazy, None)
            else:
                record = PipeRecord(symbol, node, module, balance_of(balance))
                if symbol in ("GPipe", "FairscalePipe"):  # both take them as keywords only
                    # `**options`: what it holds cannot be known (None), unless given beside it.
                    spread = not known and any(arg.star == "**" for arg in node.args)
                    chunks = kwargs["chunks"][0] if "chunks" in kwargs else None if spread else 1
                    checkpoint = (kwargs["checkpoint"][0] if "checkpoint" in kwargs else None if spread
                                  else "except_last")
                    record.chunks = chunks if is_int(chunks) else None
                    record.checkpoint = checkpoint if isinstance(checkpoint, str) else None
            self.built.pipes.append(record)
            if isinstance(module, SeqV):
                module.piped = True
                module.verified = module.verified or symbol in VERIFIERS
            return PipeV(record)
        if symbol == "verify_skippables":
            module = argument(args, kwargs, 0, "module")
            if isinstance(module, SeqV):
                module.verified = True
            return None
        if symbol == "inspect_skip_layout":
            return self.inspect_layout(argument(args, kwargs, 0, "partitions"), node)
        if symbol in ("balance_by_time", "balance_by_size"):
            module = argument(args, kwargs, 1, "module")
            sample = kwargs["sample"][1] if "sample" in kwargs else args[2][1] if len(args) > 2 else None
            self.built.pipes.append(PipeRecord(symbol, node, module, None, sample_grad=requires_grad(sample)))
            return UNKNOWN
        if symbol == "LazyModule":
            target = argument(args, kwargs, 0, "function")
            built = self.call_function(target, [], {}) if isinstance(target, (FuncV, LambdaV)) else UNKNOWN
            return LayerV("unknown", "LazyModule", lazy=built)
        if symbol == "skippable":
            return BoundV(ApiV("skippable"), "__call__")
        return UNKNOWN

    def lazy_layers(self, module: Any, node: cst.Call) -> Optional[SeqV]:
        """The layers built by the `LazyModule`s of a list given to a pipe (None: no LazyModule)."""
        items = self.iterate(module) if isinstance(module, ListV) else None
        if not items or not any(isinstance(item, LayerV) and item.lazy is not None for item in items):
            return None
        seq = SeqV("LazyModule", node)
        for item in items:
            built = item.lazy if isinstance(item, LayerV) and item.lazy is not None else item
            seq.add(None, built if isinstance(built, (LayerV, SeqV)) else UNKNOWN, node)
        return seq

    def inspect_layout(self, partitions: Any, node: cst.Call) -> Any:
        """`inspect_skip_layout([p1, p2, ...])`: the partitions are fragments of one composition.

        Each Sequential of the list is marked as a partition (not checked alone); when every
        partition is known, their children in order form the composition that is checked, with
        the partition sizes as its balance."""
        items = self.iterate(partitions, with_nodes=True)
        if items is None:
            return UNKNOWN
        for value, _ in items:
            if isinstance(value, SeqV):
                value.partition = True
                self.built.partition_nodes.add(id(value.node))
        if not items or not all(isinstance(value, SeqV) for value, _ in items):
            return UNKNOWN
        whole = SeqV("inspect_skip_layout", node)
        sizes = []
        for value, _ in items:
            if not value.complete or value.tainted:
                whole.stop(value.unknown or "a partition changed under a condition")
                break
            sizes.append(len(value.children))
            for _, child, child_node in value.children:
                whole.add(None, child, child_node)
        self.built.sequences.append(whole)
        record = PipeRecord("inspect_skip_layout", node, whole, tuple(sizes) if whole.complete else None)
        self.built.pipes.append(record)
        return PipeV(record)

    def fill_sequential(self, seq: SeqV, args: Args, kwargs: Kwargs,
                        node: cst.CSTNode) -> None:
        if len(args) == 1 and isinstance(args[0][0], DictV):
            mapping: DictV = args[0][0]
            if mapping.tainted or not mapping.ordered:
                seq.stop("an OrderedDict whose entries cannot be known")
                return
            for key, (value, vnode) in mapping.items.items():
                self.add_child(seq, str(key), value, vnode)
            return
        for value, vnode in args:
            if value is STAR_UNKNOWN:
                seq.stop(f"*{code(vnode)}: a list whose items cannot be known")
                return
            self.add_child(seq, None, value, vnode)

    def add_child(self, seq: SeqV, key: Optional[str], value: Any, node: Any) -> None:
        if isinstance(value, SeqV):
            value.nested_in = True
        elif isinstance(value, ListV) and value.is_tuple is False and not value.tainted:
            seq.stop("a list given as a child")
            return
        seq.add(key, value, node)

    def isolate(self, layer: LayerV, values: list[Any], kwargs: dict[str, Any], node: cst.Call) -> Any:
        """`.isolate(ns, only=...)`: the names it isolates take the namespace. A namespace or
        names that cannot be known leave the layer unknown (a fact of what cannot be
        known), and so does an `only=` that names a skip its class never declares."""
        ns = values[0] if values else kwargs.get("ns", (UNKNOWN,))[0]
        if not isinstance(ns, NS) or len(values) > 1:
            layer.tainted = True
            given = node.args[0] if node.args else None
            if given is not None and (ns is UNKNOWN or ns is None) and len(values) <= 1:
                self.note_unknown(given, "the namespace given to isolate()")
            return layer
        only_entry = kwargs.get("only")
        stash, pop = layer.names("stash"), layer.names("pop")
        declared = stash | pop if stash is not None and pop is not None else None
        only_arg = next((a for a in node.args if a.keyword is not None and a.keyword.value == "only"), None)
        if only_entry is None:
            if declared is None:
                layer.tainted = True
                return layer
            names = declared
        else:
            only = self.iterate(only_entry[0])
            if only is None or not all(isinstance(n, str) for n in only):
                if declared is None:
                    layer.tainted = True
                else:
                    layer.unsure = True  # its names are unknown; the other layers are still checked
                if only_arg is not None:
                    self.note_unknown(only_arg, "the only= argument of this isolate()")
                return layer
            names = frozenset(only)
            if declared is not None and not names <= declared:
                # SKP115 reports the misnamed skip; the composition is not judged past it.
                layer.tainted = True
                if only_arg is not None:
                    for name in sorted(names - declared):
                        self.note_isolate_name(only_arg, name, layer.label)
                return layer
        for name in names:
            layer.namespaces[name] = ns
        return layer


def argument(args: Args, kwargs: Kwargs, position: int, keyword: str) -> Any:
    if keyword in kwargs:
        return kwargs[keyword][0]
    if len(args) > position:
        return args[position][0]
    return None


def balance_of(value: Any) -> Optional[tuple[int, ...]]:
    if isinstance(value, ListV) and not value.tainted:
        numbers = [v for v, _ in value.items]
        if numbers and all(is_int(n) for n in numbers):
            return tuple(numbers)
    return None


def requires_grad(node: Any) -> bool:
    """Whether an expression certainly makes a tensor that requires grad: a call given
    `requires_grad=True`, or `.requires_grad_()` (with True or nothing)."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
        return not node.args or (isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "True")
    return any(arg.keyword is not None and arg.keyword.value == "requires_grad" and isinstance(arg.value, cst.Name)
               and arg.value.value == "True" for arg in node.args)
