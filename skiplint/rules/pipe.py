"""SKP3xx: a pipe and its partitions: GPipe, fairscale's Pipe, torch's Pipe and the balancers."""

from __future__ import annotations

from skiplint.rules.base import Rule


BALANCE_MISMATCH = Rule(
    code='SKP301', name='balance-mismatch',
    template='balance sums to {total} but the composition has {count} layers',
    summary='balance does not sum to the number of layers of the composition',
    failure='BalanceError: module and sum of balance have different length',
    reported_at='the pipe call',
    predicts=(r'BalanceError: module and sum of balance have different length.*',),
)


CROSS_PARTITION_SKIP = Rule(
    code='SKP302', name='cross-partition-skip',
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
         'an autograd node that saved tensors for backward, decided by dataflow through forward (operations, '
         'views, attributes of `self`, methods reached by `yield from`): balance_by_time detaches each '
         "layer's input and runs each layer's backward alone, so the popping layer's backward reaches what "
         "the stashing layer's backward freed. Measured on torchgpipe and fairscale: a stash of the untouched "
         'input, of `h.detach()`, of a tensor computed under `torch.no_grad()`, from a constant, apart from '
         'the output or only by `+`, `-` and views, and a pop that is discarded, detached or used under '
         "no_grad profile fine; a node made only from the layer's input (`h = x * 2`) counts when a torch.nn "
         'layer with parameters comes before. balance_by_size profiles CUDA memory with forward passes only '
         'and is not reported',
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
    when="the pop's tensor is discarded (`yield pop(name)` as a statement), or assigned to a name that "
         'forward reads only as `name.detach()` or under `torch.no_grad()` (measured the same on both '
         "libraries: no gradient reaches the portal), and the pipe's literal balance puts the pop in another "
         'partition than its stash',
    supersedes=('SKP116',),
    predicts=(r'AssertionError \(raised in (?:.*/)?skip/portal\.py\)',),
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
