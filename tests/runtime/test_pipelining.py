"""The pipelining backend: fx split routes and a ScheduleGPipe run in one gloo process per stage."""

import os

import pytest

from skiplint.runtime import pipelining, stage, verify

from .conftest import FIXTURES


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


def test_a_stage_given_the_pipelines_own_input_is_the_backends_restriction(tmp_path):
    """The model stashes the pipeline's input and pops it in the second stage: torchgpipe runs it
    clean; torch.distributed.pipelining gives that input to its first stage only. The report names
    the restriction and the stage's own error (the first stage only saw 'Connection closed by
    peer'), and says the run could not verify on this backend, not that the static pass missed a failure."""
    path = tmp_path / "input_stash.py"
    path.write_text(INPUT_STASH)
    assert verify(f"{path}:build", checkpoint="never").exit_code == 0
    report = verify(f"{path}:build", backend="pipelining", timeout=180)
    assert report.reason == (
        "the pipelining backend cannot run this model: rank 1 raised PipeliningMetadataError during stage "
        "forward: _retrieve_recv_activations expected non-root _RecvInfo but got root arg at index 1 (skip "
        "'identity' carries the pipeline's own input to stage 1; torch.distributed.pipelining gives that input "
        "to the first stage only)"), report.to_text()
    assert report.exit_code == 2 and report.observations == []
    assert [(s.name, s.status) for s in report.steps][-1] == ("pipelining ScheduleGPipe (2 processes)", "error")


def test_the_culprit_is_the_stage_that_says_why():
    lost = (stage.LOST, 0, "stage forward", "RuntimeError: Connection closed by peer [127.0.0.1]:6272")
    raised = (stage.RAISED, 2, "stage backward", "ValueError: the stage's own error")
    unsupported = (stage.UNSUPPORTED, 1, "stage forward", "PipeliningMetadataError: no")
    assert pipelining.culprit([lost, raised]) == raised
    assert pipelining.culprit([lost, raised, unsupported]) == unsupported
    assert pipelining.culprit([lost]) == lost
