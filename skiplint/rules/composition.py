"""SKP2xx: one composition. What `verify_skippables` (called by every pipe's constructor) and
the skip tracker raise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from skiplint.findings import Finding
from skiplint.rules import analyzer
from skiplint.rules.base import Rule, checks
from skiplint.rules.base import Accounts, Fails

if TYPE_CHECKING:
    from skiplint.facts import Composition, Layer, SkipKey, ViewKind

#: The family's heading in docs/rules.md, and what its rules predict (rendered by skiplint.rules.doc).
TITLE = 'SKP2xx: one composition'
BLURB = "What `verify_skippables` (called by every pipe's constructor) and the skip tracker raise."


POP_BEFORE_STASH = Rule(
    code='SKP201', name='pop-before-stash',
    template='layer {layer} pops {skip} but no earlier layer stashes it',
    summary='a layer pops (ns, name) and no earlier layer of the composition stashed it',
    failure="TypeError: declared '{name}' as poppable but it was not stashed",
    reported_at="the popping layer's expression (for a popping layer called on its own, the callee of the "
                'call, wherever it is)',
    when='also for a list of partitions given to `inspect_skip_layout`, checked together in order; a '
         'Sequential that is only such a partition is not checked alone. A popping layer called on its own '
         "(`layer(x)`, also under `pytest.raises` or in `try`) runs with the thread's skip tracker and raises "
         "`'x' has not been stashed` when nothing stashed its names there first; it is reported when the "
         'instance is handed to nothing else and no direct call that may stash those names runs before it: '
         "earlier in the same function (or the module's code), or in any other function of the module, since "
         'tests run one after another on one thread, unless an autouse fixture makes a new `SkipTracker()` '
         'current for each test. Inside `use_skip_tracker(...)` or a context manager of the project it is not '
         'judged',
    predicts=(Fails("forward", r"RuntimeError: '(?P<name>.*)' has not been stashed", "layer"),
              Fails("verify", r"\* '(?P<layer>.*)' declared '(?P<name>.*)' as poppable but it was not stashed",
                    "layer")),
    # A pop in the wrong namespace is one mistake that verify_skippables reports twice: at the pop
    # and at the stash nothing pops then (an earlier layer); the static pass reports it once, at
    # the pop, and leaves that stash's SKP202 out by design (skiplint.pipes.composition_findings).
    accounts_for=(Accounts("SKP202", place="earlier layer", confirms=False),),
)


STASH_NEVER_POPPED = Rule(
    code='SKP202', name='stash-never-popped',
    template='layer {layer} stashes {skip} but no later layer pops it{instead}',
    summary='a layer stashes (ns, name) and no later layer pops it',
    failure="TypeError: no module declared '{name}' as poppable but stashed",
    reported_at="the stashing layer's expression",
    when='the composition may be verified: it is given to a pipe or `verify_skippables`, or it leaves its '
         'module (bound at module level, or returned by a module-level function, so an importer may pipe it). '
         'A model built and only run plainly inside a function is not reported: the skip tracker tolerates a '
         'stash nobody pops. Where a later layer pops the name a second time in another namespace (SKP204 '
         'names this stash there), the message names that pop',
    predicts=(Fails("verify", r"\* no module declared '(?P<name>.*)' as poppable but stashed", "stashing layer"),),
)


RESTASH_WITHOUT_NAMESPACE = Rule(
    code='SKP203', name='restash-without-namespace',
    template='layer {layer} stashes {skip} again (first stashed by layer {first}); isolate it with a Namespace',
    summary='(ns, name) is stashed again by a second layer without namespace isolation',
    failure="TypeError: redeclared '{name}' as stashable but not isolated by namespace",
    reported_at='the second stashing layer',
    predicts=(Fails("verify",
                    r"\* '(?P<layer>.*)' redeclared '(?P<name>.*)' as stashable but not isolated by namespace",
                    "layer"),),
)


REPOP_WITHOUT_NAMESPACE = Rule(
    code='SKP204', name='repop-without-namespace',
    template='layer {layer} pops {skip} again (first popped by layer {first}); {advice}',
    summary='(ns, name) is popped again by a second layer without namespace isolation',
    failure="TypeError: redeclared '{name}' as poppable but not isolated by namespace",
    reported_at='the second popping layer',
    when='the advice names the stash the pop is likely meant for where an earlier layer stashes the name in '
         "another namespace and no layer pops that stash (a pop isolated in the wrong namespace: that stash's "
         'SKP202 points back to the pop); else a pop in the default namespace is told to isolate itself with a '
         'Namespace, and one already isolated to move, with a stash for it, to a Namespace of its own',
    predicts=(Fails("verify",
                    r"\* '(?P<layer>.*)' redeclared '(?P<name>.*)' as poppable but not isolated by namespace",
                    "layer"),),
)


NESTED_SKIPPABLE = Rule(
    code='SKP205', name='nested-skippable',
    template='skippable layer {layer} is nested in child {child} of a Sequential given to a pipe; {why}',
    summary='skippable layers nested inside a child container of a Sequential given to a Pipe',
    failure="TypeError from verify_skippables, or 'has not been stashed' in forward (a pop before its stash), "
            'or in backward (a skip between child Sequentials across partitions, recomputed by checkpointing)',
    reported_at='the nested child',
    when='the nested skip leaves its child container (its stash or pop is outside it): a child is never split '
         'across partitions, so a skip wholly inside one child works. A skip between child Sequentials '
         '(stashed only inside one child, popped only inside a later one) travels in the skip tracker of its '
         'micro-batch: measured on torchgpipe and fairscale, it runs, equal to the plain model, when both '
         "children are in one partition or no micro-batch is recomputed, and backward raises `'x' has not "
         'been stashed` when they are in different partitions and checkpointing recomputes the popping one '
         "(`checkpoint='always'`, or the default `'except_last'` with `chunks` > 1); only that is reported, "
         "at the pipe's literal balance, chunks and checkpoint. Skips that only nested layers use go through "
         'that tracker in the order the layers run, so a pop with no stash before it (in an earlier child, or '
         'first in its own child, or a second pop of one stash) fails in forward, while a second stash before '
         'the pop runs; a skip with one side a direct child fails verify_skippables. Those are reported '
         'whatever the pipe',
)


DETACH_IN_PLACE_OF_A_VIEW = Rule(
    code='SKP206', name='detach-in-place-of-a-view',
    template="layer {layer} detaches {skip} in place, but layer {stasher} stashes {what}: a view cannot be "
             "detached in place; use detach(), which returns a new tensor",
    summary='a layer detaches a popped tensor in place (`skip.detach_()`) that its stashing layer stashes as a view',
    failure="RuntimeError: Can't detach views in-place. Use detach() instead",
    reported_at='the `.detach_()` call',
    when="the pop is `name = yield pop(...)`, a statement of forward's own body after none that may leave it, "
         'and the next statement is `name.detach_()`; the stash the pop takes (the latest earlier one of its '
         'name) is certainly a view on every path: made by a view operation (slicing with two or more indices, '
         'indexing a view, `view`, `view_as`, `t`, `.T`, `transpose`, `permute`, `narrow`, `select`, `squeeze`, '
         '`unsqueeze`, `expand`, `expand_as`, `movedim`, `swapaxes`, `swapdims`, `diagonal`, `unfold`, '
         '`as_strided`, `unflatten`), which fails run plainly, profiled and in a pipe; or the stashing layer\'s untouched '
         "input where that is a micro-batch, a chunk of the batch (so a view, `chunks=1` included): the layer "
         'is the first of a composition given to a pipe that builds. Measured on torchgpipe and fairscale '
         '(tests/runtime/test_detach_views.py): `reshape`/`flatten` (a copy where a view is impossible), '
         '`contiguous()`/`float()`/`to(...)` (the tensor itself, or a copy), an item of `chunk`/`split`, one '
         'index or slice of what may be a tuple, a variable index, a view on one path and a copy on another, '
         "and the input of a later layer (after layers that return their input it is still a micro-batch) "
         'are not certain, nor is the result of a call skiplint does not follow or of a torch operation it does '
         'not know: SKP901 (opt-in) says so at the `.detach_()` call. After a torch.nn layer that '
         'certainly computes, the input is not a micro-batch, and the first layer of a later partition gets '
         'a copy: nothing is reported. A '
         "composition given to a pipe is judged by each GPipe or fairscale Pipe with a literal balance, and only "
         "where the stash and the pop are in one partition: across partitions the pop gets a portal's copy and "
         'backward fails as SKP305 says instead',
    predicts=(Fails("forward", r"RuntimeError: Can't detach views in-place.*", "layer"),),
)


# -- checks ----------------------------------------------------------------------------------------
# A composition's checks replay verify_skippables over its direct children, in its order: a
# layer's names declared both ways are skipped (SKP105 reports them), a second stash or pop of a
# (namespace, name) is a redeclaration, a pop with no earlier stash is unmatched, and stashes never
# popped are reported last. Checking stops at the first layer that cannot be known. Each is given
# the composition and whether verify_skippables runs on it (a pipe, or `verify_skippables`).


@checks("composition", NESTED_SKIPPABLE)
def nested_skippables(composition: Composition, verified: bool) -> Iterator[Finding]:
    """Nested skippables whose skips fail whatever the pipe (a skip between child Sequentials is
    judged by each pipe: skiplint.rules.pipe)."""
    from skiplint import pipes

    if not composition.piped or not pipes.hides_skippables(composition):
        return  # run plain, nested skips do work; given to a pipe, they do not: which one is unknown
    for container, nested, targets, why in pipes.nested_escapes(composition)[0]:
        if nested.site is not None and targets is None:
            yield NESTED_SKIPPABLE.at(nested.site, layer=repr(nested.label), child=pipes.layer_text(container),
                                      why=why)


@checks("composition", RESTASH_WITHOUT_NAMESPACE, REPOP_WITHOUT_NAMESPACE, POP_BEFORE_STASH, STASH_NEVER_POPPED)
def direct_children(composition: Composition, verified: bool) -> Iterator[Finding]:
    """verify_skippables on the direct children. A stash nobody pops (SKP202) fails only where it
    is `verified`: a plain run tolerates it. Pops without a stash, and second stashes or pops, fail
    or misbehave in a plain run too."""
    from skiplint import pipes

    if pipes.hides_skippables(composition) and (not composition.piped or pipes.nested_escapes(composition)[1]):
        return  # which nested skip fails is unknown, or layers nested in it cannot be known
    hidden_names: set[str] = pipes.uncertain_names(composition)
    for layer in composition.layers:
        for nested in layer.nested:
            hidden_names.update(name for _, name in (*nested.stash, *nested.pop))
    layer_text, skip_text = pipes.layer_text, pipes.skip_text
    stashed: dict[SkipKey, Layer] = {}
    popped: dict[SkipKey, Layer] = {}
    ever_popped = _popped_keys(composition)
    #: An unpopped stash -> the second pop of its name in another namespace that names it (SKP204).
    repopped_instead: dict[SkipKey, tuple[SkipKey, Layer]] = {}
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
                    yield RESTASH_WITHOUT_NAMESPACE.at(layer.site, layer=layer_text(layer),
                                                       skip=skip_text(key, composition), first=layer_text(first),
                                                       name=key[1])
                continue
            stashed[key] = layer
        for key in layer.pop:
            first = popped.get(key)
            if key[1] in hidden_names:
                continue
            if first is not None:
                meant = next(((k, stasher) for k, stasher in stashed.items()
                              if k[1] == key[1] and k[0] != key[0] and k not in ever_popped
                              and k not in repopped_instead and stasher.index < layer.index), None)
                meant_for = ""  # the unpopped stash's layer, for the SKP202 that points back here
                if meant is not None:
                    repopped_instead[meant[0]] = (key, layer)
                    meant_for = layer_text(meant[1])
                    where = pipes.namespace_text(meant[0][0], composition)
                    advice = f"the stash no layer pops is layer {meant_for}'s, in {where}"
                elif key[0] is None:
                    advice = "isolate it with a Namespace"
                else:
                    advice = "isolate it, and a stash for it, in a Namespace of its own"
                yield REPOP_WITHOUT_NAMESPACE.at(layer.site, layer=layer_text(layer), skip=skip_text(key, composition),
                                                 first=layer_text(first), advice=advice, name=key[1],
                                                 meant_for=meant_for)
            elif key not in stashed:
                unmatched.setdefault(key[1], []).append((key, layer))
                yield POP_BEFORE_STASH.at(layer.site, layer=layer_text(layer), skip=skip_text(key, composition),
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
        repop = repopped_instead.get(key)
        instead = (f"; layer {layer_text(repop[1])} pops {skip_text(repop[0], composition)} instead"
                   if repop is not None else "")
        yield STASH_NEVER_POPPED.at(layer.site, layer=layer_text(layer), skip=skip_text(key, composition),
                                    instead=instead, name=key[1])


def _popped_keys(composition: Composition) -> set[SkipKey]:
    """The (namespace, name) keys some layer pops after a layer stashed them, up to the first layer
    that cannot be known: the stashes that do not end up unpopped."""
    stashed: set[SkipKey] = set()
    popped: set[SkipKey] = set()
    for layer in composition.layers:
        if layer.kind == "unknown":
            break
        if layer.kind == "skippable":
            stashed.update(layer.stash)
            popped.update(key for key in layer.pop if key in stashed)
    return popped


@checks("composition", DETACH_IN_PLACE_OF_A_VIEW, analyzer.COMPUTED_SKIP_NAME)
def detached_views(composition: Composition, verified: bool) -> Iterator[Finding]:
    """Pops detached in place whose stash is certainly a view, in a composition run plainly or
    profiled (one given to a pipe is judged by each pipe, with its partitions: skiplint.rules.pipe)."""
    if not composition.piped:
        yield from view_detaches(composition, None)


def view_detaches(composition: Composition, balance: Optional[tuple[int, ...]]) -> Iterator[Finding]:
    """Pops detached in place whose stash is certainly a view, or (in a pipe of `balance`) the input
    of the first layer, a micro-batch; in a pipe, only those in the partition of their stash. Where
    the stash may be a view, that cannot be known (SKP901)."""
    from skiplint import pipes

    if pipes.hides_skippables(composition):
        return  # which tensor a skip takes across nested layers is not followed
    for route in pipes.pops(composition, balance):
        if route.stash_layer is None or route.pop_layer is None or route.stash_partition != route.pop_partition:
            continue
        stasher, popper = composition.layers[route.stash_layer], composition.layers[route.pop_layer]
        if stasher.cls is None or popper.cls is None:
            continue
        site = popper.cls.detaches_in_place(route.name)
        view = stasher.cls.stashed_view(route.name)
        if view in ("input", "item") and (balance is None or stasher.index != 0):
            # the input itself is a view only where it is a micro-batch; an item of it may be a view anyway
            micro_batch = _micro_batch(composition, balance, stasher.index) if balance is not None else "no"
            view = "may" if view == "item" else micro_batch
        if site is None or view == "no":
            continue
        if view == "may":
            what = (f"whether layer {pipes.layer_text(stasher)} stashes "
                    f"{pipes.skip_text((route.ns, route.name), composition)} as a view (layer "
                    f"{pipes.layer_text(popper)} detaches it in place)")
            yield analyzer.COMPUTED_SKIP_NAME.at(site, what=what, name=route.name, cls=popper.cls.name)
            continue
        what = ("a view of a tensor" if view == "yes"
                else "its input, a micro-batch of the pipe (a chunk, so a view, of the batch)")
        yield DETACH_IN_PLACE_OF_A_VIEW.at(site, layer=pipes.layer_text(popper),
                                           skip=pipes.skip_text((route.ns, route.name), composition),
                                           stasher=pipes.layer_text(stasher), what=what, name=route.name,
                                           cls=popper.cls.name)  # reported in its class, not at the layer


def _micro_batch(composition: Composition, balance: tuple[int, ...], index: int) -> ViewKind:
    """Whether the input of layer `index` (not the first) of a pipe of `balance` is a micro-batch:
    never for the first layer of a later partition (it gets a copy), nor after a layer of its
    partition that certainly makes a new tensor (a torch.nn layer with parameters, or one that saves
    tensors, made with no argument that may ask it to work in place); else it may be ("may")."""
    import libcst as cst

    from skiplint import gradflow

    start = 0
    for size in balance:
        if start + size > index:
            break
        start += size
    if start == index:
        return "no"
    for layer in composition.layers[start:index]:
        node = layer.site.node if layer.site is not None else None
        if layer.kind == "plain" and (layer.label in gradflow.PARAM_LAYERS or (
                layer.label in gradflow.SAVING_LAYERS and isinstance(node, cst.Call) and not node.args)):
            return "no"
    return "may"
