"""A new user's U-Net with everyday mistakes, against both libraries: verify reads each failure as
the rule it is, runs the pipe the user built, judges what ran, and its JSON locates each static
finding as the lint does."""

import json

import pytest
import torch

from skiplint.cli import main

torch.set_num_threads(1)

LIBRARIES = {
    "torchgpipe": ("from torchgpipe import GPipe", "from torchgpipe.skip import Namespace, pop, skippable, stash",
                   "GPipe"),
    "fairscale": ("from fairscale.nn import Pipe", "from fairscale.nn.pipe.skip import Namespace, pop, skippable, stash",
                  "Pipe"),
}

BLOCKS = '''import torch
from torch import nn
{pipe_import}
{skip_import}


@skippable(stash=["skip"])
class Down(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Up(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(6, 3, 3, padding=1)

    def forward(self, x):
        {pop}
        return self.conv(torch.cat([x, skip], dim=1))


def unet():
    outer, inner = Namespace(), Namespace()
    return nn.Sequential(Down().isolate(outer), Down().isolate(inner), nn.Conv2d(3, 3, 1),
                         Up().isolate(inner), Up().isolate(outer), nn.Conv2d(3, 2, 1))
'''

#: Each case: what follows the blocks ({pipe}: the library's pipe class).
CASES = {
    # Two blocks stash (and two pop) one name with no Namespace, and the pop is never yielded.
    "unyielded_pop": '''

def build():
    return nn.Sequential(Down(), Down(), Up(), Up()), torch.randn(2, 3, 8, 8)
''',
    # The module builds a pipe at import, which rejects its model; the target is another factory.
    "import_fails": '''

model = {pipe}(nn.Sequential(Down(), Down(), Up(), Up()), balance=[2, 2], chunks=2)


def build_backwards():
    return nn.Sequential(Up(), Down()), torch.randn(2, 3, 8, 8)
''',
    # The pipe's balance does not cover the six layers; the target is the Sequential alone.
    "pipe_balance": '''

def build():
    return unet(), torch.randn(2, 3, 8, 8)


def make_pipe():
    return {pipe}(unet(), balance=[2, 2, 1], chunks=2)
''',
    # The factory users train: it returns the pipe (no devices named: every CUDA device).
    "make_pipe": '''

def make_pipe():
    return {pipe}(unet(), balance=[2, 1, 3], chunks=3, checkpoint="never")
''',
}


def write(tmp_path, case, library):
    pipe_import, skip_import, pipe = LIBRARIES[library]
    pop = 'skip = pop("skip")' if case == "unyielded_pop" else 'skip = yield pop("skip")'
    path = tmp_path / f"{case}_{library}.py"
    path.write_text(BLOCKS.format(pipe_import=pipe_import, skip_import=skip_import, pop=pop)
                    + CASES[case].format(pipe=pipe))
    return str(path)


def verify_json(capsys, monkeypatch, path, name, *options):
    """verify's exit status and JSON document, run from the file's folder as a user would."""
    folder, _, base = path.rpartition("/")
    monkeypatch.chdir(folder)
    capsys.readouterr()
    status = main(["verify", f"{base}:{name}", "--format", "json", *options])
    return status, json.loads(capsys.readouterr().out)


def verdicts(payload):
    return [(s["code"], s["verdict"], s["step"]) for s in payload["static"]]


def observed(payload):
    return [(o["code"], o["step"], o["layer"], o["cls"], o["predicted"]) for o in payload["observations"]]


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_an_unyielded_pop_is_skp107_and_verify_skippables_mismatches_are_joined(tmp_path, capsys, monkeypatch,
                                                                                library):
    path = write(tmp_path, "unyielded_pop", library)
    status, payload = verify_json(capsys, monkeypatch, path, "build", "--checkpoint", "never")
    assert status == 1 and payload["reason"] is None
    assert verdicts(payload) == [("SKP107", "confirmed", "plain Sequential"),
                                 ("SKP203", "confirmed", "verify_skippables"),
                                 ("SKP204", "confirmed", "verify_skippables")]
    assert observed(payload) == [("SKP203", "verify_skippables", "1", "Down", True),
                                 ("SKP204", "verify_skippables", "3", "Up", True),
                                 ("SKP107", "plain Sequential", "2", "Up", True)]
    assert payload["observations"][2]["message"] == "expected Tensor as element 1 in argument 0, but got pop"


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_a_pipe_failing_at_import_confirms_its_composition_and_the_target_never_ran(tmp_path, capsys, monkeypatch,
                                                                                    library):
    path = write(tmp_path, "import_fails", library)
    status, payload = verify_json(capsys, monkeypatch, path, "build_backwards")
    assert status == 1 and payload["reason"] is None
    assert sorted(verdicts(payload)) == [("SKP201", "not exercised", ""), ("SKP202", "not exercised", ""),
                                         ("SKP203", "confirmed", "import"), ("SKP204", "confirmed", "import")]
    assert {s["note"] for s in payload["static"] if s["verdict"] != "confirmed"} == {
        "its composition never ran: importing the module failed first"}
    assert observed(payload) == [("SKP203", "import", "1", "Down", True), ("SKP204", "import", "3", "Up", True)]
    assert payload["elsewhere"] == []
    capsys.readouterr()
    assert main(["verify", f"{path}:build_backwards"]) == 1
    text = capsys.readouterr().out
    assert "MISSED" not in text and "not reproduced" not in text


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_the_pipes_balance_is_the_runs_and_confirms_skp301(tmp_path, capsys, monkeypatch, library):
    path = write(tmp_path, "pipe_balance", library)
    status, payload = verify_json(capsys, monkeypatch, path, "build", "--checkpoint", "never")
    assert status == 1 and payload["reason"] is None
    assert (payload["balance"], payload["chunks"]) == ([2, 2, 1], 2)
    base = path.rpartition("/")[2]
    assert payload["settings"] == f"balance, chunks from the pipe at {base}:41"
    assert verdicts(payload) == [("SKP301", "confirmed", "inspect_skip_layout")]
    assert observed(payload) == [("SKP301", "inspect_skip_layout", None, None, True)]
    # An explicit --balance wins over the pipe's.
    status, payload = verify_json(capsys, monkeypatch, path, "build", "--checkpoint", "never", "--balance", "3,3")
    assert (payload["balance"], payload["settings"]) == ([3, 3], "chunks from the pipe at " + f"{base}:41")
    assert verdicts(payload) == [("SKP301", "not reproduced", "inspect_skip_layout")]
    # The factory that builds that pipe runs it, and its constructor's BalanceError is SKP301 too.
    status, payload = verify_json(capsys, monkeypatch, path, "make_pipe", "--input-shape", "2,3,8,8",
                                  "--checkpoint", "never")
    assert status == 1 and verdicts(payload) == [("SKP301", "confirmed", "inspect_skip_layout")]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the pipe would find its CUDA devices")
@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_a_factory_returning_the_pipe_runs_that_pipe_here(tmp_path, capsys, monkeypatch, library):
    path = write(tmp_path, "make_pipe", library)
    status, payload = verify_json(capsys, monkeypatch, path, "make_pipe", "--input-shape", "2,3,8,8")
    assert status == 0, payload["reason"]
    assert (payload["backend"], payload["balance"], payload["chunks"], payload["checkpoints"], payload["devices"]) == (
        library, [2, 1, 3], 3, ["never"], ["cpu", "cpu", "cpu"])
    assert payload["settings"].startswith(f"balance, chunks, checkpoint from the {library} pipe the target gave; "
                                          "its devices (none) are not all here: the devices here are used")
    assert [c["mode"] for c in payload["comparisons"]] == ["never"] and payload["comparisons"][0]["ok"]
    # --chunks and --devices given win over the pipe's.
    status, payload = verify_json(capsys, monkeypatch, path, "make_pipe", "--input-shape", "2,3,8,8",
                                  "--chunks", "2", "--devices", "cpu")
    assert status == 0 and (payload["chunks"], payload["devices"]) == (2, ["cpu", "cpu", "cpu"])


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_the_json_locates_each_static_finding_as_the_lint_does(tmp_path, capsys, monkeypatch, library):
    path = write(tmp_path, "unyielded_pop", library)
    base = path.rpartition("/")[2]
    status, payload = verify_json(capsys, monkeypatch, path, "build", "--checkpoint", "never")
    assert status == 1
    assert main(["--format", "json", base]) == 1
    lint = json.loads(capsys.readouterr().out)["diagnostics"]
    keys = ("path", "line", "column", "end_line", "end_column", "code", "name", "message")
    assert [{k: s[k] for k in keys} for s in payload["static"]] == [{k: d[k] for k in keys} for d in lint]
    assert [(d["code"], d["column"]) for d in lint] == [("SKP107", 16), ("SKP203", 34), ("SKP204", 48)]


def test_a_child_named_like_a_label_is_that_child(tmp_path, capsys, monkeypatch):
    """The finding's layer is typed (index, key, class) from the composition: a child named `x (y`
    is confirmed at that child, not read back from `'x (y' (Down)`."""
    path = tmp_path / "odd_names.py"
    path.write_text(
        "from collections import OrderedDict\n\nimport torch\nfrom torch import nn\n"
        "from torchgpipe.skip import pop, skippable, stash\n\n\n"
        "@skippable(stash=['skip'])\nclass Down(nn.Module):\n    def forward(self, x):\n"
        "        yield stash('skip', x)\n        return x\n\n\n"
        "@skippable(pop=['skip'])\nclass Up(nn.Module):\n    def forward(self, x):\n"
        "        skip = yield pop('skip')\n        return x + skip\n\n\n"
        "def build():\n"
        "    return nn.Sequential(OrderedDict([('a', Down()), ('x (y', Down()), ('up', Up())])), torch.ones(2, 4)\n")
    status, payload = verify_json(capsys, monkeypatch, str(path), "build", "--checkpoint", "never")
    assert status == 1
    assert [(s["code"], s["layer"], s["verdict"]) for s in payload["static"]] == [
        ("SKP203", {"index": 1, "key": "x (y", "cls": "Down"}, "confirmed")]
    assert observed(payload) == [("SKP203", "verify_skippables", "x (y", "Down", True)]


def test_evidence_before_a_step_that_stops_the_run_is_kept(tmp_path, capsys, monkeypatch):
    """The sample does not fit (exit 2), but verify_skippables had already found the restash: it is
    still joined and shown."""
    path = tmp_path / "misfit.py"
    path.write_text(
        "import torch\nfrom torch import nn\nfrom torchgpipe.skip import pop, skippable, stash\n\n\n"
        "@skippable(stash=['skip'])\nclass Down(nn.Module):\n    def forward(self, x):\n"
        "        yield stash('skip', x)\n        return x\n\n\n"
        "@skippable(pop=['skip'])\nclass Up(nn.Module):\n    def forward(self, x):\n"
        "        skip = yield pop('skip')\n        return x + skip\n\n\n"
        "def build():\n"
        "    return nn.Sequential(nn.Linear(5, 5), Down(), Down(), Up()), torch.ones(2, 4)\n")
    status, payload = verify_json(capsys, monkeypatch, str(path), "build", "--checkpoint", "never")
    assert status == 2 and payload["reason"].startswith("the sample does not fit the model: layer '0' (Linear)")
    assert verdicts(payload) == [("SKP203", "confirmed", "verify_skippables")]
    assert observed(payload) == [("SKP203", "verify_skippables", "2", "Down", True)]
    capsys.readouterr()
    assert main(["verify", "misfit.py:build", "--checkpoint", "never"]) == 2
    out, err = capsys.readouterr()
    assert "static finding confirmed by verify_skippables" in out
    assert err.startswith("skiplint verify: the sample does not fit the model: layer '0' (Linear)")


def test_the_pipes_own_balance_is_never_a_usage_error(tmp_path, capsys, monkeypatch):
    """A balance the lint cannot read (computed) that does not fit: the run meets the pipe's
    BalanceError, a failure the static pass missed (exit 1), not a usage error of an option never given."""
    path = tmp_path / "computed.py"
    path.write_text(
        "import torch\nfrom torch import nn\nfrom torchgpipe import GPipe\n\n\n"
        "def make_pipe():\n    sizes = [int(s) for s in '2 2'.split()]\n"
        "    return GPipe(nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)),\n"
        "                 balance=sizes)\n")
    status, payload = verify_json(capsys, monkeypatch, str(path), "make_pipe", "--input-shape", "2,4",
                                  "--checkpoint", "never")
    assert status == 1 and payload["reason"] is None
    assert (payload["balance"], payload["chunks"]) == ([2, 2], 1)
    assert payload["static"] == []
    assert observed(payload) == [("SKP301", "inspect_skip_layout", None, None, False)]
