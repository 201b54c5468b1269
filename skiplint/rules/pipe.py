"""SKP3xx: a pipe and its partitions: GPipe, fairscale's Pipe, torch's Pipe and the balancers."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

import skiplint.rules.analyzer as analyzer
import skiplint.rules.composition as composition_rules
from skiplint.findings import Finding
from skiplint.rules.base import CHECKS, Fails, Rule, checks, run

if TYPE_CHECKING:
    from skiplint.facts import Composition, Pipe, SkipRoute

#: The family's heading in docs/rules.md, and what its rules predict (rendered by skiplint.rules.doc).
TITLE = 'SKP3xx: a pipe and its partitions'
BLURB = "GPipe, fairscale's Pipe, torch's Pipe and the balancers."


BALANCE_MISMATCH = Rule(
    code='SKP301', name='balance-mismatch',
    template='balance sums to {total} but the composition has {count} layers',
    summary='balance does not sum to the number of layers of the composition',
    failure='BalanceError: module and sum of balance have different length',
    reported_at='the pipe call',
    predicts=(Fails("partition", r'BalanceError: module and sum of balance have different length.*', "model"),),
)


CROSS_PARTITION_SKIP = Rule(
    code='SKP302', name='cross-partition-skip',
    # A cost report: each skip and its partitions, at its pipe.
    distinct_by=('skip', 'src', 'dst', 'src_layer', 'dst_layer'),
    template='skip {skip} crosses from partition {src} (layer {src_layer}) to partition {dst} (layer '
             '{dst_layer})',
    summary='a skip crosses partitions (a device-to-device copy per micro-batch)',
    failure='none: a cost report',
    reported_at='the pipe call',
    opt_in=True,
)


PROFILED_SKIPPABLE = Rule(
    code='SKP303', name='profiled-skippable',
    template='{func}() profiles layers in isolation; the skippable layers of this composition fail there',
    summary='balance_by_time applied to a composition in which a popped and used skip shares saved autograd '
            "history with its stashing layer's output",
    failure="RuntimeError: Trying to backward through the graph a second time, during profiling (each layer's "
            "backward runs alone, and a popped skip leads back into the stashing layer's graph)",
    reported_at='the balancing call',
    when="a popped skip that the popping layer's output depends on shares, with its stashing layer's output, "
         'an autograd node that saved tensors for backward, decided by dataflow through forward: '
         'balance_by_time detaches each '
         "layer's input (keeping requires_grad) and runs each layer's backward alone, so the popping layer's "
         "backward reaches what the stashing layer's backward freed. Followed: operations and views; tuples, "
         'lists and comprehensions (`torch.cat([x, skip], 1)`), unpacking (`a, b = h.chunk(2)`), subscripts, '
         'in-place methods (`out.add_(skip)`, `skip.detach_()`), conditional expressions, `with` blocks, early '
         'returns; attributes of `self`; methods of `self` and functions of the same module (called, or '
         'reached by `yield from`); functions imported from other modules of the project (called, or reached '
         "by `yield from` from the module's own code; a layer class imported from another module is judged "
         "by its own module's functions only), with positional and keyword arguments (not `*args`/`**kwargs`); "
         "torch.nn layers, "
         'and nn.Sequential/nn.ModuleList/nn.ModuleDict attributes of '
         "them and their indexing; instances of the module's own classes (`self.enc(x)`, `self.enc.lin(x)`); "
         '`nn.Parameter` attributes and the weights of torch.nn layers need grad, unless '
         'frozen (`requires_grad_(False)`, `requires_grad=False`). Branches on `self.training` and on whether '
         'the popped tensor is None are decided (profiling runs in training mode). A torch function that '
         'is not known to save nothing (views, `detach`, `+`, `-`, `cat`, `sum`, ...) is taken to depend on '
         'and save its tensor arguments; any other call that is not followed is taken to depend on its '
         'arguments and to save nothing for certain. Measured on torchgpipe and fairscale: a stash of the '
         'untouched input, of `h.detach()`, of a tensor computed under `torch.no_grad()`, from a constant, '
         'apart from the output or only by `+`, `-` and views, and a pop that is discarded, detached or used '
         "under no_grad profile fine; a node made only from the layer's input (`h = x * 2`, a frozen layer) "
         'counts when the sample requires grad (`requires_grad=True`) or a torch.nn layer with parameters '
         '(not frozen), or a skippable layer whose own parameters make its output require grad, comes before. '
         'A nested layer counts where what follows it in its child keeps its history (torch.nn layers that '
         "keep it, skippable layers whose output depends on their input); there, a stash that carries its input's "
         'history (`stash("s", x)`, returning `x`) counts where a torch.nn layer with parameters (not frozen), or '
         'a skippable layer whose output certainly holds a node that saved tensors, comes before it in its child. '
         'balance_by_size profiles CUDA memory with forward passes only and is not reported',
)


SKIPPABLE_IN_MULTIPROCESS_PIPE = Rule(
    code='SKP304', name='skippable-in-multiprocess-pipe',
    template='{pipe} {problem}',
    summary="skippable layers in LazyModule lists of fairscale's multi-process pipes, or a skip that crosses "
            "the processes of fairscale's AsyncPipe",
    failure="ValueError: Can't use Skippable layers with multi-process pipe and lazy construction; or, for "
            "AsyncPipe over a Sequential, RuntimeError: 'x' has not been stashed in forward",
    reported_at='the pipe call',
    when="a LazyModule list given to a pipe holds a skippable layer (fairscale's multi-process pipes refuse "
         "one in each rank's partition), or fairscale's AsyncPipe is given a Sequential whose skip goes from "
         'one partition to another: AsyncPipe runs neither verify_skippables nor inspect_skip_layout, so no '
         'portal carries the skip between the processes. Measured on CPU with two processes (gloo and RPC): '
         "skips inside one partition run. fairscale's earlier MultiProcessPipe verified a Sequential and "
         'carried its skips between processes, so only its LazyModule lists are reported',
)


DISCARDED_CROSS_PARTITION_POP = Rule(
    code='SKP305', name='discarded-cross-partition-pop',
    template="the tensor from yield pop('{name}') {how}, and this pipe stashes it in partition {src} and pops "
             'it in partition {dst}: backward() fails; use the popped tensor',
    summary='a yield pop(name) whose tensor is discarded (or used only detached), in a pipe that puts the pop '
            'in another partition than its stash',
    failure='AssertionError in skip/portal.py during backward() (forward and eval run fine)',
    reported_at='the `pop(...)` call; the message names both partitions (SKP116, if selected, is not repeated '
                'there)',
    when="the pop's tensor is discarded (`yield pop(name)` as a statement), or assigned to a name (`name = "
         "yield pop(...)` in forward's own body) from which no code that runs in training reads it other than as "
         '`name.detach()`, `name.detach_()` or under `torch.no_grad()`: also after `name = name.detach()`, or '
         "`name.detach_()` (measured the same on both libraries: no gradient reaches the portal); a function or "
         'lambda that forward defines, and a statement the dataflow does not follow (`match`, `try`/`except*`), '
         "count as reading it. The pipe's literal balance puts the pop in another partition than its stash",
    supersedes=('SKP116',),
    predicts=(Fails("pipe", r'AssertionError \(raised in (?:.*/)?skip/portal\.py\)', "model"),),
)


MIXED_NAMESPACE_ROUTES = Rule(
    code='SKP306', name='mixed-namespace-routes',
    template='skip {default} (default namespace) and skip {isolated} both go from partition {src} to '
             "partition {dst}: the pipe's constructor fails comparing their namespaces; isolate both, or "
             'neither',
    summary='in one pipe, a default-namespace skip and an isolated skip whose routes share source and '
            'destination partition',
    failure="AttributeError: 'NoneType' object has no attribute 'id' from the pipe's constructor "
            '(inspect_skip_layout sorts the routes); verify_skippables and a plain run pass',
    reported_at='the pipe call',
    when='both routes are in the same pipe with the same source partition and the same destination partition '
         '(a skip stashed and popped in one partition counts); the pipe is otherwise valid (no SKP2xx), and '
         'every layer is known',
)


# -- checks ----------------------------------------------------------------------------------------
# Each is given one pipe, balancer or LazyModule call (`facts.Pipe`).

_PROFILERS = ("balance_by_time", "balance_by_size")
_MULTIPROCESS = ("MultiProcessPipe", "AsyncPipe", "LazyModule")
_PIPE_LABEL = {"MultiProcessPipe": "fairscale's MultiProcessPipe", "AsyncPipe": "fairscale's AsyncPipe",
               "LazyModule": "LazyModule (lazy construction for fairscale's multi-process pipes)"}


def _composition(pipe: Pipe, balanced: bool = True) -> Optional[Composition]:
    """The composition a pipe call partitions (not a balancer's, a LazyModule list's, or a record
    of how a composition is used), when it has a literal balance, its children are known and
    (`balanced`) the balance sums to its number of layers."""
    from skiplint import pipes

    composition = pipe.composition
    if (composition is None or pipe.kind in pipes.NOT_PIPES or pipe.kind in _PROFILERS or pipe.kind == "LazyModule"
            or pipe.balance is None or not composition.complete):
        return None
    return composition if not balanced or sum(pipe.balance) == len(composition.layers) else None


@checks("pipe", PROFILED_SKIPPABLE)
def profiling(pipe: Pipe) -> Iterator[Finding]:
    # balance_by_size profiles forward passes only (and on CUDA devices only): a skip carried
    # from layer to layer there fails nothing, so only balance_by_time is judged.
    if pipe.composition is not None and pipe.kind == "balance_by_time" and _fails_profiling(
            pipe.composition, pipe.sample_requires_grad):
        yield PROFILED_SKIPPABLE.at(pipe.site, func=pipe.kind)


@checks("pipe", SKIPPABLE_IN_MULTIPROCESS_PIPE)
def lazy_construction(pipe: Pipe) -> Iterator[Finding]:
    """A LazyModule list of fairscale's multi-process pipes that holds a skippable layer."""
    from skiplint import pipes

    if pipe.kind == "LazyModule" and pipe.composition is not None and pipes.has_skippables(pipe.composition):
        yield SKIPPABLE_IN_MULTIPROCESS_PIPE.at(pipe.site, pipe=_PIPE_LABEL[pipe.kind],
                                                problem="does not support skippable layers")


@checks("pipe", BALANCE_MISMATCH)
def balance_sum(pipe: Pipe) -> Iterator[Finding]:
    composition = _composition(pipe, balanced=False)
    if composition is not None and pipe.balance is not None:
        total = sum(pipe.balance)
        if total != len(composition.layers):
            yield BALANCE_MISMATCH.at(pipe.site, total=total, count=len(composition.layers))


@checks("pipe", SKIPPABLE_IN_MULTIPROCESS_PIPE)
def process_skips(pipe: Pipe) -> Iterator[Finding]:
    """fairscale's AsyncPipe (0.4.13) over a Sequential: its skip layout is empty, so a skip that
    crosses partitions has no portal between the processes (measured: SKP304's `when`)."""
    from skiplint import pipes

    composition = _composition(pipe)
    if composition is None or pipe.kind != "AsyncPipe" or pipe.balance is None or pipes.hides_skippables(composition):
        return
    if any(layer.kind == "unknown" for layer in composition.layers):
        return
    for route in pipes.routes(composition, pipe.balance):
        if (route.stash_partition is not None and route.pop_partition is not None
                and route.stash_partition != route.pop_partition):
            skip = pipes.skip_text((route.ns, route.name), composition)
            yield SKIPPABLE_IN_MULTIPROCESS_PIPE.at(pipe.site, pipe=_PIPE_LABEL[pipe.kind], problem=(
                f"carries no skip between its processes: skip {skip} goes from partition {route.stash_partition} "
                f"to partition {route.pop_partition}, and forward raises 'has not been stashed' there"))
            return


def _partitioned(pipe: Pipe) -> Optional[Composition]:
    """The composition of a pipe of one process that builds its partitions from a literal balance
    (one with an empty partition is refused by the pipe; no rule names that yet)."""
    composition = _composition(pipe)
    if composition is None or pipe.kind in _MULTIPROCESS or any(size <= 0 for size in pipe.balance or ()):
        return None
    return composition


@checks("pipe", composition_rules.DETACH_IN_PLACE_OF_A_VIEW, analyzer.COMPUTED_SKIP_NAME)
def detached_views(pipe: Pipe) -> Iterator[Finding]:
    """SKP206 for the composition a GPipe or fairscale Pipe builds with a literal balance (measured
    on both): its pops detached in place, in the partition of a stash that is a view."""
    composition = _partitioned(pipe) if pipe.kind in ("GPipe", "FairscalePipe") else None
    if composition is None or any(True for _ in run("composition", composition, composition.piped)):
        return  # the pipe fails to build
    yield from composition_rules.view_detaches(composition, pipe.balance)


@checks("pipe", composition_rules.NESTED_SKIPPABLE, analyzer.COMPUTED_SKIP_NAME)
def split_children(pipe: Pipe) -> Iterator[Finding]:
    """A skip between child Sequentials that this pipe's partitions and checkpointing break. When
    `chunks=` or `checkpoint=` cannot be known (`**options`, computed) and some value the pipe
    accepts breaks one, the pipe says so (SKP901)."""
    from skiplint import pipes

    composition = _partitioned(pipe)
    if composition is None or pipe.kind not in pipes.VERIFIERS:
        return
    if pipe.chunks is None or pipe.checkpoint is None:
        worst = dataclasses.replace(pipe, chunks=2 if pipe.chunks is None else pipe.chunks,
                                    checkpoint="always" if pipe.checkpoint is None else pipe.checkpoint)
        if any(True for _ in pipes.split_failures(composition, worst)):
            what = "the checkpointing of this pipe (chunks=, checkpoint=)"
            yield analyzer.COMPUTED_SKIP_NAME.at(pipe.site, what=what)
        return
    for container, layer, src, dst in pipes.split_failures(composition, pipe):
        if layer.site is not None:
            why = (f"its skip goes from partition {src} to partition {dst} in the tracker of its micro-batch, and "
                   f"checkpointing recomputes partition {dst}: backward raises 'has not been stashed'")
            yield composition_rules.NESTED_SKIPPABLE.at(layer.site, layer=repr(layer.label),
                                                        child=pipes.layer_text(container), why=why)


@checks("pipe", MIXED_NAMESPACE_ROUTES, CROSS_PARTITION_SKIP, DISCARDED_CROSS_PARTITION_POP)
def partition_routes(pipe: Pipe) -> Iterator[Finding]:
    """The routes of the skips of a pipe that builds (its composition has no finding): two that
    its constructor fails to sort, else each skip that crosses partitions, and a pop there whose
    tensor carries no gradient back."""
    from skiplint import pipes

    composition = _partitioned(pipe)
    if composition is None or pipe.balance is None or pipes.hides_skippables(composition):
        return
    if any(True for _ in run("composition", composition, composition.piped)):
        return  # the pipe fails to build; no cost to report
    skip_text = pipes.skip_text
    found = pipes.routes(composition, pipe.balance)
    clash = _mixed_namespaces(found) if all(layer.kind != "unknown" for layer in composition.layers) else None
    if clash is not None:
        default, isolated = clash
        yield MIXED_NAMESPACE_ROUTES.at(pipe.site, default=skip_text((default.ns, default.name), composition),
                                        isolated=skip_text((isolated.ns, isolated.name), composition),
                                        src=default.stash_partition, dst=default.pop_partition)
        return  # the pipe fails to build; no cost to report
    for route in found:
        if route.stash_partition is not None and route.stash_partition != route.pop_partition:
            yield CROSS_PARTITION_SKIP.at(pipe.site, skip=skip_text((route.ns, route.name), composition),
                                          src=route.stash_partition, dst=route.pop_partition,
                                          src_layer=route.stash_layer, dst_layer=route.pop_layer)
            popping = composition.layers[route.pop_layer].cls if route.pop_layer is not None else None
            if route.pop_partition is not None and popping is not None:
                # The pop's portal has no gradient to carry back across the partition boundary.
                for how, pops in (("is discarded", popping.discarded),
                                  ("reaches the output only detached", popping.detached)):
                    for name, site in pops:
                        if name == route.name:
                            yield DISCARDED_CROSS_PARTITION_POP.at(site, name=name, how=how, src=route.stash_partition,
                                                                   dst=route.pop_partition)


def _mixed_namespaces(found: Iterable[SkipRoute]) -> Optional[tuple[SkipRoute, SkipRoute]]:
    """Two routes with the same source and destination partitions, one in the default namespace
    and one isolated: inspect_skip_layout sorts each partition's routes by (source, namespace,
    name), and comparing the default namespace (None) with a Namespace raises AttributeError."""
    by_partitions: dict[tuple[int, Optional[int]], dict[bool, SkipRoute]] = {}
    for route in found:
        if route.stash_partition is None:
            continue
        kinds = by_partitions.setdefault((route.stash_partition, route.pop_partition), {})
        kinds.setdefault(route.ns is None, route)
        if len(kinds) == 2:
            return kinds[True], kinds[False]
    return None


def _fails_profiling(composition: Composition, sample_grad: bool = False) -> bool:
    """Whether balance_by_time fails on the layers (SKP303's `when` says why and what was measured):
    a popped tensor that the popping layer's output depends on shares, with its stashing layer's
    output, an autograd node that saved tensors (skiplint.gradflow). A node shared only when the
    layer's input requires grad (`h = x * 2`) counts when the sample requires grad (`sample_grad`)
    or an earlier layer certainly makes it so: a torch.nn layer with parameters (not frozen)
    followed only by torch.nn layers that keep requires_grad (a frozen one among them)."""
    from skiplint import gradflow

    keeping = gradflow.SAVING_LAYERS | gradflow.PASSING_LAYERS  # torch.nn layers that keep requires_grad
    stashed: dict[str, int] = {}  # name -> the direct child whose output shares with the stash
    input_grad = sample_grad
    for layer in composition.layers:
        for candidate in (layer, *layer.nested):
            # A direct child is profiled whole: a nested layer counts where its own output is the
            # child's (only history-keeping torch.nn layers follow it).
            if candidate.cls is None or not (candidate is layer or candidate.feeds_output):
                continue
            inert = candidate.cls.inert_pops | {name for name, _site in candidate.cls.discarded}
            if any(stashed.get(key[1], layer.index) != layer.index and key[1] not in inert for key in candidate.pop):
                return True
            for name in candidate.shares_output(input_grad and candidate is layer):
                stashed[name] = layer.index
        if layer.kind == "plain" and layer.label in gradflow.PARAM_LAYERS and not layer.frozen:
            input_grad = True  # with parameters: requires grad
        elif layer.cls is not None and layer.cls.output_grad != "no":
            input_grad = input_grad or layer.cls.output_grad == "yes"
        elif not (layer.kind == "plain" and (layer.label in keeping or layer.label in gradflow.PARAM_LAYERS)):
            input_grad = False  # what a layer of another kind makes of requires_grad is not followed
    return False


#: The most layers for which every two-partition balance is tried when a pipe's balance cannot be
#: known (`unknown_balance`); past it, the pipe says it is not checked.
_BALANCES_TRIED = 64


@checks("pipe", analyzer.COMPUTED_SKIP_NAME)
def unknown_balance(pipe: Pipe) -> Iterator[Finding]:
    """A pipe whose `balance=` cannot be known (`**options`, a parameter, computed): its checks run
    for each balance of one partition or two; where some of them find what the pipe does not find
    without a balance, the outcome depends on it, and the pipe says so (SKP901)."""
    from skiplint import pipes

    composition = pipe.composition
    if (pipe.balance is not None or composition is None or not composition.complete or pipe.kind == "TorchPipe"
            or pipe.kind in pipes.NOT_PIPES or pipe.kind in _PROFILERS or pipe.kind == "LazyModule"
            or not pipes.has_skippables(composition)):
        return
    count = len(composition.layers)
    if count > _BALANCES_TRIED:
        yield analyzer.COMPUTED_SKIP_NAME.at(pipe.site, what="the balance= of this pipe")
        return

    advice = {rule.code for check in CHECKS["pipe"] for rule in check.rules if rule.opt_in}

    def found(candidate: Pipe) -> set[tuple[str, int, Optional[str]]]:
        """What fails with `candidate` (the opt-in findings are advice, not failures)."""
        return {(f.code, id(f.site.node) if f.site is not None else 0, f.arg("name"))
                for f in run("pipe", candidate, but=unknown_balance) if f.code not in advice}

    without = found(pipe)
    for balance in [(count,)] + [(cut, count - cut) for cut in range(1, count)]:
        if found(dataclasses.replace(pipe, balance=balance)) - without:
            yield analyzer.COMPUTED_SKIP_NAME.at(pipe.site, what="the balance= of this pipe")
            return
