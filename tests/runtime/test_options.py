"""Usage errors are found from the options alone, before any of the model's code runs."""

import os

import pytest

from skiplint.runtime.options import Options, check

from .conftest import FIXTURES

UNET = os.path.join(FIXTURES, "unet.py") + ":build"


@pytest.mark.parametrize("options, message", [
    ({"chunks": 0}, "--chunks 0: the number of micro-batches must be at least 1"),
    ({"chunks": -2}, "--chunks -2: the number of micro-batches must be at least 1"),
    ({"timeout": 0}, "--timeout 0: the seconds each step may take must be more than 0"),
    ({"timeout": -1.5}, "--timeout -1.5: the seconds each step may take must be more than 0"),
    ({"timeout": float("inf")}, "--timeout inf: the seconds each step may take must be more than 0"),
    ({"balance": (3, 0)}, "--balance 3,0: every entry must be at least 1, not 0"),
    ({"balance": ()}, "--balance is empty: give positive integers, e.g. --balance 3,3"),
    ({"input_shape": (4, -1)}, "--input-shape 4,-1: every entry must be at least 1, not -1"),
    ({"checkpoint": "sometimes"}, "--checkpoint must be one of never, except_last, always, not 'sometimes'"),
    ({"backend": "deepspeed"}, "--backend must be auto or one of torchgpipe, fairscale, pipelining, not 'deepspeed'"),
    ({"balance": (2, 2, 2), "devices": ("cpu", "cpu")},
     "--balance 2,2,2 has 3 partitions but --devices cpu,cpu names 2: give one device for every partition, "
     "or a single device for all of them"),
    ({"sample": "nowhere.py:make"}, "--sample: no such file: nowhere.py"),
])
def test_usage_errors(options, message):
    with pytest.raises(ValueError) as error:
        check(UNET, **options)
    assert str(error.value) == message


@pytest.mark.parametrize("target, message", [
    ("nowhere.py:build", "no such file: nowhere.py"),
    ("unet.py", "target 'unet.py' is not path/to/file.py:NAME or package.module:NAME"),
])
def test_targets(target, message):
    with pytest.raises(ValueError) as error:
        check(target)
    assert str(error.value) == message


def test_one_device_for_every_partition_is_accepted():
    options = check(UNET, balance=(3, 2, 2), devices=("cpu",))
    assert (options.balance, options.devices) == ((3, 2, 2), ("cpu",))


def test_options_travel_to_the_child_unchanged():
    options = check(UNET, balance=(3, 3), input_shape=(4, 3, 8, 8), devices=("cpu",), checkpoint="never", timeout=7)
    assert Options.from_dict(options.to_dict()) == options
    assert options.timeout == 7.0 and options.checkpoints == ("never",)
