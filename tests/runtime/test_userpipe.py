"""userpipe reads what a factory returned: a Sequential, a (model, sample) pair, or a real pipe of
torchgpipe or fairscale (built on CPU), with the pipe's own balance, chunks, checkpoint and devices;
and a pipe whose construction failed, from its constructor's frame."""

import warnings
from collections import OrderedDict

import pytest
import torch
from torch import nn

from skiplint.runtime import userpipe

torch.set_num_threads(1)


def layers():
    return OrderedDict([("down", nn.Linear(4, 4)), ("x (y", nn.ReLU()), ("2", nn.Linear(4, 4)),
                        ("mid", nn.Tanh()), ("up", nn.Linear(4, 2))])


def gpipe(model, **kwargs):
    from torchgpipe import GPipe

    return GPipe(model, **kwargs)


def fairscale_pipe(model, **kwargs):
    from fairscale.nn import Pipe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return Pipe(model, **kwargs)


PIPES = {"torchgpipe": gpipe, "fairscale": fairscale_pipe}


def test_a_sequential_is_itself_with_no_pipe_settings():
    model = nn.Sequential(layers())
    got = userpipe.unpack(model)
    assert got == userpipe.UserPipe(model)
    assert got.model is model and not got.is_pipe
    assert (got.sample, got.library, got.balance, got.chunks, got.checkpoint, got.devices) == (None,) * 6


def test_a_pair_gives_the_sample():
    model, sample = nn.Sequential(layers()), torch.zeros(2, 4)
    got = userpipe.unpack((model, sample))
    assert got.model is model and got.sample is sample and got.library is None


@pytest.mark.parametrize("library", sorted(PIPES))
def test_a_pipe_gives_its_sequential_under_the_childrens_names_and_its_settings(library):
    children = layers()
    pipe = PIPES[library](nn.Sequential(children), balance=[2, 2, 1], devices=["cpu", "cpu", "cpu"],
                          chunks=3, checkpoint="never")
    got = userpipe.unpack(pipe)
    assert got.library == library and got.is_pipe
    assert isinstance(got.model, nn.Sequential)
    assert [name for name, _ in got.model.named_children()] == ["down", "x (y", "2", "mid", "up"]
    assert all(a is b for a, b in zip(got.model.children(), children.values()))
    assert (got.balance, got.chunks, got.checkpoint, got.devices) == ((2, 2, 1), 3, "never", ("cpu",) * 3)
    assert got.sample is None


@pytest.mark.parametrize("library", sorted(PIPES))
def test_a_pipe_and_sample_pair(library):
    pipe = PIPES[library](nn.Sequential(layers()), balance=[5], devices=["cpu"], chunks=2)
    sample = torch.ones(4, 4)
    got = userpipe.unpack((pipe, sample))
    assert got.sample is sample
    assert (got.library, got.balance, got.chunks, got.checkpoint, got.devices) == (
        library, (5,), 2, "except_last", ("cpu",))
    # The rebuilt Sequential computes what the pipe computes.
    assert torch.equal(got.model(sample), pipe(sample))


@pytest.mark.skipif(torch.cuda.is_available(), reason="the pipe would find its devices")
@pytest.mark.parametrize("library", sorted(PIPES))
def test_a_pipe_without_its_devices_is_read_from_the_failed_constructor(library):
    """GPipe(model, balance) with no devices names every CUDA device: none here, so it raises."""
    children = layers()
    with pytest.raises(IndexError, match="too few devices") as info:
        PIPES[library](nn.Sequential(children), balance=iter([3, 2]), chunks=4, checkpoint="always")
    got = userpipe.failed_pipe(info.value)
    assert got is not None
    assert [name for name, _ in got.model.named_children()] == list(children)
    assert (got.library, got.balance, got.chunks, got.checkpoint, got.devices) == (
        library, (3, 2), 4, "always", ())


def test_an_error_outside_a_pipe_constructor_is_no_pipe():
    try:
        nn.Sequential(nn.Linear(2, 2))(torch.zeros(1, 3))
    except RuntimeError as error:
        assert userpipe.failed_pipe(error) is None
    else:
        raise AssertionError("the shapes do not fit")


def test_torch_sync_pipe_where_importable():
    sync = pytest.importorskip("torch.distributed.pipeline.sync")
    from torch.distributed import rpc

    rpc.init_rpc("worker", rank=0, world_size=1)
    try:
        pipe = sync.Pipe(nn.Sequential(layers()), chunks=2, checkpoint="never")
        got = userpipe.unpack(pipe)
        assert (got.library, got.balance, got.chunks, got.checkpoint, got.devices) == (
            "torch", (5,), 2, "never", ("cpu",))
        assert [name for name, _ in got.model.named_children()] == list(layers())
    finally:
        rpc.shutdown()


@pytest.mark.parametrize("value, shown", [(nn.Linear(2, 2), "Linear"), ((1, 2), "tuple"), (None, "NoneType")])
def test_anything_else_is_not_a_model(value, shown):
    with pytest.raises(userpipe.NotAModel) as info:
        userpipe.unpack(value)
    assert str(info.value) == f"{shown}, not an nn.Sequential, a pipe (GPipe, Pipe) or a (model, sample) pair"
