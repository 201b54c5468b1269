"""The pipelining backend: the stage adapter's plan and a ScheduleGPipe run in one gloo process per stage."""

import os

import pytest

from skiplint.runtime import pipelining, verify

from .conftest import FIXTURES
from .test_pipelining_verdict import verdict


def test_unet_three_stages_match_the_plain_model():
    report = verify(os.path.join(FIXTURES, "unet.py") + ":build", backend="pipelining", balance=(2, 2, 2),
                    timeout=180)
    assert report.exit_code == 0, report.to_text()
    skips = {(x.skip, x.src_partition, x.dst_partition) for x in report.crossings if x.skip}
    assert skips == {("skip", 0, 2), ("skip", 0, 1)}
    assert report.routes_agree and report.static_routes is not None
    assert [c.mode for c in report.comparisons] == ["pipelining"] and report.comparisons[0].ok


def test_broken_model_is_stopped_before_the_processes():
    report = verify(os.path.join(FIXTURES, "skp201_pop_before_stash.py") + ":build", backend="pipelining")
    assert report.exit_code == 1
    assert [s.status for s in report.steps if s.name.startswith("pipelining")] == ["skipped"]
    assert all(o.predicted for o in report.observations)


@pytest.mark.gpu
def test_unet_on_gpus():
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices for nccl stages")
    report = verify(os.path.join(FIXTURES, "unet.py") + ":build", backend="pipelining", timeout=300)
    assert report.exit_code == 0, report.to_text()


INPUT_STASH = """\
import torch
from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["identity"])
class Keep(nn.Module):
    def forward(self, x):
        yield stash("identity", x)
        return x


@skippable(pop=["identity"])
class Add(nn.Module):
    def forward(self, x):
        identity = yield pop("identity")
        return x + identity


def build():
    return nn.Sequential(Keep(), nn.Linear(4, 4), nn.Linear(4, 4), Add()), torch.ones(4, 4)
"""


def test_a_skip_of_the_pipelines_own_input_is_carried_from_stage_0(tmp_path):
    """The model stashes the pipeline's input and pops it in the second stage: the first stage
    sends it on beside its output, and the backend reaches torchgpipe's verdict (clean)."""
    path = tmp_path / "input_stash.py"
    path.write_text(INPUT_STASH)
    assert verify(f"{path}:build", checkpoint="never").exit_code == 0
    report = verify(f"{path}:build", backend="pipelining", timeout=180)
    assert report.exit_code == 0, report.to_text()
    assert [(x.value, x.src_partition, x.dst_partition, x.skip) for x in report.crossings] == [
        ("output of stage 0", 0, 1, None), ("layer 0 -> layer 3", 0, 1, "identity")]
    assert report.routes_agree and report.comparisons[0].ok


def test_the_balance_fixture_with_its_tied_pipes_balance():
    """skp301_balance.py's `build` is tied by the lint to the pipe of `pipe()`, whose balance [2, 2]
    leaves a layer out: with no --balance, both backends take that balance and meet SKP301."""
    target = os.path.join(FIXTURES, "skp301_balance.py") + ":build"
    reference = verify(target, checkpoint="never")
    report = verify(target, backend="pipelining", timeout=180)
    assert verdict(report) == verdict(reference), report.to_text()
    assert report.balance == reference.balance == (2, 2)


def test_the_balance_fixture_at_the_even_balance():
    """skp301_balance.py at [3, 2]: its skip carries the pipeline's input past stage 0; the stages
    run and match the plain model, and the verdict is torchgpipe's."""
    target = os.path.join(FIXTURES, "skp301_balance.py") + ":build"
    reference = verify(target, checkpoint="never", balance=(3, 2))
    report = verify(target, backend="pipelining", balance=(3, 2), timeout=180)
    assert verdict(report) == verdict(reference), report.to_text()
    assert report.balance == (3, 2) and report.reason is None
    assert [(s.name, s.status) for s in report.steps if s.name.startswith("pipelining")] == [
        ("pipelining ScheduleGPipe (2 processes)", "ok")]
    assert [c.ok for c in report.comparisons] == [True]


NONE_SKIP = """\
import torch
from torch import nn
from torchgpipe.skip import pop, skippable, stash


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


def build():
    return nn.Sequential(NoMask(), nn.Linear(4, 4), UseMask(), nn.Linear(4, 4)), torch.ones(4, 4)
"""


def test_a_skip_that_is_no_tensor_is_the_backends_limit(tmp_path):
    """torchgpipe carries a None skip; torch.distributed.pipelining carries tensors only. That is
    said before any stage process starts, as the backend's limit (exit 2), not as a finding."""
    path = tmp_path / "none_skip.py"
    path.write_text(NONE_SKIP)
    assert verify(f"{path}:build", checkpoint="never").exit_code == 0
    report = verify(f"{path}:build", backend="pipelining", timeout=180)
    assert report.reason == (
        "the pipelining backend cannot run this model: stage 0 would send its skip 'mask' as a NoneType, not a "
        "tensor; torch.distributed.pipelining carries only tensors between stages")
    assert report.exit_code == 2 and report.observations == []
    assert [(s.name, s.status) for s in report.steps][-1] == ("pipelining ScheduleGPipe (2 processes)", "error")


def test_the_culprit_is_the_stage_that_says_why():
    lost = (pipelining.LOST, 0, "stage forward", "RuntimeError: Connection closed by peer [127.0.0.1]:6272")
    raised = (pipelining.RAISED, 2, "stage backward", "ValueError: the stage's own error")
    assert pipelining.culprit([lost, raised]) == raised
    assert pipelining.culprit([raised, lost]) == raised
    assert pipelining.culprit([lost]) == lost
