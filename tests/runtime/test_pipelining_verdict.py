"""The pipelining backend reaches the verdict of the torchgpipe backend on every runtime fixture,
with default options: the same exit status, the same static findings confirmed, the same runtime
failures observed."""

import glob
import os

import pytest

from skiplint.runtime import verify

from .conftest import FIXTURES

FIXTURE_FILES = sorted(glob.glob(os.path.join(FIXTURES, "*.py")))
#: Fixtures whose skippables come from fairscale: their own library is the reference backend.
REFERENCE = {"unet_fairscale.py": "fairscale"}


def verdict(report):
    return (report.exit_code, report.reason,
            sorted((s.line, s.code, s.verdict) for s in report.static),
            sorted((o.code, o.layer, o.cls, o.name, o.predicted) for o in report.observations))


@pytest.mark.slow  # a sweep of every fixture through two backends; tests/runtime/test_pipelining.py stays quick
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=os.path.basename)
def test_pipelining_reaches_the_reference_verdict(path):
    name = os.path.basename(path)
    reference = verify(f"{path}:build", backend=REFERENCE.get(name, "torchgpipe"), checkpoint=("never",))
    report = verify(f"{path}:build", backend="pipelining", timeout=180)
    assert reference.reason is None, reference.reason
    assert verdict(report) == verdict(reference), report.to_text()


def test_a_skip_failure_is_observed_before_any_stage_runs():
    """An undeclared stash fails in the plain Sequential, as in the torchgpipe backend's run; the
    stage processes never start."""
    report = verify(os.path.join(FIXTURES, "skp101_undeclared_stash.py") + ":build", backend="pipelining")
    assert [(o.code, o.step, o.layer, o.cls, o.name, o.predicted) for o in report.observations] == [
        ("SKP101", "plain Sequential", "0", "Save", "extra", True)]
    assert [(s.name, s.status) for s in report.steps] == [
        ("import", "ok"), ("build", "ok"), ("static analysis", "ok"), ("verify_skippables", "ok"),
        ("stage plan", "ok"), ("plain Sequential", "failed"),
        ("pipelining ScheduleGPipe (2 processes)", "skipped"), ("join", "ok")]
    assert report.exit_code == 1


def test_a_model_with_data_dependent_control_flow_runs(tmp_path):
    """The stages run the user's modules as they are (nothing is traced), so a forward that
    branches on its data runs on the pipelining backend as on torchgpipe."""
    model = tmp_path / "branchy.py"
    model.write_text(
        "import torch\n"
        "from torch import nn\n\n\n"
        "class Branch(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x if x.sum() > 0 else -x\n\n\n"
        "def build():\n"
        "    return nn.Sequential(nn.Linear(4, 4), Branch()), torch.ones(2, 4)\n")
    report = verify(f"{model}:build", backend="pipelining", timeout=180)
    assert report.exit_code == 0, report.to_text()
    assert [c.mode for c in report.comparisons] == ["pipelining"] and report.comparisons[0].ok
