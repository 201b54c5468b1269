"""`skiplint verify` on the command line: the step-by-step report, exit statuses, one-line errors."""

import os
import sys

import pytest

from skiplint.cli import main

from .conftest import FIXTURES

UNET = os.path.join(FIXTURES, "unet.py")
BROKEN = os.path.join(FIXTURES, "skp103_unused_stash.py")


def test_unet_prints_each_step_and_exits_0(capsys):
    assert main(["verify", f"{UNET}:build"]) == 0
    out = capsys.readouterr().out
    for step in ("import and build", "verify_skippables", "inspect_skip_layout", "plain Sequential",
                 "Pipe forward+backward [never]", "Pipe forward+backward [except_last]",
                 "Pipe forward+backward [always]", "static analysis", "join"):
        assert step in out
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
    assert "does not import: ImportError: no such thing" in _two(capsys, [f"{bad}:build"])


def test_factory_that_raises(tmp_path, capsys):
    bad = tmp_path / "raises.py"
    bad.write_text("def build():\n    raise ValueError('bad config')\n")
    assert "raised ValueError: bad config" in _two(capsys, [f"{bad}:build"])


def test_sample_that_does_not_fit(capsys):
    line = _two(capsys, [f"{UNET}:unet", "--input-shape", "4,5,8,8"])
    assert line.startswith("skiplint verify: the sample does not fit the model: layer '0' (Down)")


def test_no_sample(capsys):
    assert "no sample input" in _two(capsys, [f"{UNET}:unet"])


def test_fewer_devices_than_partitions(capsys):
    line = _two(capsys, [f"{UNET}:build", "--balance", "2,2,2", "--devices", "cpu,cpu"])
    assert "3 partitions but only 2 devices" in line


def test_backend_not_installed(tmp_path, capsys, monkeypatch):
    plain = tmp_path / "plain.py"
    plain.write_text("from torch import nn\n\ndef build():\n    return nn.Sequential(nn.Linear(4, 4), nn.ReLU())\n")
    for name in [m for m in sys.modules if m == "fairscale" or m.startswith("fairscale.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fairscale", None)
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
