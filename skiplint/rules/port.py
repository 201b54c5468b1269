"""SKP5xx: porting to torch.distributed.pipelining. What `skiplint port` cannot carry over as written.

Every rule here is opt-in: the code runs as it is under GPipe and Pipe, and each finding is about
the move to torch.distributed.pipelining, which `skiplint port` refuses in the same words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from skiplint.findings import Finding
from skiplint.rules.base import Rule, checks

if TYPE_CHECKING:
    import libcst as cst

    from skiplint.facts import Composition, Pipe

#: The family's heading in docs/rules.md, and what its rules predict (rendered by skiplint.rules.doc).
TITLE = 'SKP5xx: porting to torch.distributed.pipelining'
BLURB = 'What `skiplint port` cannot carry over as written (opt-in; the code runs under GPipe and Pipe).'


NON_TENSOR_SKIP = Rule(
    code='SKP501', name='port-non-tensor-skip',
    template="stash('{name}', None) crosses from partition {src} to {dst}: torch.distributed.pipelining carries "
             "only tensors between stages; stash a tensor, or keep the stash and its pop in one stage",
    summary='a skip stashed as None that a pipe\'s balance carries across partitions, which a pipelining '
            'stage cannot send to the next',
    failure='the port cannot run: a stage would send None to its neighbour (`skiplint port` refuses it)',
    reported_at='the stash(...) call',
    when='the pipe\'s balance is known and puts the stash and its pop in different partitions (a stash of '
         'None inside one partition never leaves its stage)',
    opt_in=True,
)


DEFERRED_BATCH_NORM = Rule(
    code='SKP502', name='port-batch-norm',
    template='{pipe}(deferred_batch_norm=True) has no counterpart in torch.distributed.pipelining: BatchNorm '
             'running statistics would be updated once per micro-batch instead of once per batch',
    summary="a pipe built with deferred_batch_norm=True, whose batch statistics a pipelining schedule does not "
            "keep",
    failure='the ported model trains with other BatchNorm running statistics than under GPipe',
    reported_at='the deferred_batch_norm argument',
    distinct_by=(),
    opt_in=True,
)


CHECKPOINT_MODE = Rule(
    code='SKP503', name='port-checkpoint-mode',
    template="{pipe}(checkpoint='{mode}') has no counterpart in torch.distributed.pipelining: wrap the layers "
             'to recompute in torch.utils.checkpoint.checkpoint inside their forward instead',
    summary="a pipe given checkpoint='always' or 'except_last', a mode the pipelining schedules do not have",
    failure='the ported model keeps every activation: more memory than under GPipe',
    reported_at='the checkpoint argument',
    distinct_by=(),
    opt_in=True,
)


DROPOUT = Rule(
    code='SKP504', name='port-dropout',
    template='{layer} draws other random masks in each stage process: the port equals the GPipe run only in '
             'distribution, and `skiplint port --check` cannot compare it; compare with the model in eval() '
             'mode',
    summary='a dropout layer in a composition to port: equal to GPipe only in distribution',
    failure='`skiplint port --check` finds outputs that differ (random masks)',
    reported_at='the dropout layer',
    distinct_by=(),
    opt_in=True,
)

#: torch.nn's dropout classes, by name.
_DROPOUTS = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
#: How the pipes are named in the messages.
_PIPE_NAMES = {"GPipe": "GPipe", "FairscalePipe": "Pipe", "TorchPipe": "Pipe"}


@checks("pipe", NON_TENSOR_SKIP)
def none_across_partitions(pipe: Pipe) -> Iterator[Finding]:
    from skiplint import pipes

    composition = pipe.composition
    if (composition is None or pipe.balance is None or sum(pipe.balance) != len(composition.layers)
            or pipes.hides_skippables(composition)):
        return
    for route in pipes.routes(composition, pipe.balance):
        if route.stash_layer is None or route.pop_partition is None or route.stash_partition == route.pop_partition:
            continue
        stashing = composition.layers[route.stash_layer].cls
        for name, site in stashing.none_stashes if stashing is not None else ():
            if name == route.name:
                yield NON_TENSOR_SKIP.at(site, name=name, src=route.stash_partition, dst=route.pop_partition)


def _keyword(pipe: Pipe, name: str) -> Optional[cst.Arg]:
    import libcst as cst

    node = pipe.site.node if pipe.site is not None else None
    if not isinstance(node, cst.Call):
        return None
    return next((arg for arg in node.args if arg.keyword is not None and arg.keyword.value == name), None)


@checks("pipe", DEFERRED_BATCH_NORM, CHECKPOINT_MODE)
def pipe_options(pipe: Pipe) -> Iterator[Finding]:
    """Only what the call says: a pipe's default checkpoint mode is no choice of the user's."""
    import libcst as cst

    from skiplint.facts import Site

    if pipe.kind not in _PIPE_NAMES or pipe.site is None:
        return
    name = _PIPE_NAMES[pipe.kind]
    deferred = _keyword(pipe, "deferred_batch_norm")
    if deferred is not None and isinstance(deferred.value, cst.Name) and deferred.value.value == "True":
        yield DEFERRED_BATCH_NORM.at(Site(deferred, pipe.site.locator), pipe=name)
    mode = _keyword(pipe, "checkpoint")
    if mode is not None and pipe.checkpoint in ("always", "except_last"):
        yield CHECKPOINT_MODE.at(Site(mode, pipe.site.locator), pipe=name, mode=pipe.checkpoint)


@checks("composition", DROPOUT)
def dropout_layers(composition: Composition, verified: bool) -> Iterator[Finding]:
    for layer in composition.layers:
        if layer.site is not None and layer.label.split(".")[-1] in _DROPOUTS:
            yield DROPOUT.at(layer.site, layer=layer.label)
