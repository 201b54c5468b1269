"""The static route table of `skiplint layout` equals torchgpipe's own inspect_skip_layout."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
torchgpipe = pytest.importorskip("torchgpipe")

from torchgpipe import GPipe  # noqa: E402
from torchgpipe.skip.skippable import Skippable  # noqa: E402

from skiplint import layout  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
UNET = REPO / "fixtures" / "compositions" / "unet.py"


def load_fixture():
    spec = importlib.util.spec_from_file_location("skiplint_unet_fixture", UNET)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not run as __main__: its pipes are not built
    return module


def runtime_table(model, balance):
    """inspect_skip_layout as a real GPipe computes it (`_skip_layout`), namespaces labelled as the
    static table labels them."""
    pipe = GPipe(model, balance=list(balance), devices=["cpu"] * len(balance), chunks=2)
    stash_layer = {}
    for index, layer in enumerate(model):
        if isinstance(layer, Skippable):
            for key in layer.stashable():
                stash_layer[key] = index
    entries = [(ns, name, stash_layer.get((ns, name))) for (ns, name) in pipe._skip_layout.by_ns_name]
    labels = layout.label_namespaces(entries)
    return {(labels[ns], name): tuple(route) for (ns, name), route in pipe._skip_layout.by_ns_name.items()}


def static_table(name, balance):
    rows = layout.route_table(str(UNET), name, balance)
    return {(r["ns"], r["name"]): (r["stash_partition"], r["pop_partition"]) for r in rows}


@pytest.mark.parametrize("name, depth, balance", [
    ("model", 3, (3, 2, 2)), ("model", 3, (1, 5, 1)), ("model", 3, (7,)),
    ("deep", 4, (4, 3, 2)), ("deep", 4, (2, 2, 2, 3)),
])
def test_static_routes_equal_inspect_skip_layout(name, depth, balance):
    torch.set_num_threads(1)
    module = load_fixture()
    model = module.unet(depth)
    assert static_table(name, balance) == runtime_table(model, balance)


def test_the_bundled_unet_runs_through_gpipe():
    torch.set_num_threads(1)
    module = load_fixture()
    model = module.unet(3)
    pipe = GPipe(model, balance=[3, 2, 2], devices=["cpu"] * 3, chunks=2)
    x = torch.randn(4, 5)
    assert torch.allclose(pipe(x), model(x))



REUSED = """\
from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Down(nn.Module):
    def __init__(self, mark):
        super().__init__()
        self.mark = mark

    def forward(self, x):
        yield stash("skip", x + self.mark)
        return x


@skippable(pop=["skip"])
class Up(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip


model = nn.Sequential(Down(1.0), Down(2.0), nn.ReLU(), Up(), Up())
"""


def test_a_name_reused_without_a_namespace_runs_as_layout_draws_it(tmp_path):
    """Down, Down, ReLU, Up, Up with one name and no Namespace: layout draws layer 1 -> layer 3
    and nothing into layer 4 (SKP203, SKP204). Run plainly, layer 3 gets layer 1's tensor, layer 4
    finds nothing, and GPipe refuses the model."""
    torch.set_num_threads(1)
    path = tmp_path / "reused.py"
    path.write_text(REUSED)
    rows = layout.route_table(str(path), "model")
    assert [(r["stash_layer"], r["pop_layer"]) for r in rows] == [(1, 3), (None, 4)]
    spec = importlib.util.spec_from_file_location("skiplint_reused_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x = torch.randn(2, 4)
    upto_first_pop = torch.nn.Sequential(*list(module.model)[:4])
    assert torch.equal(upto_first_pop(x), torch.relu(x) + (x + 2.0))  # layer 1's stash, not layer 0's
    with pytest.raises(RuntimeError, match="'skip' has not been stashed"):
        module.model(x)
    with pytest.raises(TypeError, match="redeclared 'skip' as stashable but not isolated by namespace"):
        GPipe(module.model, balance=[3, 2], devices=["cpu", "cpu"], chunks=1)
