"""`skiplint verify` on the command line: the step-by-step report, exit statuses, one-line errors."""

import os

import pytest

from skiplint.cli import main

from .conftest import FIXTURES

UNET = os.path.join(FIXTURES, "unet.py")
BROKEN = os.path.join(FIXTURES, "skp103_unused_stash.py")


STEPS = ["import", "build", "static analysis", "verify_skippables", "inspect_skip_layout", "plain Sequential",
         "Pipe forward+backward [never]", "Pipe forward+backward [except_last]", "Pipe forward+backward [always]",
         "join"]


def step_lines(out):
    """(name, status) of each step line, in order."""
    return [(line[2:42].rstrip(), line[43:51].strip()) for line in out.splitlines()
            if line.startswith("  ") and line[43:51].strip() in ("ok", "FAILED", "skipped", "ERROR")]


def test_unet_prints_each_step_and_exits_0(capsys):
    assert main(["verify", f"{UNET}:build"]) == 0
    out = capsys.readouterr().out
    assert step_lines(out) == [(step, "ok") for step in STEPS]
    assert "static route table: agrees" in out
    assert out.rstrip().endswith("clean: the run passed and agrees with the static pass")


def test_buggy_fixture_confirms_with_the_librarys_message(capsys):
    assert main(["verify", f"{BROKEN}:build", "--checkpoint", "never"]) == 1
    out = capsys.readouterr().out
    assert "SKP103 'scale' is declared in stash=[...]" in out
    assert "static finding confirmed" in out
    assert "'scale' must be stashed but have not" in out
    assert "predicted by the static pass" in out


def test_json_format(capsys):
    import json

    assert main(["verify", f"{UNET}:build", "--format", "json", "--checkpoint", "never"]) == 0
    assert json.loads(capsys.readouterr().out)["exit_code"] == 0


def _two(capsys, argv):
    assert main(["verify", *argv]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in captured.err + captured.out, captured
    return err[0]


def test_target_that_does_not_import(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nraise ImportError('no such thing')\n")
    assert _two(capsys, [f"{bad}:build"]) == f"skiplint verify: {bad} does not import: ImportError: no such thing"


def test_factory_that_raises(tmp_path, capsys):
    bad = tmp_path / "raises.py"
    bad.write_text("def build():\n    raise ValueError('bad config')\n")
    assert _two(capsys, [f"{bad}:build"]) == f"skiplint verify: {bad}:build raised ValueError: bad config"


def test_sample_that_does_not_fit(capsys):
    line = _two(capsys, [f"{UNET}:unet", "--input-shape", "4,5,8,8"])
    assert line.startswith("skiplint verify: the sample does not fit the model: layer '0' (Down)")


def test_no_sample(capsys):
    assert _two(capsys, [f"{UNET}:unet"]) == (
        f"skiplint verify: no sample input for {UNET}:unet: pass --sample module:fn or --input-shape N,C,..., "
        "or return (model, sample) from the factory")


def test_fewer_devices_than_partitions(capsys):
    line = _two(capsys, [f"{UNET}:build", "--balance", "2,2,2", "--devices", "cpu,cpu"])
    assert line == ("skiplint verify: --balance 2,2,2 has 3 partitions but --devices cpu,cpu names 2: "
                    "give one device for every partition, or a single device for all of them")


def test_backend_not_installed(tmp_path, capsys, monkeypatch):
    plain = tmp_path / "plain.py"
    plain.write_text("from torch import nn\n\ndef build():\n    return nn.Sequential(nn.Linear(4, 4), nn.ReLU())\n")
    shadow = tmp_path / "shadow" / "fairscale"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'fairscale'\")\n")
    monkeypatch.syspath_prepend(str(shadow.parent))
    line = _two(capsys, [f"{plain}:build", "--input-shape", "4,4", "--backend", "fairscale"])
    assert "backend 'fairscale' is not installed" in line and "pip install fairscale==0.4.13" in line


def test_verbose_shows_the_traceback(tmp_path, capsys):
    bad = tmp_path / "raises.py"
    bad.write_text("def build():\n    raise ValueError('bad config')\n")
    assert main(["verify", f"{bad}:build", "--verbose"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_module_target(capsys, monkeypatch):
    monkeypatch.syspath_prepend(FIXTURES)
    assert main(["verify", "unet:build", "--checkpoint", "never"]) == 0


@pytest.mark.gpu
def test_unet_on_cuda(capsys):
    import torch

    assert main(["verify", f"{UNET}:build"]) == 0
    out = capsys.readouterr().out
    assert f"devices {', '.join(f'cuda:{i % torch.cuda.device_count()}' for i in range(2))}" in out
