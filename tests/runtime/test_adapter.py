"""The stage adapter (skiplint.runtime.adapter): the skips each stage boundary carries are those of
the library's inspect_skip_layout and of the static route table, and the stages run one after the
other compute the model's own output and gradients, with the user's modules and parameter names."""

from __future__ import annotations

import importlib.util
import itertools
from collections import OrderedDict

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from skiplint import layout  # noqa: E402
from skiplint.runtime import adapter, backends, pipelining  # noqa: E402

LIBRARIES = {"torchgpipe": "torchgpipe.skip", "fairscale": "fairscale.nn.pipe.skip"}

#: Every case the adapter handles, in one model of 11 layers: the pipeline's own input stashed by
#: layer 0 and popped by the last, two skips stashed by one layer ('a', 'b'), a pop that may fall in
#: the stash's own stage, and two skips named 'skip' isolated by namespaces. Every skip has a
#: namespace of its own: the libraries' inspect_skip_layout sorts the skips of a partition by
#: (source, namespace, name) and fails comparing a Namespace with the default namespace (None).
MODEL = '''
import torch
from torch import nn
from {skip} import Namespace, pop, skippable, stash


@skippable(stash=["input"])
class KeepInput(nn.Module):
    def forward(self, x):
        yield stash("input", x)
        return x


@skippable(stash=["a", "b"])
class StashTwo(nn.Module):
    def forward(self, x):
        yield stash("a", torch.tanh(x))
        yield stash("b", x * 2)
        return x


@skippable(pop=["a"])
class PopA(nn.Module):
    def forward(self, x):
        a = yield pop("a")
        return x * a


@skippable(pop=["b"])
class PopB(nn.Module):
    def forward(self, x):
        b = yield pop("b")
        return x - b


@skippable(pop=["input"])
class PopInput(nn.Module):
    def forward(self, x):
        identity = yield pop("input")
        return x + identity


@skippable(stash=["skip"])
class Down(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        x = self.linear(x)
        yield stash("skip", x)
        return torch.relu(x)


@skippable(pop=["skip"])
class Up(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + 3 * skip


outer, inner, first, pair = Namespace(), Namespace(), Namespace(), Namespace()
model = nn.Sequential(KeepInput().isolate(first), nn.Linear(4, 4), StashTwo().isolate(pair), nn.Linear(4, 4),
                      PopA().isolate(pair), Down().isolate(outer), Down().isolate(inner), Up().isolate(inner),
                      Up().isolate(outer), PopB().isolate(pair), PopInput().isolate(first))
plain_names = nn.Sequential(KeepInput(), nn.Linear(4, 4), StashTwo(), nn.Linear(4, 4), PopA(), nn.Linear(4, 4),
                            nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4), PopB(), PopInput())
'''


@pytest.fixture(params=sorted(LIBRARIES))
def source(request, tmp_path):
    pytest.importorskip(LIBRARIES[request.param].split(".")[0])
    path = tmp_path / f"model_{request.param}.py"
    path.write_text(MODEL.format(skip=LIBRARIES[request.param]))
    spec = importlib.util.spec_from_file_location(f"adapter_model_{request.param}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return request.param, str(path), module


def balances(layers, stages):
    for cuts in itertools.combinations(range(1, layers), stages - 1):
        bounds = (0, *cuts, layers)
        yield tuple(b - a for a, b in zip(bounds, bounds[1:]))


BALANCES = [b for n in (1, 2, 3, 4) for b in balances(11, n)]


def library_layout(lib, model, balance):
    """inspect_skip_layout of the library over the same partitions: {(ns, name): (src, dst)}."""
    module = importlib.import_module(LIBRARIES[lib] + ".layout")
    layers = list(model.named_children())
    partitions, start = [], 0
    for size in balance:
        partitions.append(nn.Sequential(OrderedDict(layers[start:start + size])))
        start += size
    return dict(module.inspect_skip_layout(partitions).by_ns_name)


@pytest.mark.parametrize("name", ["model", "plain_names"])
def test_each_boundary_carries_what_the_library_layout_routes_across_it(source, name):
    lib, _path, module = source
    model = getattr(module, name)
    for balance in BALANCES:
        plan = adapter.plan(model, balance)
        routes = library_layout(lib, model, balance)
        assert {s.key: (s.stash_stage, s.pop_stage) for s in plan.skips} == routes, balance
        for boundary in range(len(balance) - 1):
            expected = {key for key, (src, dst) in routes.items() if src <= boundary < dst}
            assert {s.key for s in plan.carried(boundary)} == expected, (balance, boundary)


@pytest.mark.parametrize("name", ["model", "plain_names"])
def test_the_plan_is_the_static_route_table(source, name):
    lib, path, module = source
    for balance in [(3, 4, 4), (1, 1, 9), (2, 3, 3, 3), (5, 6)]:
        plan = adapter.plan(getattr(module, name), balance)
        entries = [(s.namespace, s.name, s.stash_layer) for s in plan.skips]
        labels = layout.label_namespaces(entries)
        static = {(r["ns"], r["name"]): (r["stash_partition"], r["pop_partition"])
                  for r in layout.route_table(path, name, balance)}
        assert {(labels[s.namespace], s.name): (s.stash_stage, s.pop_stage) for s in plan.skips} == static


def test_the_cases_the_issue_names_are_in_the_model(source):
    _lib, _path, module = source
    plan = adapter.plan(module.model, (1, 4, 2, 4))
    carried = [[(s.name, s.stash_layer) for s in plan.carried(b)] for b in range(3)]
    assert carried == [
        [("input", 0)],                                      # the pipeline's own input, from stage 0
        [("input", 0), ("b", 2)],                            # 'b' is popped two stages later
        [("input", 0), ("b", 2), ("skip", 5), ("skip", 6)],  # several skips, two of one name in two namespaces
    ]
    assert [(s.name, s.stash_stage, s.pop_stage) for s in plan.skips if s.name == "a"] == [("a", 1, 1)]


def plain(model, x):
    model.zero_grad()
    out = model(x)
    (out * torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return out.detach(), {name: p.grad.clone() for name, p in model.named_parameters()}


def staged(model, balance, x):
    model.zero_grad()
    stages = adapter.stages(model, adapter.plan(model, balance))
    *_, (_, out) = adapter.run_in_sequence(stages, x)
    (out * torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    grads = {name: p.grad.clone() for stage in stages for name, p in stage.named_parameters()}
    return out.detach(), grads


def test_stages_in_sequence_compute_the_models_output_and_gradients(source):
    torch.set_num_threads(1)
    _lib, _path, module = source
    model = module.model.double()
    x = torch.randn(3, 4, dtype=torch.float64)
    reference = plain(model, x)
    for balance in BALANCES[::7]:
        out, grads = staged(model, balance, x)
        assert torch.equal(out, reference[0]), balance
        assert grads.keys() == reference[1].keys(), balance
        for name, grad in grads.items():
            assert torch.equal(grad, reference[1][name]), (balance, name)


def test_stages_hold_the_users_modules_under_their_own_names(source):
    _lib, _path, module = source
    model = module.model
    stages = adapter.stages(model, adapter.plan(model, (3, 4, 4)))
    assert [list(dict(s.named_children())) for s in stages] == [["0", "1", "2"], ["3", "4", "5", "6"],
                                                                ["7", "8", "9", "10"]]
    assert all(child is model[int(name)] for s in stages for name, child in s.named_children())
    names = [name for s in stages for name, _ in s.named_parameters()]
    assert names == [name for name, _ in model.named_parameters()]
    merged = {k: v for s in stages for k, v in s.state_dict().items()}
    assert merged.keys() == model.state_dict().keys()


def test_each_stage_returns_its_output_then_the_skips_in_flight(source):
    _lib, _path, module = source
    model = module.model
    plan = adapter.plan(model, (1, 6, 4))
    first, second, _third = adapter.stages(model, plan)
    x = torch.randn(2, 4)
    sent = first(x)
    assert isinstance(sent, tuple) and len(sent) == 2 and torch.equal(sent[1], x)
    passed = second(*sent)
    assert [s.name for s in plan.carried(1)] == ["input", "b", "skip", "skip"]
    assert len(passed) == 5 and torch.equal(passed[1], x)


def test_a_pop_with_no_stash_before_it_has_no_plan():
    pytest.importorskip("torchgpipe")
    from torchgpipe.skip import pop, skippable

    @skippable(pop=["x"])
    class Pop(nn.Module):
        def forward(self, x):
            value = yield pop("x")
            return x + value

    model = nn.Sequential(nn.Linear(2, 2), Pop())  # noqa: SKP201
    with pytest.raises(adapter.NoPlan, match=r"^layer '1' \(Pop\) pops 'x' but no earlier layer stashes it$"):
        adapter.plan(model, (1, 1))
    with pytest.raises(adapter.NoPlan, match=r"^balance \[1\] sums to 1 but the model has 2 layers$"):
        adapter.plan(model, (1,))


def test_a_skip_that_is_no_tensor_is_the_backends_limit_before_the_run():
    pytest.importorskip("torchgpipe")
    from torchgpipe.skip import pop, skippable, stash

    from skiplint.runtime.errors import CannotRun

    @skippable(stash=["mask"])
    class NoMask(nn.Module):
        def forward(self, x):
            yield stash("mask", None)
            return x

    @skippable(pop=["mask"])
    class UseMask(nn.Module):
        def forward(self, x):
            mask = yield pop("mask")
            return x if mask is None else x * mask

    model = nn.Sequential(NoMask(), nn.Linear(2, 2), UseMask())
    with pytest.raises(CannotRun) as raised:
        pipelining.check_carried(model, (1, 2), torch.ones(4, 2), 2)
    assert str(raised.value) == (
        "the pipelining backend cannot run this model: stage 0 would send its skip 'mask' as a NoneType, not a "
        "tensor; torch.distributed.pipelining carries only tensors between stages")
    pipelining.check_carried(model, (3,), torch.ones(4, 2), 2)  # one stage sends nothing


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_routes_of_a_layer_with_two_pops_come_in_the_order_of_their_names(name: str) -> None:
    """The libraries keep a layer's names in a set, whose iteration order follows the hash seed:
    the routes are given by name, whatever order poppable() yields them in (both orders tried)."""
    from skiplint.runtime import backends

    skip = importlib.import_module(LIBRARIES[name])
    torch.set_num_threads(1)

    @skip.skippable(stash=["a", "b"])
    class Two(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            yield skip.stash("a", x)
            yield skip.stash("b", x)
            return x

    @skip.skippable(pop=["a", "b"])
    class Both(nn.Module):
        def forward(self, x):  # type: ignore[no-untyped-def]
            a = yield skip.pop("a")
            b = yield skip.pop("b")
            return x + a + b

    lib = backends.load(name)
    for reverse in (False, True):
        model = nn.Sequential(Two(), Both())
        tmpl = model[1].poppable

        def poppable(tmpl=tmpl, reverse=reverse):  # type: ignore[no-untyped-def]
            return iter(sorted(tmpl(), key=lambda key: key[1], reverse=reverse))

        model[1].poppable = poppable
        routes = backends.layout_routes(model, lib, [nn.Sequential(model[0]), nn.Sequential(model[1])])
        assert [(r.name, r.src_layer, r.dst_layer) for r in routes] == [("a", "0", "1"), ("b", "0", "1")]
