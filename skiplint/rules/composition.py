"""SKP2xx: one composition. What `verify_skippables` (called by every pipe's constructor) and
the skip tracker raise."""

from __future__ import annotations

from skiplint.rules.base import Rule


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
    predicts=(r"RuntimeError: '(?P<name>.*)' has not been stashed",
              r"\* '(?P<layer>.*)' declared '(?P<name>.*)' as poppable but it was not stashed"),
)


STASH_NEVER_POPPED = Rule(
    code='SKP202', name='stash-never-popped',
    template='layer {layer} stashes {skip} but no later layer pops it',
    summary='a layer stashes (ns, name) and no later layer pops it',
    failure="TypeError: no module declared '{name}' as poppable but stashed",
    reported_at="the stashing layer's expression",
    when='the composition may be verified: it is given to a pipe or `verify_skippables`, or it leaves its '
         'module (bound at module level, or returned by a module-level function, so an importer may pipe it). '
         'A model built and only run plainly inside a function is not reported: the skip tracker tolerates a '
         'stash nobody pops',
    predicts=(r"\* no module declared '(?P<name>.*)' as poppable but stashed",),
)


RESTASH_WITHOUT_NAMESPACE = Rule(
    code='SKP203', name='restash-without-namespace',
    template='layer {layer} stashes {skip} again (first stashed by layer {first}); isolate it with a Namespace',
    summary='(ns, name) is stashed again by a second layer without namespace isolation',
    failure="TypeError: redeclared '{name}' as stashable but not isolated by namespace",
    reported_at='the second stashing layer',
    predicts=(r"\* '(?P<layer>.*)' redeclared '(?P<name>.*)' as stashable but not isolated by namespace",),
)


REPOP_WITHOUT_NAMESPACE = Rule(
    code='SKP204', name='repop-without-namespace',
    template='layer {layer} pops {skip} again (first popped by layer {first}); isolate it with a Namespace',
    summary='(ns, name) is popped again by a second layer without namespace isolation',
    failure="TypeError: redeclared '{name}' as poppable but not isolated by namespace",
    reported_at='the second popping layer',
    predicts=(r"\* '(?P<layer>.*)' redeclared '(?P<name>.*)' as poppable but not isolated by namespace",),
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
