"""`skiplint verify` keeps its word whatever the model does: the model's code runs in a supervised
child process, and an exit, a crash, an interrupt or a hang of it is one line naming the step and the
cause, exit status 2 ("could not verify"). Each target is written as a user would write it."""

import json
import subprocess
import sys
import textwrap

import pytest

from skiplint.cli import main
from skiplint.runtime import verify
from skiplint.rules import pipe

from .conftest import ROOT

#: A short step limit for the targets that never answer.
HANG = "10"

HEAD = """\
import ctypes, os, sys, threading, time
import torch
from torch import nn


def in_pipe():
    # torchgpipe runs the partitions in worker threads: true in the Pipe run only.
    return threading.current_thread() is not threading.main_thread()

"""


def write(tmp_path, body, name="model.py"):
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body))
    return str(path)


def cli(capsys, *argv):
    """(exit status, stdout, stderr) of `skiplint verify ARGV`."""
    status = main(["verify", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def could_not_verify(capsys, *argv):
    """The one line of a run that could not verify; stderr holds nothing else, stdout no summary."""
    status, out, err = cli(capsys, *argv)
    assert status == 2, (out, err)
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("skiplint verify: ")
    return lines[0][len("skiplint verify: "):], out


def layer(name, forward):
    """A model whose second layer runs FORWARD (one statement of x), with its sample."""
    return f"""
class {name}(nn.Module):
    def forward(self, x):
        {forward}
        return x


def build():
    return nn.Sequential(nn.Linear(4, 4), {name}(), nn.Linear(4, 4)), torch.randn(4, 4)
"""


# -- exits, crashes and interrupts ----------------------------------------------------------------

@pytest.mark.parametrize("call, line", [
    ("sys.exit(0)", "the model factory called sys.exit(0) during build"),
    ("os._exit(0)", "the model's code ended the process with exit status 0 during build"),
    ("sys.exit('bad config')", "the model factory called sys.exit('bad config') during build"),
    ("raise KeyboardInterrupt", "the model factory raised KeyboardInterrupt during build"),
    ("ctypes.string_at(0)", "killed by SIGSEGV during build"),
])
def test_factory_that_ends_the_process(tmp_path, capsys, call, line):
    path = write(tmp_path, f"def build():\n    {call}\n")
    reason, out = could_not_verify(capsys, f"{path}:build")
    assert reason == line
    assert out.splitlines()[-1].split()[:2] == ["build", "ERROR"]


def test_sample_factory_that_exits(tmp_path, capsys):
    path = write(tmp_path, """
def build():
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU())


def sample():
    sys.exit(0)


def sample_hard():
    os._exit(0)
""")
    assert could_not_verify(capsys, f"{path}:build", "--sample", f"{path}:sample")[0] == (
        "the sample factory called sys.exit(0) during build")
    assert could_not_verify(capsys, f"{path}:build", "--sample", f"{path}:sample_hard")[0] == (
        "the model's code ended the process with exit status 0 during build")


def test_module_that_exits_on_import(tmp_path, capsys):
    path = write(tmp_path, "sys.exit(3)\n")
    assert could_not_verify(capsys, f"{path}:build")[0] == f"the target module {path} called sys.exit(3) during import"


@pytest.mark.parametrize("forward, line", [
    ("sys.exit(0)", "layer '1' (Quit) called sys.exit(0) during plain Sequential"),
    ("os._exit(0)", "the model's code ended the process with exit status 0 during plain Sequential"),
    ("raise KeyboardInterrupt", "layer '1' (Quit) raised KeyboardInterrupt during plain Sequential"),
])
def test_forward_that_ends_the_process(tmp_path, capsys, forward, line):
    path = write(tmp_path, layer("Quit", forward))
    assert could_not_verify(capsys, f"{path}:build", "--checkpoint", "never")[0] == line


@pytest.mark.parametrize("forward, line", [
    ("if in_pipe(): sys.exit(0)", "layer '1' (Quit) called sys.exit(0) during Pipe forward+backward [never]"),
    ("if in_pipe(): ctypes.string_at(0)", "killed by SIGSEGV during Pipe forward+backward [never]"),
])
def test_forward_that_ends_the_process_in_the_pipe_only(tmp_path, capsys, forward, line):
    """A BaseException in a pipe's worker thread would kill the thread and leave the pipe waiting:
    it is carried out of the thread instead."""
    path = write(tmp_path, layer("Quit", forward))
    reason, out = could_not_verify(capsys, f"{path}:build", "--checkpoint", "never")
    assert reason == line
    assert "plain Sequential                         ok" in out


def test_other_base_exception(tmp_path, capsys):
    path = write(tmp_path, """
class Stop(BaseException):
    pass

""" + layer("Halt", "raise Stop('enough')"))
    assert could_not_verify(capsys, f"{path}:build", "--checkpoint", "never")[0] == (
        "layer '1' (Halt) raised Stop: enough during plain Sequential")


# -- errors are whole, and the target's own pipe is an observation ---------------------------------

def test_a_library_error_that_spans_lines_is_kept_whole(tmp_path, capsys):
    """A training script that loads its weights at import: torch.load's error spans lines, and the
    reason (stderr and the JSON document) keeps every one of them, not just the first."""
    import torch

    weights = tmp_path / "weights.pt"
    weights.write_text("not a checkpoint\n")
    try:
        torch.load(str(weights))
    except Exception as error:
        lines = [line.rstrip() for line in str(error).splitlines() if line.strip()]
        expected = f"{type(error).__name__}: " + "\n".join(lines)
    assert len(lines) > 1, "the library's message spans lines"
    path = write(tmp_path, f"STATE = torch.load({str(weights)!r})\n" + SEVEN)
    status, out, err = cli(capsys, f"{path}:build", "--format", "json")
    assert status == 2
    assert json.loads(out)["reason"] == f"{path} does not import: {expected}"
    assert err == f"skiplint verify: {path} does not import: {expected}\n"


REJECTED = """
from torchgpipe import GPipe
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Down(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Up(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip


def unet():
    return nn.Sequential(Down(), Down(), nn.Linear(4, 4), Up(), Up())

"""


@pytest.mark.parametrize("where, body", [
    ("import", "MODEL = unet()\nPIPE = GPipe(MODEL, balance=[3, 2], chunks=2)\n\n\ndef build():\n"
               "    return MODEL, torch.ones(4, 4)\n"),
    ("build", "def build():\n    model = unet()\n    GPipe(model, balance=[3, 2], chunks=2)\n"
              "    return model, torch.ones(4, 4)\n"),
])
def test_the_targets_own_pipe_rejecting_the_model_is_an_observation(tmp_path, capsys, where, body):
    """A script that builds its GPipe while it imports (or in its factory): verify_skippables'
    TypeError is the very failure the static pass predicts, joined as an observation of that step
    (exit 1, findings confirmed), its list whole, never 'could not verify' (exit 2)."""
    path = write(tmp_path, REJECTED + body)
    report = verify(f"{path}:build")
    assert report.reason is None, report.reason
    assert [(s.name, s.status) for s in report.steps] == [
        *([("import", "ok")] if where == "build" else []), (where, "failed"), ("static analysis", "ok"),
        ("join", "ok")]
    assert [(o.code, o.step, o.layer, o.cls, o.name, o.predicted) for o in report.observations] == [
        ("SKP203", where, "1", "Down", "skip", True), ("SKP204", where, "4", "Up", "skip", True)]
    assert [(s.code, s.verdict) for s in report.static] == [("SKP203", "confirmed"), ("SKP204", "confirmed")]
    assert report.exit_code == 1
    status, out, err = cli(capsys, f"{path}:build")
    assert status == 1 and "Traceback" not in err
    assert out.splitlines()[-1] == "2 static finding(s), 2 confirmed; 2 runtime failure(s), 0 missed by the static pass"


def test_a_stash_never_popped_at_import_is_joined_at_its_layer(tmp_path):
    # verify_skippables names no layer for SKP202: the rejected Sequential, read from its frame, has it.
    path = write(tmp_path, """
from fairscale.nn import Pipe
from fairscale.nn.pipe.skip import skippable, stash


@skippable(stash=["skip"])
class Keep(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


MODEL = nn.Sequential(nn.Linear(4, 4), Keep(), nn.Linear(4, 4))
Pipe(MODEL, balance=[2, 1], chunks=2)


def build():
    return MODEL, torch.ones(4, 4)
""")
    report = verify(f"{path}:build")
    assert [(o.code, o.step, o.layer, o.cls, o.name, o.predicted) for o in report.observations] == [
        ("SKP202", "import", "1", "Keep", "skip", True)]
    assert [(s.code, s.verdict) for s in report.static] == [("SKP202", "confirmed")]
    assert report.exit_code == 1


# -- time limits ----------------------------------------------------------------------------------

def test_factory_that_never_returns(tmp_path, capsys):
    path = write(tmp_path, "def build():\n    while True:\n        time.sleep(1)\n")
    reason, out = could_not_verify(capsys, f"{path}:build", "--timeout", HANG)
    assert reason == "no answer in 10 s during build"
    assert out.splitlines()[-1].split()[:2] == ["build", "ERROR"]


def test_forward_that_never_returns_in_the_pipe(tmp_path, capsys):
    path = write(tmp_path, layer("Stuck", "while in_pipe(): time.sleep(1)"))
    assert could_not_verify(capsys, f"{path}:build", "--timeout", HANG, "--checkpoint", "never")[0] == (
        "no answer in 10 s during Pipe forward+backward [never]")


def run_cli(*argv, cwd=ROOT):
    """`python -m skiplint verify ARGV` as a user runs it (the guard only stops a regression)."""
    return subprocess.run([sys.executable, "-m", "skiplint", "verify", *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_a_non_daemon_thread_does_not_keep_verify_alive(tmp_path):
    path = write(tmp_path, """
def build():
    threading.Thread(target=time.sleep, args=(3600,)).start()
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(4, 4)
""")
    done = run_cli(f"{path}:build", "--checkpoint", "never")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "clean: the run passed and agrees with the static pass"


# -- the target sees its own world ------------------------------------------------------------------

def test_script_that_parses_argv_at_import(tmp_path, capsys):
    path = write(tmp_path, """
import argparse

assert sys.argv == [__file__], sys.argv
args = argparse.ArgumentParser().parse_args()


def build():
    assert sys.argv == [__file__], sys.argv
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(4, 4)
""")
    status, out, err = cli(capsys, f"{path}:build", "--checkpoint", "never", "--chunks", "2")
    assert status == 0, (out, err)
    assert err == ""


def test_prints_never_reach_the_json_document(tmp_path):
    path = write(tmp_path, """
print("loading the model")


def build():
    print("building", flush=True)
    os.write(1, b"straight to fd 1\\n")
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU()), torch.randn(4, 4)
""")
    done = run_cli(f"{path}:build", "--checkpoint", "never", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["exit_code"] == 0
    assert done.stderr.splitlines() == ["loading the model", "building", "straight to fd 1"]


def test_could_not_verify_is_one_json_document_too(tmp_path):
    path = write(tmp_path, "def build():\n    os._exit(0)\n")
    done = run_cli(f"{path}:build", "--format", "json")
    assert done.returncode == 2
    payload = json.loads(done.stdout)
    assert payload["exit_code"] == 2
    assert payload["reason"] == "the model's code ended the process with exit status 0 during build"
    assert [(s["name"], s["status"]) for s in payload["steps"]] == [("import", "ok"), ("build", "error")]
    assert done.stderr == f"skiplint verify: {payload['reason']}\n"


# -- options are the user's, not the model's ----------------------------------------------------------

SEVEN = """
def build():
    print("built", file=sys.stderr)
    return nn.Sequential(*[nn.Linear(4, 4) for _ in range(7)]), torch.randn(4, 4)
"""


@pytest.mark.parametrize("option, line", [
    (("--chunks", "0"), "--chunks 0: the number of micro-batches must be at least 1"),
    (("--timeout", "0"), "--timeout 0: the seconds each step may take must be more than 0"),
    (("--balance", "3,0,4"), "--balance 3,0,4: every entry must be at least 1, not 0"),
])
def test_usage_errors_stop_before_anything_runs(tmp_path, capsys, option, line):
    path = write(tmp_path, SEVEN)
    reason, out = could_not_verify(capsys, f"{path}:build", *option)
    assert reason == line
    assert out == f"skiplint verify {path}:build\n"


def test_usage_error_in_json(tmp_path, capsys):
    path = write(tmp_path, SEVEN)
    status, out, err = cli(capsys, f"{path}:build", "--chunks", "0", "--format", "json")
    assert status == 2
    assert json.loads(out)["reason"] == "--chunks 0: the number of micro-batches must be at least 1"
    assert err == "skiplint verify: --chunks 0: the number of micro-batches must be at least 1\n"


def test_balance_that_does_not_cover_the_model_is_a_usage_error(tmp_path, capsys):
    path = write(tmp_path, SEVEN)
    status, out, err = cli(capsys, f"{path}:build", "--balance", "3,2")
    assert status == 2
    assert err.splitlines() == ["built", "skiplint verify: --balance 3,2 sums to 5 but the model has 7 layers; "
                                         "give layers per partition that sum to 7"]
    assert "verify_skippables" not in out and "MISSED" not in out


def _devices_here():
    import torch

    return ", ".join(["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())])


@pytest.mark.parametrize("devices, line", [
    ("meta,meta", "--devices meta,meta: a meta tensor holds no data, so no model runs on 'meta'; "
                  "the devices here are: {here}"),
    ("cpu,cuda:64", "--devices cpu,cuda:64: there is no cuda:64 here; the devices here are: {here}"),
    ("tpu9", "--devices tpu9: 'tpu9' is not a device name; the devices here are: {here}"),
    (",", "--devices ',' names no device: give device names separated by commas, e.g. --devices cuda:0,cuda:1"),
    ("cpu,", "--devices cpu,: a device name is empty"),
], ids=["meta", "index-past-the-count", "no-such-type", "comma-only", "empty-entry"])
def test_devices_that_do_not_exist_are_usage_errors_before_the_model_runs(tmp_path, capsys, devices, line):
    # Once ended in "unexpected error during plain Sequential: NotImplementedError" (meta), or ran
    # on the default devices (",").
    path = write(tmp_path, "print('imported', file=sys.stderr)\n" + SEVEN)
    status, out, err = cli(capsys, f"{path}:build", "--devices", devices)
    assert status == 2
    assert err == f"skiplint verify: {line.format(here=_devices_here())}\n"  # nothing imported or built
    assert out == f"skiplint verify {path}:build\n"


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="CUDA is here")
def test_cuda_on_a_cpu_only_torch_is_a_usage_error(tmp_path, capsys):
    path = write(tmp_path, SEVEN)
    status, out, err = cli(capsys, f"{path}:build", "--devices", "cuda:0", "--format", "json")
    assert status == 2
    assert json.loads(out)["reason"] == "--devices cuda:0: there is no cuda:0 here; the devices here are: cpu"
    assert err == "skiplint verify: --devices cuda:0: there is no cuda:0 here; the devices here are: cpu\n"


def test_api_empty_devices_is_a_usage_error(tmp_path):
    path = write(tmp_path, SEVEN)
    with pytest.raises(ValueError, match=r"^--devices '' names no device: "):
        verify(f"{path}:build", devices=())


def test_an_empty_sequential_is_said_so(tmp_path, capsys):
    # Once "bad --balance: all balance numbers must be positive integer (balance: [0])" with no --balance.
    path = write(tmp_path, "def build():\n    return nn.Sequential(), torch.ones(4, 4)\n")
    assert could_not_verify(capsys, f"{path}:build")[0] == (
        f"{path}:build gave an empty nn.Sequential: it has no layer to check")


def test_one_device_serves_every_partition(tmp_path, capsys):
    path = write(tmp_path, SEVEN)
    status, out, _ = cli(capsys, f"{path}:build", "--balance", "3,2,2", "--devices", "cpu", "--checkpoint", "never")
    assert status == 0, out
    assert "backend torchgpipe, balance [3, 2, 2], chunks 2, checkpoint never, devices cpu, cpu, cpu" in out


# -- verdicts -----------------------------------------------------------------------------------------

def test_a_deterministic_nan_is_the_same_in_the_pipe(tmp_path):
    path = write(tmp_path, layer("Poison", "x = x * float('nan')"))
    report = verify(f"{path}:build", checkpoint="never")
    assert report.exit_code == 0, report.to_text()
    assert [(c.mode, c.output_max_abs, c.ok) for c in report.comparisons] == [("never", 0.0, True)]


def test_unexpected_error_names_the_step_and_the_type(tmp_path, capsys):
    path = write(tmp_path, """
class NoBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("no gradient here")

""" + layer("Odd", "x = NoBackward.apply(x)"))
    assert could_not_verify(capsys, f"{path}:build", "--checkpoint", "never")[0] == (
        "unexpected error during plain Sequential: ValueError: no gradient here")


DISCARD = """
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["a"])
class Save(nn.Module):
    def forward(self, x):
        yield stash("a", x)
        return x


@skippable(pop=["a"])
class Drop(nn.Module):
    def forward(self, x):
        yield pop("a")
        return x


def build():
    return nn.Sequential(Save(), nn.Linear(4, 4), Drop(), nn.Linear(4, 4)), torch.randn(4, 4)
"""


def test_a_failed_pipe_step_is_a_runtime_failure(tmp_path):
    """The discarded pop across partitions: forward runs, backward raises a bare AssertionError in
    skip/portal.py: SKP305's failure, predicted exactly when the static pass reports it for this
    model (it is never '0 missed' over a failed step)."""
    path = write(tmp_path, DISCARD)
    report = verify(f"{path}:build", balance=(2, 2), checkpoint=("never", "always"))
    assert [(s.name, s.status) for s in report.steps if s.name.startswith("Pipe")] == [
        ("Pipe forward+backward [never]", "failed"), ("Pipe forward+backward [always]", "failed")]
    [failure] = report.observations
    discarded = pipe.DISCARDED_CROSS_PARTITION_POP.code
    assert (failure.code, failure.step, failure.layer) == (discarded, "Pipe forward+backward [never]", None)
    assert failure.message == "AssertionError in skip/portal.py"
    assert report.exit_code == 1
    assert failure.predicted == any(s.code == discarded for s in report.static)


def test_a_pipe_that_differs_is_a_runtime_failure(tmp_path):
    path = write(tmp_path, """
def build():
    return nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 4)), torch.randn(8, 4)
""")
    report = verify(f"{path}:build", checkpoint="never")
    assert [(o.code, o.step, o.message, o.predicted) for o in report.observations] == [
        (None, "Pipe forward+backward [never]", "differs from the plain Sequential", False)]
    assert report.exit_code == 1


# -- the Python API -----------------------------------------------------------------------------------

def test_api_reports_instead_of_dying(tmp_path):
    path = write(tmp_path, "def build():\n    os._exit(0)\n")
    report = verify(f"{path}:build")
    assert report.exit_code == 2
    assert report.reason == "the model's code ended the process with exit status 0 during build"


def test_api_usage_error_raises(tmp_path):
    path = write(tmp_path, SEVEN)
    with pytest.raises(ValueError, match=r"^--chunks 0: the number of micro-batches must be at least 1$"):
        verify(f"{path}:build", chunks=0)


def test_api_in_process(tmp_path):
    path = write(tmp_path, layer("Quit", "sys.exit(0)"))
    report = verify(f"{path}:build", checkpoint="never", isolate=False)
    assert report.reason == "layer '1' (Quit) called sys.exit(0) during plain Sequential"


def test_torch_missing_in_the_child(tmp_path, monkeypatch, capsys):
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    monkeypatch.syspath_prepend(str(shadow.parent))
    path = write(tmp_path, SEVEN)
    assert could_not_verify(capsys, f"{path}:build")[0] == (
        "torch is not installed (No module named 'torch'); install it pinned, then the extra: "
        "pip install torch==2.13.0 && pip install -c constraints.txt 'skiplint[runtime]'")
