"""The pipelining backend reaches the verdict of the torchgpipe backend on every runtime fixture:
the same exit status, the same static findings confirmed, the same runtime failures observed."""

import glob
import os

import pytest

from skiplint.runtime import verify

from .conftest import FIXTURES

FIXTURE_FILES = sorted(glob.glob(os.path.join(FIXTURES, "*.py")))
#: Options a fixture needs beyond the defaults.
OPTIONS = {"skp301_balance.py": {"balance": (2, 2)}}
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
    options = OPTIONS.get(name, {})
    reference = verify(f"{path}:build", backend=REFERENCE.get(name, "torchgpipe"), checkpoint=("never",), **options)
    report = verify(f"{path}:build", backend="pipelining", timeout=180, **options)
    assert reference.reason is None, reference.reason
    assert verdict(report) == verdict(reference), report.to_text()


def test_a_skip_failure_while_tracing_is_an_observation_of_the_trace_step():
    report = verify(os.path.join(FIXTURES, "skp101_undeclared_stash.py") + ":build", backend="pipelining")
    assert [(o.code, o.step, o.layer, o.cls, o.name, o.predicted) for o in report.observations] == [
        ("SKP101", "fx trace and split_module", "0", "Save", "extra", True)]
    assert [(s.name, s.status) for s in report.steps] == [
        ("import", "ok"), ("build", "ok"), ("static analysis", "ok"), ("verify_skippables", "ok"),
        ("fx trace and split_module", "failed"), ("plain Sequential", "failed"),
        ("pipelining ScheduleGPipe (2 processes)", "skipped"), ("join", "ok")]
    step = report.steps[4]
    assert step.detail == "layer '0' (Save): 'extra' has not been declared as stashable"
    assert report.exit_code == 1


def test_a_model_that_fx_cannot_trace_could_not_be_verified(tmp_path):
    model = tmp_path / "branchy.py"
    model.write_text(
        "import torch\n"
        "from torch import nn\n\n\n"
        "class Branch(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x if x.sum() > 0 else -x\n\n\n"
        "def build():\n"
        "    return nn.Sequential(nn.Linear(4, 4), Branch()), torch.ones(2, 4)\n")
    report = verify(f"{model}:build", backend="pipelining")
    assert report.exit_code == 2
    assert report.reason == ("torch.fx cannot trace the model: layer '1' raised TraceError: "
                             "symbolically traced variables cannot be used as inputs to control flow")
