"""What the compositions and pipes of a module are, as their checks (skiplint.rules.composition,
skiplint.rules.pipe) and the static skip layout read them: pure functions of composition facts."""

from __future__ import annotations

from typing import Iterable, Iterator, Optional

from skiplint.facts import Composition, Layer, ModelFacts, Pipe, SkipKey, SkipRoute
from skiplint.limits import BUDGET


def layer_text(layer: Layer) -> str:
    key = layer.key if layer.key == str(layer.index) else repr(layer.key)
    return f"{key} ({layer.label})"


def namespace_text(ns: Optional[int], composition: Composition) -> str:
    return "the default namespace" if ns is None else f"namespace {dict(composition.namespaces).get(ns, ns)}"


def skip_text(key: SkipKey, composition: Composition) -> str:
    ns, name = key
    return repr(name) if ns is None else f"{name!r} in {namespace_text(ns, composition)}"


_UNSEEN = "verify_skippables and the partitioner see only direct children"
_POP_FIRST = ("no layer before it stashes its skip, and verify_skippables, which sees only direct children, "
              "does not say so: forward raises 'has not been stashed'")


def hides_skippables(composition: Composition) -> bool:
    """Whether a child container holds skippable layers whose skips fail whatever the pipe (or
    may: layers nested in it that cannot be known). Skips stashed and popped inside one child
    never cross a partition (a child is never split), and skips between child Sequentials are
    judged by each pipe (`split_failures`): they hide nothing from the pipe."""
    escaping, unknown = nested_escapes(composition)
    return unknown or any(targets is None for _, _, targets, _ in escaping)


#: One nested skippable whose skip leaves its child container: (the container, the nested layer,
#: the later containers that pop its skips when each is a skip between child Sequentials, judged by
#: each pipe (`split_failures`), else None; why it fails whatever the pipe).
Escape = tuple[Layer, Layer, Optional[tuple[Layer, ...]], str]


def nested_escapes(composition: Composition) -> tuple[list[Escape], bool]:
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
    its partition, the popping container's partition). Such a skip fails only where checkpointing
    recomputes the popping partition, whose recomputation pops what the forward pass took out
    already (measured on torchgpipe 0.0.7 and fairscale 0.4.13: SKP205's `when`)."""
    if pipe.balance is None or not (pipe.checkpoint == "always" or (
            pipe.checkpoint == "except_last" and pipe.chunks is not None and pipe.chunks > 1)):
        return
    part = partitions(pipe.balance)
    for container, layer, targets, _why in nested_escapes(composition)[0]:
        for target in targets or ():
            if container.index < len(part) and target.index < len(part) and \
                    part[container.index] != part[target.index]:
                yield container, layer, part[container.index], part[target.index]
                break


def _popped_elsewhere(poppers: Optional[set[int]], index: int) -> bool:
    """Whether a layer other than `index` pops (without copying the set: it can hold every layer)."""
    return poppers is not None and bool(poppers) and (len(poppers) > 1 or index not in poppers)


#: Calls that run verify_skippables on their module (`inspect_skip_layout` does not).
VERIFIERS = ("GPipe", "FairscalePipe", "TorchPipe", "MultiProcessPipe", "verify_skippables")
#: ... and models that leave the module, whose pipe may be in another file (SKP202 only).
MAY_BE_VERIFIED = VERIFIERS + ("exported",)
#: Records that are no pipe to check: they only say how a composition is used.
NOT_PIPES = ("verify_skippables", "inspect_skip_layout", "exported")


def verified(model: ModelFacts) -> set[int]:
    """The ids of the compositions verify_skippables may run on (`MAY_BE_VERIFIED`)."""
    return {id(pipe.composition) for pipe in model.pipes
            if pipe.kind in MAY_BE_VERIFIED and pipe.composition is not None}


def has_skippables(composition: Composition) -> bool:
    """Whether a known skippable layer with declared skips is a child or nested in one."""
    for layer in composition.layers:
        for candidate in (layer, *layer.nested):
            if candidate.kind == "skippable" and (candidate.stash or candidate.pop or candidate.both
                                                  or candidate.unknown_names):
                return True
    return False


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


def pops(composition: Composition, balance: Optional[Iterable[int]] = None) -> list[SkipRoute]:
    """Every pop with the stash whose tensor it takes when the layers run: the latest earlier stash
    of its (ns, name) that no pop has taken yet (the skip tracker keeps one tensor per name: a second
    stash replaces the first, a pop takes it away), or none (stash_layer None); in the order the
    layers run. Layers past the first unknown are not followed."""
    part = partitions(balance) if balance is not None else []

    def partition_of(index: Optional[int]) -> Optional[int]:
        return part[index] if index is not None and index < len(part) else None

    waiting: dict[SkipKey, int] = {}
    found: list[SkipRoute] = []
    uncertain = uncertain_names(composition)
    for layer in known_skippables(composition):
        for key in layer.stash:
            waiting[key] = layer.index
        for key in layer.pop:
            if key[1] not in uncertain:
                source = waiting.pop(key, None)
                found.append(SkipRoute(key[0], key[1], source, layer.index, partition_of(source),
                                       partition_of(layer.index)))
    return found


def by_pop(found: Iterable[SkipRoute]) -> list[SkipRoute]:
    """Routes in the order of their popping layer, then name."""
    return sorted(found, key=lambda r: (r.pop_layer if r.pop_layer is not None else -1, r.name))


def routes(composition: Composition, balance: Optional[Iterable[int]] = None) -> list[SkipRoute]:
    """The static inspect_skip_layout: each popped (ns, name), where it is stashed and popped (its
    last pop: `pops`, one per key). For a composition that verify_skippables accepts (each name
    stashed and popped once per namespace) these are every pop."""
    return by_pop({(r.ns, r.name): r for r in pops(composition, balance)}.values())


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
