"""SKP2xx and SKP3xx checks and the static skip layout: pure functions of composition facts.

The composition check replays verify_skippables over the direct children, in its order: a layer's
names declared both ways are skipped (SKP105 reports them), a second stash or pop of a (namespace,
name) is a redeclaration, a pop with no earlier stash is unmatched, and stashes never popped are
reported last. Checking stops at the first layer that cannot be known.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Optional

from skiplint import gradflow
from skiplint.findings import OwnerRef
from skiplint.facts import Composition, Finding, Layer, ModelFacts, Pipe, Site, SkipKey, SkipRoute
from skiplint.limits import BUDGET

_PROFILERS = ("balance_by_time", "balance_by_size")
_MULTIPROCESS = ("MultiProcessPipe", "AsyncPipe", "LazyModule")
_PIPE_LABEL = {"MultiProcessPipe": "fairscale's MultiProcessPipe", "AsyncPipe": "fairscale's AsyncPipe",
               "LazyModule": "LazyModule (lazy construction for fairscale's multi-process pipes)"}


def _finding(code: str, site: Optional[Site], **args: object) -> Finding:
    return Finding(code, tuple((k, str(v)) for k, v in args.items()), site)


def layer_text(layer: Layer) -> str:
    key = layer.key if layer.key == str(layer.index) else repr(layer.key)
    return f"{key} ({layer.label})"


def skip_text(key: SkipKey, composition: Composition) -> str:
    ns, name = key
    if ns is None:
        return repr(name)
    return f"{name!r} in namespace {dict(composition.namespaces).get(ns, ns)}"


_UNSEEN = "verify_skippables and the partitioner see only direct children"
_POP_FIRST = ("no layer before it stashes its skip, and verify_skippables, which sees only direct children, "
              "does not say so: forward raises 'has not been stashed'")


def hides_skippables(composition: Composition) -> bool:
    """Whether a child container holds skippable layers whose skips fail whatever the pipe (or
    may: layers nested in it that cannot be known). Skips stashed and popped inside one child
    never cross a partition (a child is never split), and skips between child Sequentials are
    judged by each pipe (`split_failures`): they hide nothing from the pipe."""
    escaping, unknown = _nested_escapes(composition)
    return unknown or any(targets is None for _, _, targets, _ in escaping)


#: One nested skippable whose skip leaves its child container: (the container, the nested layer,
#: the containers that pop its skips when each of them is a skip between child Sequentials, else
#: None). A skip between child Sequentials is stashed only inside one child and popped only inside
#: one later child: the pipe carries it in the tracker of its micro-batch, which works but for
#: the recomputation of checkpointing across partitions (`split_failures`).
Escape = tuple[Layer, Layer, Optional[tuple[Layer, ...]], str]


def _nested_escapes(composition: Composition) -> tuple[list[Escape], bool]:
    """Each nested skippable with a skip that leaves its child container, each skip once; and
    whether some container holds layers that cannot be known (nothing is said past it).

    A skip that some direct child declares too is seen by verify_skippables on that side only:
    a nested stash that a layer outside its container pops, or a nested pop that nothing in its
    container stashes, fails there. A skip only nested layers use never reaches the pipe's
    layout: it goes through the skip tracker of its micro-batch in the order the layers run, so
    a pop with no stash before it (in that order) fails in forward, reported at the pop; a stash
    popped inside a later child is a skip between child Sequentials, judged by the pipe; one
    popped in its own child, stashed again before its pop, or never popped runs (measured on
    torchgpipe and fairscale)."""
    containers = [layer for layer in composition.layers if layer.kind == "container" and layer.nested]
    unknown = any(nested.kind == "unknown" for layer in containers for nested in layer.nested)
    outside_pops: dict[SkipKey, set[int]] = {}
    direct: set[SkipKey] = set()
    for layer in composition.layers:
        for candidate in (layer, *layer.nested):
            if candidate.kind == "skippable":
                for key in candidate.pop:
                    outside_pops.setdefault(key, set()).add(layer.index)
                if candidate is layer:
                    direct.update(layer.stash, layer.pop)
    escaping: list[Escape] = []
    reported: set[SkipKey] = set()
    for container in containers:
        nested = [n for n in container.nested if n.kind == "skippable"]
        if any(n.kind == "unknown" for n in container.nested):
            continue
        inside_stash = {key for n in nested for key in n.stash}
        inside_pop = {key for n in nested for key in n.pop}
        for layer in nested:
            leaving = {key for key in layer.stash if key in direct and key not in inside_pop
                       and _popped_elsewhere(outside_pops.get(key), container.index)}
            leaving |= {key for key in layer.pop if key in direct and key not in inside_stash}
            if leaving - reported:
                escaping.append((container, layer, None, _UNSEEN))
            reported |= leaving
    # The skips only nested layers use, in the order the layers run (a layer pops, then stashes).
    held: dict[SkipKey, tuple[Layer, Layer]] = {}
    split: dict[int, tuple[Layer, Layer, list[Layer]]] = {}
    for container in containers:
        if any(n.kind == "unknown" for n in container.nested):
            break
        for layer in container.nested:
            for key in layer.pop:
                if key in direct:
                    continue
                found = held.pop(key, None)
                if found is None:
                    if key not in reported:
                        escaping.append((container, layer, None, _POP_FIRST))
                    reported.add(key)
                elif found[0] is not container:
                    entry = split.setdefault(id(found[1]), (found[0], found[1], []))
                    if container not in entry[2]:
                        entry[2].append(container)
            for key in layer.stash:
                if key not in direct:
                    held[key] = (container, layer)
    escaping.extend((container, layer, tuple(targets), "") for container, layer, targets in split.values())
    return escaping, unknown


def split_failures(composition: Composition, pipe: Pipe) -> Iterator[tuple[Layer, Layer, int, int]]:
    """Skips between child Sequentials that fail in this pipe: (container, nested stashing layer,
    its partition, the popping container's partition). Measured on torchgpipe 0.0.7 and fairscale
    0.4.13: such a skip travels in the tracker of its micro-batch, so it runs, equal to the plain
    model, when both children are in one partition, and across partitions as long as no
    micro-batch is recomputed; backward raises "'name' has not been stashed" when the popping
    partition is recomputed (checkpoint='always', or 'except_last' with chunks > 1), since the
    recomputation pops what the forward pass took out already."""
    if pipe.balance is None or not (pipe.checkpoint == "always" or (
            pipe.checkpoint == "except_last" and pipe.chunks is not None and pipe.chunks > 1)):
        return
    part = partitions(pipe.balance)
    for container, layer, targets, _why in _nested_escapes(composition)[0]:
        for target in targets or ():
            if container.index < len(part) and target.index < len(part) and \
                    part[container.index] != part[target.index]:
                yield container, layer, part[container.index], part[target.index]
                break


def _popped_elsewhere(poppers: Optional[set[int]], index: int) -> bool:
    """Whether a layer other than `index` pops (without copying the set: it can hold every layer)."""
    return poppers is not None and bool(poppers) and (len(poppers) > 1 or index not in poppers)



#: Codes that report each skip separately at one node (a cost report lists every crossing skip).
_PER_SKIP = frozenset({"SKP302"})


def model_findings(model: ModelFacts) -> Iterator[Finding]:
    """Every SKP2xx/SKP3xx finding of a module: one per (code, reported node, skip name).

    A layer maps each name to one namespace, so within one build the name tells its skips apart:
    two skips of one layer are two findings. A block that is built twice (a helper called with two
    arguments) is one mistake at one place, reported once, even where each build isolates it in
    a namespace of its own. SKP302: once per skip and partitions at its pipe."""
    seen: dict[tuple[str, int, object], Finding] = {}
    for finding in (*model.findings, *_all_findings(model)):
        node_id = id(finding.site.node) if finding.site is not None else 0
        skip = finding.args if finding.code in _PER_SKIP else dict(finding.args).get("name")
        key = (finding.code, node_id, skip)
        first = seen.get(key)
        if first is None:
            seen[key] = finding
        else:  # the same mistake in another build: it belongs to that composition too
            known = {_owner_key(o) for o in first.owners}
            owners = first.owners + tuple(o for o in finding.owners if _owner_key(o) not in known)
            seen[key] = dataclasses.replace(first, owners=owners)
    yield from seen.values()


#: Calls that run verify_skippables on their module (`inspect_skip_layout` does not).
_VERIFIERS = ("GPipe", "FairscalePipe", "TorchPipe", "MultiProcessPipe", "verify_skippables")
#: ... and models that leave the module, whose pipe may be in another file (SKP202 only).
MAY_BE_VERIFIED = _VERIFIERS + ("exported",)
#: Records that are no pipe to check: they only say how a composition is used.
_NOT_PIPES = ("verify_skippables", "inspect_skip_layout", "exported")


def _all_findings(model: ModelFacts) -> Iterator[Finding]:
    verified = {id(pipe.composition) for pipe in model.pipes
                if pipe.kind in MAY_BE_VERIFIED and pipe.composition is not None}
    for composition in model.compositions:
        owner = composition_owner(composition)
        for finding in composition_findings(composition, verified=id(composition) in verified):
            yield dataclasses.replace(finding, owners=(owner,))
    for pipe in model.pipes:
        owners = (composition_owner(pipe.composition),) if pipe.composition is not None else ()
        for finding in pipe_findings(pipe):
            yield dataclasses.replace(finding, owners=owners)


def _owner_key(owner: OwnerRef) -> tuple[object, ...]:
    """Owners are told apart by their node too (a Site equals every other Site)."""
    return (owner.kind, owner.name, owner.factories, id(owner.site.node) if owner.site is not None else 0)


def composition_owner(composition: Composition) -> OwnerRef:
    """The owner of a composition's findings (and its pipes'): the composition, at its expression,
    with the module-level functions that return it."""
    return OwnerRef("composition", composition.name, composition.site, composition.factories)


def composition_findings(composition: Composition, verified: Optional[bool] = None) -> Iterator[Finding]:
    """SKP201-SKP205 for one composition (verify_skippables on its direct children).

    `verified`: whether verify_skippables runs on it (given to GPipe/Pipe or verify_skippables;
    default: whether it is given to a pipe). A stash nobody pops (SKP202) fails only there: a
    plain run tolerates it. Pops without a stash, and second stashes or pops, fail or misbehave
    in a plain run too."""
    if verified is None:
        verified = composition.piped
    hidden_names: set[str] = uncertain_names(composition)
    for layer in composition.layers:
        for nested in layer.nested:
            hidden_names.update(name for _, name in (*nested.stash, *nested.pop))
    if hides_skippables(composition):
        if not composition.piped:
            # Run plain, nested skips do work; given to a pipe, they do not: which one is unknown.
            return
        escaping, unknown = _nested_escapes(composition)
        for container, nested, targets, why in escaping:
            if nested.site is not None and targets is None:  # skips between children: by the pipe
                yield _finding("SKP205", nested.site, layer=repr(nested.label), child=layer_text(container),
                               why=why)
        if unknown:
            return
    stashed: dict[SkipKey, Layer] = {}
    popped: dict[SkipKey, Layer] = {}
    unmatched: dict[str, list[tuple[SkipKey, Layer]]] = {}  # by name, in order
    truncated = not composition.complete
    for layer in composition.layers:
        if layer.kind == "unknown":
            truncated = True
            break
        if layer.kind != "skippable":
            continue
        for key in layer.stash:
            first = stashed.get(key)
            if first is not None:
                if key[1] not in hidden_names:
                    yield _finding("SKP203", layer.site, layer=layer_text(layer), skip=skip_text(key, composition),
                                   first=layer_text(first), name=key[1])
                continue
            stashed[key] = layer
        for key in layer.pop:
            first = popped.get(key)
            if key[1] in hidden_names:
                continue
            if first is not None:
                yield _finding("SKP204", layer.site, layer=layer_text(layer), skip=skip_text(key, composition),
                               first=layer_text(first), name=key[1])
            elif key not in stashed:
                unmatched.setdefault(key[1], []).append((key, layer))
                yield _finding("SKP201", layer.site, layer=layer_text(layer), skip=skip_text(key, composition),
                               name=key[1])
            else:
                popped[key] = layer
    if truncated:
        return
    for key, layer in stashed.items():
        if key in popped or key[1] in hidden_names:
            continue
        # A later pop of the same name in another namespace is the other half of one mistake (a
        # wrong or missing namespace at the pop): SKP201 there says it; the stash is not repeated.
        same_name = unmatched.get(key[1], [])
        partner = next((i for i, (k, pop) in enumerate(same_name)
                        if k[0] != key[0] and pop.index > layer.index), None)
        if partner is not None:
            del same_name[partner]
            continue
        if not verified:
            continue
        yield _finding("SKP202", layer.site, layer=layer_text(layer), skip=skip_text(key, composition),
                       name=key[1])


def has_skippables(composition: Composition) -> bool:
    """Whether a known skippable layer with declared skips is a child or nested in one."""
    for layer in composition.layers:
        for candidate in (layer, *layer.nested):
            if candidate.kind == "skippable" and (candidate.stash or candidate.pop or candidate.both
                                                  or candidate.unknown_names):
                return True
    return False


#: torch.nn layers with parameters: their output requires grad (skiplint.gradflow.PARAM_LAYERS).
_GRAD_LAYERS = gradflow.PARAM_LAYERS
#: torch.nn layers that keep their input's requires_grad.
_KEEPING_LAYERS = gradflow.SAVING_LAYERS | gradflow.PASSING_LAYERS


def _fails_profiling(composition: Composition) -> bool:
    """Whether balance_by_time fails on the layers: a popped tensor that the popping layer's
    output depends on shares, with its stashing layer's output, an autograd node that saved
    tensors (skiplint.gradflow). The profiler detaches each layer's input and runs each layer's
    backward alone: the stashing layer's backward frees those tensors, and the popping layer's
    backward reaches them again ('Trying to backward through the graph a second time'). Measured
    on torchgpipe and fairscale: a stash of the untouched input, of `h.detach()`, of a tensor
    computed apart from the output or only by + and -, and a pop discarded, detached or used
    under no_grad profile fine. A node shared only when the layer's input requires grad
    (`h = x * 2`) counts when an earlier layer certainly makes it so: a torch.nn layer with
    parameters followed only by torch.nn layers that keep requires_grad."""
    stashed: dict[str, int] = {}  # name -> the direct child whose output shares with the stash
    input_grad = False
    for layer in composition.layers:
        for candidate in (layer, *layer.nested):
            # A direct child is profiled whole: a nested layer counts where its own output is the
            # child's (only history-keeping torch.nn layers follow it).
            if candidate.kind != "skippable" or not (candidate is layer or candidate.feeds_output):
                continue
            inert = set(candidate.inert_pops) | {name for name, _site in candidate.discarded}
            if any(stashed.get(key[1], layer.index) != layer.index and key[1] not in inert for key in candidate.pop):
                return True
            for name in candidate.output_stashes:
                stashed[name] = layer.index
            if input_grad and candidate is layer:
                for name in candidate.input_output_stashes:
                    stashed[name] = layer.index
        if layer.kind == "plain" and layer.label in _GRAD_LAYERS:
            input_grad = True
        elif not (layer.kind == "plain" and layer.label in _KEEPING_LAYERS):
            input_grad = False  # what a layer of another kind makes of requires_grad is not followed
    return False


def pipe_findings(pipe: Pipe) -> Iterator[Finding]:
    """SKP301-SKP304 for one pipe, balancer or LazyModule call."""
    composition = pipe.composition
    if composition is None or pipe.kind in _NOT_PIPES:
        return
    if pipe.kind in _PROFILERS:
        # balance_by_size profiles forward passes only (and on CUDA devices only): a skip carried
        # from layer to layer there fails nothing, so only balance_by_time is judged.
        if pipe.kind == "balance_by_time" and _fails_profiling(composition):
            yield _finding("SKP303", pipe.site, func=pipe.kind)
        return
    if pipe.kind == "LazyModule":
        # fairscale's multi-process pipes build each rank's partition from the LazyModule list and
        # refuse a skippable layer in it: ValueError "Can't use Skippable layers with multi-process
        # pipe and lazy construction".
        if has_skippables(composition):
            yield _finding("SKP304", pipe.site, pipe=_PIPE_LABEL[pipe.kind],
                           problem="does not support skippable layers")
        return
    if pipe.balance is None or not composition.complete:
        return
    total = sum(pipe.balance)
    if total != len(composition.layers):
        yield _finding("SKP301", pipe.site, total=total, count=len(composition.layers))
        return
    if pipe.kind in _MULTIPROCESS:
        yield from _process_skips(composition, pipe)
        return
    if any(size <= 0 for size in pipe.balance):
        return  # the pipe refuses a balance with an empty partition; no rule names that yet
    if pipe.kind in _VERIFIERS:
        for container, layer, src, dst in split_failures(composition, pipe):
            if layer.site is not None:
                yield _finding("SKP205", layer.site, layer=repr(layer.label), child=layer_text(container),
                               why=f"its skip goes from partition {src} to partition {dst} in the tracker of "
                                   f"its micro-batch, and checkpointing recomputes partition {dst}: backward "
                                   f"raises 'has not been stashed'")
    if hides_skippables(composition) or any(True for _ in composition_findings(composition)):
        return  # the pipe fails to build; no cost to report
    found = routes(composition, pipe.balance)
    clash = _mixed_namespaces(found) if all(layer.kind != "unknown" for layer in composition.layers) else None
    if clash is not None:
        default, isolated = clash
        yield _finding("SKP306", pipe.site, default=skip_text((default.ns, default.name), composition),
                       isolated=skip_text((isolated.ns, isolated.name), composition),
                       src=default.stash_partition, dst=default.pop_partition)
        return  # the pipe fails to build; no cost to report
    for route in found:
        if route.stash_partition is not None and route.stash_partition != route.pop_partition:
            yield _finding("SKP302", pipe.site, skip=skip_text((route.ns, route.name), composition),
                           src=route.stash_partition, dst=route.pop_partition,
                           src_layer=route.stash_layer, dst_layer=route.pop_layer)
            if route.pop_partition is not None and route.pop_layer is not None:
                # The pop's portal has no gradient to carry back across the partition boundary.
                pop_layer = composition.layers[route.pop_layer]
                for how, pops in (("is discarded", pop_layer.discarded),
                                  ("reaches the output only detached", pop_layer.detached)):
                    for name, site in pops:
                        if name == route.name:
                            yield _finding("SKP305", site, name=name, how=how, src=route.stash_partition,
                                           dst=route.pop_partition)


def _process_skips(composition: Composition, pipe: Pipe) -> Iterator[Finding]:
    """fairscale's AsyncPipe (its multi-process pipe in 0.4.13) over a Sequential runs neither
    verify_skippables nor inspect_skip_layout: its skip layout is empty, so no portal carries a
    skip between the processes that hold the partitions, each with a skip tracker of its own.
    Measured on CPU (2 processes, gloo and RPC): a skip inside one partition runs; one that
    crosses partitions raises "'name' has not been stashed" in the popping process's forward.
    fairscale's earlier MultiProcessPipe verified the Sequential and carried its skips across
    processes (its own tests run them over several partitions): nothing is reported for it."""
    if pipe.kind != "AsyncPipe" or hides_skippables(composition) or pipe.balance is None:
        return
    if any(layer.kind == "unknown" for layer in composition.layers):
        return
    for route in routes(composition, pipe.balance):
        if (route.stash_partition is not None and route.pop_partition is not None
                and route.stash_partition != route.pop_partition):
            yield _finding("SKP304", pipe.site, pipe=_PIPE_LABEL[pipe.kind], problem=(
                f"carries no skip between its processes: skip {skip_text((route.ns, route.name), composition)} "
                f"goes from partition {route.stash_partition} to partition {route.pop_partition}, and forward "
                f"raises 'has not been stashed' there"))
            return


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


def partitions(balance: Iterable[int]) -> list[int]:
    """The partition of each layer index, for a balance: no more indexes than a composition can
    have layers (the budget's), and a size below one places no layer."""
    out: list[int] = []
    for partition, size in enumerate(balance):
        room = BUDGET.layers - len(out)
        if room <= 0:
            break
        out.extend([partition] * min(max(size, 0), room))
    return out


def routes(composition: Composition, balance: Optional[Iterable[int]] = None) -> list[SkipRoute]:
    """The static inspect_skip_layout: each popped (ns, name), where it is stashed and popped.

    As inspect_skip_layout, a pop takes the latest earlier stash of its (ns, name); stashes that
    are never popped have no route. Layers past the first unknown are not followed.
    """
    part = partitions(balance) if balance is not None else []

    def partition_of(index: Optional[int]) -> Optional[int]:
        if index is None or index >= len(part):
            return None
        return part[index]

    stashed_at: dict[SkipKey, int] = {}
    found: dict[SkipKey, SkipRoute] = {}
    uncertain = uncertain_names(composition)
    for layer in known_skippables(composition):
        for key in layer.stash:
            stashed_at[key] = layer.index
        for key in layer.pop:
            if key[1] in uncertain:
                continue
            source = stashed_at.pop(key, None)
            found[key] = SkipRoute(key[0], key[1], source, layer.index, partition_of(source),
                                   partition_of(layer.index))
    return sorted(found.values(), key=lambda r: (r.pop_layer if r.pop_layer is not None else -1, r.name))


def known_skippables(composition: Composition) -> Iterator[Layer]:
    """The skippable layers in order, up to the first layer that cannot be known."""
    for layer in composition.layers:
        if layer.kind == "unknown":
            return
        if layer.kind == "skippable":
            yield layer


def unpopped(composition: Composition) -> list[tuple[SkipKey, int]]:
    """Stashes that no later layer pops: (key, stashing layer)."""
    open_: dict[SkipKey, int] = {}
    uncertain = uncertain_names(composition)
    for layer in known_skippables(composition):
        for key in layer.stash:
            if key[1] not in uncertain:
                open_.setdefault(key, layer.index)
        for key in layer.pop:
            open_.pop(key, None)
    return sorted(open_.items(), key=lambda item: item[1])


def uncertain_names(composition: Composition) -> set[str]:
    """Names whose namespace some layer leaves unknown: nothing is said about them."""
    return {name for layer in composition.layers for name in layer.unknown_names}


def unchecked(model: ModelFacts) -> list[tuple[str, str]]:
    """The compositions that the checks above do not judge whole, each (name, why): children that
    cannot be listed, a layer that cannot be known, names whose namespace cannot be known. The
    analysis leaves none of them silent: a finding says why (SKP115, SKP901; SKP900/SKP902 when
    the analysis itself failed), which tests check over generated programs."""
    out: list[tuple[str, str]] = []
    for composition in model.compositions:
        if not composition.complete:
            out.append((composition.name, composition.unknown or "its children cannot be listed"))
        for layer in composition.layers:
            if layer.kind == "unknown":
                out.append((composition.name, f"layer {layer_text(layer)} cannot be known"))
            elif layer.unknown_names:
                out.append((composition.name, f"layer {layer_text(layer)} isolates names that cannot be known"))
            elif any(nested.kind == "unknown" for nested in layer.nested):
                out.append((composition.name, f"layer {layer_text(layer)} holds layers that cannot be known"))
    return out
