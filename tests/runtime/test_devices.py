"""Where a run puts its partitions and stages when nothing is given: at least two partitions,
and no two nccl processes on one GPU. Checked on the CPU by setting the GPU count."""

from __future__ import annotations

import types
import warnings

import pytest
import torch

from skiplint.runtime import building, pipelining
from skiplint.runtime.errors import hide_library_notices

torch.set_num_threads(1)


@pytest.mark.parametrize(("gpus", "partitions"), [(0, 2), (1, 2), (2, 2), (4, 4)])
def test_a_run_without_balance_or_devices_has_at_least_two_partitions(
        monkeypatch: pytest.MonkeyPatch, gpus: int, partitions: int) -> None:
    # One GPU used to give one partition: no skip crossed a boundary, and the run checked nothing.
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    assert building.default_partitions() == partitions
    assert building.even_balance(6, building.default_partitions()) == ((3, 3) if partitions == 2 else (2, 2, 1, 1))


def test_stages_that_would_share_a_gpu_run_on_the_cpu() -> None:
    device = torch.device
    assert pipelining.stage_devices([device("cuda", 0), device("cuda", 0)]) == ["cpu", "cpu"]
    assert pipelining.stage_devices([device("cuda", 0), device("cuda", 1), device("cuda", 0)]) == ["cpu"] * 3
    assert pipelining.stage_devices([device("cuda"), device("cuda", 0)]) == ["cpu", "cpu"]
    assert pipelining.stage_devices([device("cuda", 0), device("cuda", 1)]) == ["cuda:0", "cuda:1"]
    assert pipelining.stage_devices([device("cpu"), device("cpu")]) == ["cpu", "cpu"]


def test_the_notices_of_the_run_itself_are_hidden_and_nothing_else() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        hide_library_notices()
        warnings.warn("Attempting to run cuBLAS, but there was no current CUDA context! Attempting to set the "
                      "primary context... (Triggered internally at CublasHandlePool.cpp:335.)", UserWarning)
        warnings.warn("Attempting to run cuBLAS, but there was no current CUDA context!", DeprecationWarning)
        warnings.warn_explicit("TypedStorage is deprecated.", UserWarning, "stream.py", 99, module="torchgpipe.stream")
        warnings.warn_explicit("Pipe has been upstreamed.", DeprecationWarning, "pipe.py", 264,
                               module="fairscale.nn.pipe.pipe")
        warnings.warn_explicit("a notice of a model module", UserWarning, "torchgpipe_unet.py", 3,
                               module="torchgpipe_unet")
        warnings.warn("the model's own notice", UserWarning)
    assert [(type(w.message), str(w.message)) for w in seen] == [
        (DeprecationWarning, "Attempting to run cuBLAS, but there was no current CUDA context!"),
        (UserWarning, "a notice of a model module"),
        (UserWarning, "the model's own notice")]


class _Cuda:
    """torch.cuda as a machine with these GPUs (by UUID) shows it."""

    def __init__(self, uuids: list[str]) -> None:
        self.uuids = uuids

    def is_available(self) -> bool:
        return bool(self.uuids)

    def device_count(self) -> int:
        return len(self.uuids)

    def get_device_properties(self, index: int) -> object:
        return types.SimpleNamespace(uuid=self.uuids[index])


@pytest.mark.parametrize(("mine", "local_rank", "peer", "expected"), [
    (["GPU-a", "GPU-b"], 0, "GPU-b", True),   # two GPUs, one rank on each
    (["GPU-a"], 0, "GPU-a", False),           # two launchers on a one-GPU machine
    (["GPU-a"], 1, "GPU-a", False),           # more ranks on this machine than it has GPUs
    (["GPU-a"], 0, "cpu", False),             # a peer without a GPU
    ([], 0, "cpu", False),                    # no GPU anywhere
])
def test_ranks_take_nccl_only_with_a_gpu_each(mine: list[str], local_rank: int, peer: str, expected: bool) -> None:
    from torch.distributed import HashStore

    from skiplint.runtime.board import PREFIX as _PREFIX, one_gpu_per_rank

    store = HashStore()
    store.set(f"{_PREFIX}seat/1", peer)
    fake = types.SimpleNamespace(cuda=_Cuda(mine))
    assert one_gpu_per_rank(fake, store, 0, 2, local_rank) is expected
    published = store.get(f"{_PREFIX}seat/0").decode()
    assert published == (mine[local_rank] if local_rank < len(mine) else "cpu")
