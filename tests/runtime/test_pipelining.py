"""The pipelining backend: fx split routes and a ScheduleGPipe run in one gloo process per stage."""

import os

import pytest

from skiplint.runtime import verify

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
