"""verify is easy to point at a model and speaks the user's names: a module in the working
directory imports, a missing name lists what the file has, paths and configuration are the lint's."""

import os
import shutil

from skiplint.cli import main
from skiplint.runtime import verify
from tests.messages import printed

from .conftest import FIXTURES, ROOT

MODEL = """\
import math
from math import sqrt

import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x


def helper():
    return math.pi


def model():
    return nn.Sequential(nn.Linear(4, 4), Net()), torch.randn(4, 4)


_private = model
net = Net()
"""


def test_module_in_the_working_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "mymodel.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "mymodel:model", "--checkpoint", "never"]) == 0, capsys.readouterr()


def test_missing_name_names_the_file_and_lists_its_callables(tmp_path, monkeypatch, capsys):
    (tmp_path / "mymodel.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    assert main(["verify", "mymodel.py:nosuch"]) == 2
    assert capsys.readouterr().err == (
        "skiplint verify: mymodel.py has no attribute 'nosuch'; it has: Net, helper, model, net\n")
    assert main(["verify", "mymodel:nosuch"]) == 2
    assert capsys.readouterr().err == (
        "skiplint verify: mymodel has no attribute 'nosuch'; it has: Net, helper, model, net\n")


def test_paths_are_the_lints(monkeypatch, capsys):
    """An absolute target below the working directory: findings are printed as `skiplint` prints them."""
    monkeypatch.chdir(ROOT)
    path = os.path.join(FIXTURES, "skp103_unused_stash.py")
    assert main([os.path.relpath(path)]) == 1
    lint = capsys.readouterr().out.splitlines()
    assert lint == [printed("fixtures/runtime/skp103_unused_stash.py", 8, 27, "SKP103", name="scale")]
    assert main(["verify", f"{path}:build", "--checkpoint", "never"]) == 1
    out = capsys.readouterr().out
    assert lint[0] in out.splitlines()
    assert ROOT not in out.replace(f"skiplint verify {path}:build", "")


def test_static_half_reads_the_project_configuration(tmp_path):
    shutil.copy(os.path.join(FIXTURES, "skp103_unused_stash.py"), tmp_path / "model.py")
    target = f"{tmp_path / 'model.py'}:build"
    confirmed = verify(target, checkpoint="never")
    assert [(s.code, s.verdict) for s in confirmed.static] == [("SKP103", "confirmed")]
    (tmp_path / "pyproject.toml").write_text('[tool.skiplint]\nignore = ["SKP103"]\n')
    report = verify(target, checkpoint="never")
    assert report.static == []
    assert [(o.code, o.cls, o.name, o.predicted) for o in report.observations] == [("SKP103", "Save", "scale", False)]
    assert report.exit_code == 1
