"""`torchrun ... -m skiplint verify` is one distributed verify: one stage per rank over gloo, one report
from rank 0 with the single-process verdict, the same exit status on every rank, and a rank that
raises or hangs named in the report within --timeout."""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from skiplint.runtime import verify

from .conftest import FIXTURES, ROOT

#: A launch that runs longer than this is a hang of the launcher, not of verify (which is bounded by --timeout).
LAUNCH_LIMIT = 600
_LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
                  "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=ROOT, **extra)
    return env


def torchrun(launcher, target, *options, env=None):
    command = [sys.executable, "-m", "torch.distributed.run", *launcher, "-m", "skiplint", "verify", target,
               *options]
    return subprocess.Popen(command, cwd=ROOT, env=env or _env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def standalone(nproc, target, *options, env=None):
    proc = torchrun(["--standalone", "--nproc-per-node", str(nproc)], target, *options, env=env)
    stdout, stderr = proc.communicate(timeout=LAUNCH_LIMIT)
    return proc.returncode, stdout, stderr


def verdict(payload):
    """What a run concluded, from its report (a Report or its JSON)."""
    if not isinstance(payload, dict):
        payload = json.loads(payload.to_json())
    return (payload["exit_code"], payload["reason"],
            sorted((s["line"], s["code"], s["verdict"]) for s in payload["static"]),
            sorted((o["code"], o["layer"], o["cls"], o["name"], o["predicted"]) for o in payload["observations"]))


def assert_every_rank_ended(stderr, nproc, code):
    """Every rank ended with `code`, except that torchrun may stop (SIGTERM, -15) those still running
    when the first one has ended: which rank gets there first is the scheduler's choice."""
    codes = worker_exit_codes(stderr)
    assert set(codes) == set(range(nproc)), codes
    assert set(codes.values()) <= {code, -signal.SIGTERM} and code in codes.values(), codes


def worker_exit_codes(stderr):
    """The exit code torchrun lists for each failed rank."""
    codes = {}
    rank = None
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("rank      :"):
            rank = int(line.split(":")[1].split()[0])
        elif line.startswith("exitcode  :") and rank is not None:
            codes[rank] = int(line.split(":")[1].split()[0])
    return codes


@pytest.mark.parametrize("nproc, balance", [(2, (3, 3)), (3, (2, 2, 2))])
def test_clean_unet_is_one_run_with_one_report(nproc, balance):
    target = os.path.join(FIXTURES, "unet.py") + ":build"
    code, stdout, stderr = standalone(nproc, target, "--format", "json", "--timeout", "120")
    payload = json.loads(stdout)  # exactly one JSON document
    assert code == 0, stderr
    reference = verify(target, backend="torchgpipe", balance=balance, checkpoint="never")
    assert verdict(payload) == verdict(reference)
    assert payload["backend"] == "pipelining" and payload["balance"] == list(balance)
    assert payload["devices"] == ["cpu"] * nproc
    assert [(s["name"], s["status"]) for s in payload["steps"]] == [
        ("import", "ok"), ("build", "ok"), ("static analysis", "ok"), ("verify_skippables", "ok"),
        ("stage plan", "ok"), ("plain Sequential", "ok"),
        (f"pipelining ScheduleGPipe ({nproc} ranks)", "ok"), ("join", "ok")]
    assert [(c["mode"], c["ok"]) for c in payload["comparisons"]] == [("pipelining", True)]
    assert sorted(map(tuple, (r.values() for r in payload["runtime_routes"]))) == sorted(
        (r.name, r.src_layer, r.dst_layer, r.src_partition, r.dst_partition) for r in reference.runtime_routes)
    assert payload["routes_agree"] is True


#: The default balance: the layers split evenly over the ranks.
EVEN_SPLIT = {"skp101_undeclared_stash.py": {2: (2, 2), 3: (2, 1, 1)},
              "skp202_stash_never_popped.py": {2: (2, 1), 3: (1, 1, 1)}}


@pytest.mark.slow  # four launches of 2 and 3 ranks; the clean U-Net's launches stay quick
@pytest.mark.parametrize("nproc", [2, 3])
@pytest.mark.parametrize("fixture", ["skp101_undeclared_stash.py", "skp202_stash_never_popped.py"])
def test_failing_fixture_has_the_single_process_verdict(nproc, fixture):
    target = os.path.join(FIXTURES, fixture) + ":build"
    code, stdout, stderr = standalone(nproc, target, "--format", "json", "--timeout", "120")
    payload = json.loads(stdout)
    balance = EVEN_SPLIT[fixture][nproc]
    reference = verify(target, backend="pipelining", balance=balance)
    assert verdict(payload) == verdict(reference)
    assert payload["exit_code"] == 1 and code != 0
    assert payload["balance"] == list(balance)
    assert_every_rank_ended(stderr, nproc, 1)


def test_text_report_is_printed_once():
    target = os.path.join(FIXTURES, "skp101_undeclared_stash.py") + ":build"
    code, stdout, stderr = standalone(2, target)
    assert stdout.count(f"skiplint verify {target}") == 1
    assert stdout.count("static finding confirmed") == 1
    assert stdout.endswith("1 static finding(s), 1 confirmed; 1 runtime failure(s), 0 missed by the static pass\n")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_launchers_on_localhost_are_two_nodes_of_one_run():
    target = os.path.join(FIXTURES, "unet.py") + ":build"
    port = str(_free_port())
    launchers = [torchrun(["--nnodes", "2", "--nproc-per-node", "1", "--node-rank", str(node),
                           "--master-addr", "127.0.0.1", "--master-port", port], target, "--format", "json")
                 for node in (0, 1)]
    results = [proc.communicate(timeout=LAUNCH_LIMIT) for proc in launchers]
    assert [proc.returncode for proc in launchers] == [0, 0], results[0][1] + results[1][1]
    (head_out, _), (other_out, _) = results
    assert other_out == ""
    payload = json.loads(head_out)
    assert payload["exit_code"] == 0 and payload["balance"] == [3, 3]
    assert [(c["mode"], c["ok"]) for c in payload["comparisons"]] == [("pipelining", True)]


def test_parameters_and_sample_come_from_rank_0(tmp_path):
    path = tmp_path / "seeded_by_rank.py"
    path.write_text("import os\n\nimport torch\nfrom torch import nn\n\n\ndef build():\n"
                    "    torch.manual_seed(100 + int(os.environ['RANK']))\n"
                    "    layers = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4), nn.Linear(4, 4))\n"
                    "    return layers, torch.randn(4, 4)\n")
    code, stdout, stderr = standalone(2, f"{path}:build", "--format", "json")
    payload = json.loads(stdout)
    assert code == 0, stderr
    assert [(c["mode"], c["ok"]) for c in payload["comparisons"]] == [("pipelining", True)]
    assert payload["comparisons"][0]["output_max_abs"] < 1e-6


FAULTY = textwrap.dedent('''\
    """Four layers; the third calls an op whose kernel fails, never returns or is killed on rank 1 only."""
    import os
    import time

    import torch
    from torch import nn


    @torch.library.custom_op("skiplint_test::on_rank_one", mutates_args=())
    def on_rank_one(x: torch.Tensor) -> torch.Tensor:
        if os.environ.get("RANK") == "1":
            if os.environ.get("FAULT") == "killed":  # as the kernel's out-of-memory killer does
                os.kill(os.getpid(), 9)
            if os.environ.get("FAULT") == "hang":
                time.sleep(3600)
            raise RuntimeError("only rank 1 fails here")
        return x.clone()


    @on_rank_one.register_fake
    def _(x):
        return torch.empty_like(x)


    on_rank_one.register_autograd(lambda ctx, grad: grad)


    class Fault(nn.Module):
        def forward(self, x):
            return on_rank_one(x)


    def build():
        return nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), Fault(), nn.Linear(4, 4)), torch.ones(4, 4)
''')


@pytest.fixture
def faulty(tmp_path):
    path = tmp_path / "faulty.py"
    path.write_text(FAULTY)
    return f"{path}:build"


def test_a_rank_that_raises_is_named_in_the_report(faulty):
    code, stdout, stderr = standalone(2, faulty, "--format", "json", "--timeout", "60", env=_env(FAULT="raise"))
    payload = json.loads(stdout)
    stage = payload["steps"][6]
    host = socket.gethostname()
    assert (stage["name"], stage["status"], stage["detail"]) == (
        "pipelining ScheduleGPipe (2 ranks)", "failed",
        f"rank 1 ({host}) raised RuntimeError during stage forward: only rank 1 fails here")
    assert payload["exit_code"] == 1 and payload["reason"] is None
    assert_every_rank_ended(stderr, 2, 1)


@pytest.mark.slow  # waits out its 30 s --timeout; a rank that raises stays in the quick loop
def test_a_rank_that_hangs_ends_every_rank_within_the_timeout(faulty):
    # Every step (the import and the stage's export included) must fit in --timeout on a loaded CI machine.
    code, stdout, stderr = standalone(2, faulty, "--format", "json", "--timeout", "30", env=_env(FAULT="hang"))
    payload = json.loads(stdout)
    host = socket.gethostname()
    assert payload["reason"] == f"rank 1 ({host}) did not answer within 30s during stage forward"
    assert payload["exit_code"] == 2 and code != 0
    assert f"skiplint verify: rank 1 ({host}) did not answer within 30s during stage forward\n" in stderr
    assert_every_rank_ended(stderr, 2, 2)


@pytest.mark.slow  # torchrun's own wait for the killed rank: about 15 s
def test_a_rank_that_is_killed_is_named_by_its_last_step(faulty):
    code, stdout, stderr = standalone(2, faulty, "--format", "json", "--timeout", "60", env=_env(FAULT="killed"))
    payload = json.loads(stdout)
    host = socket.gethostname()
    assert payload["reason"].startswith(f"rank 1 ({host}) stopped answering during stage forward: ")
    assert payload["exit_code"] == 2
    assert worker_exit_codes(stderr) == {0: 2, 1: -9}


DIES = textwrap.dedent('''\
    """Four layers; the process of rank DIE_RANK ends (os._exit) while it imports, builds or runs the model."""
    import os

    import torch
    from torch import nn

    WHO, WHEN = os.environ.get("DIE_RANK"), os.environ.get("DIE_WHEN")
    if WHEN == "import" and os.environ.get("RANK") == WHO:
        os._exit(3)


    @torch.library.custom_op("skiplint_test::ends", mutates_args=())
    def ends(x: torch.Tensor) -> torch.Tensor:
        if WHEN == "model" and os.environ.get("RANK") == WHO:
            os._exit(3)
        return x.clone()


    @ends.register_fake
    def _(x):
        return torch.empty_like(x)


    ends.register_autograd(lambda ctx, grad: grad)


    class End(nn.Module):
        def forward(self, x):
            return ends(x)


    def build():
        if WHEN == "build" and os.environ.get("RANK") == WHO:
            os._exit(3)
        return nn.Sequential(nn.Linear(4, 4), End(), nn.Linear(4, 4), nn.Linear(4, 4)), torch.ones(4, 4)
''')


@pytest.mark.parametrize("rank, step, when", [
    # About 12 s a launch (torchrun stops the other rank): the quick loop keeps rank 0's case.
    pytest.param(1, "import", "import", marks=pytest.mark.slow),
    pytest.param(1, "build", "build", marks=pytest.mark.slow),
    (0, "plain Sequential", "model"),
])
def test_the_rank_that_ended_is_named_with_its_step(tmp_path, rank, step, when):
    """A rank whose process ends (no error, no result): torchrun stops every other rank. The report
    names that rank and the step it was in; it once blamed rank 0 during import for rank 1, and
    said nothing at all when rank 0 itself ended (another rank reports for it)."""
    path = tmp_path / "dies.py"
    path.write_text(DIES)
    code, stdout, stderr = standalone(2, f"{path}:build", "--format", "json", "--timeout", "60",
                                      env=_env(DIE_RANK=str(rank), DIE_WHEN=when))
    line = (f"rank {rank} ({socket.gethostname()}) stopped answering during {step}: the process ended without "
            "a result and torchrun stopped every rank")
    payload = json.loads(stdout)  # exactly one JSON document, whichever rank wrote it
    assert payload["reason"] == line and payload["exit_code"] == 2
    assert stderr.count("skiplint verify: ") == 1 and f"skiplint verify: {line}\n" in stderr
    assert worker_exit_codes(stderr) == {rank: 3, 1 - rank: 2}


def test_the_targets_own_pipe_is_joined_under_torchrun(tmp_path):
    """A script that builds its GPipe while it imports: every rank's import is rejected by
    verify_skippables; rank 0 joins it as the single-process run does, and no rank calls it an error."""
    path = tmp_path / "script.py"
    path.write_text(
        "import torch\nfrom torch import nn\nfrom torchgpipe import GPipe\n"
        "from torchgpipe.skip import skippable, stash\n\n\n"
        "@skippable(stash=['skip'])\nclass Keep(nn.Module):\n    def forward(self, x):\n"
        "        yield stash('skip', x)\n        return x\n\n\n"
        "MODEL = nn.Sequential(nn.Linear(4, 4), Keep(), nn.Linear(4, 4))\nGPipe(MODEL, balance=[2, 1], chunks=2)\n\n\n"
        "def build():\n    return MODEL, torch.ones(4, 4)\n")
    code, stdout, stderr = standalone(2, f"{path}:build", "--format", "json", "--timeout", "60")
    payload = json.loads(stdout)
    assert verdict(payload) == verdict(verify(f"{path}:build"))
    assert payload["exit_code"] == 1 and payload["reason"] is None
    assert [(o["code"], o["step"], o["layer"], o["predicted"]) for o in payload["observations"]] == [
        ("SKP202", "import", "1", True)]
    assert "skiplint verify: " not in stderr
    assert_every_rank_ended(stderr, 2, 1)


def test_launcher_environment():
    from skiplint.runtime.distributed import launched_by_torchrun

    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1"}
    assert launched_by_torchrun(env)
    assert not launched_by_torchrun({k: v for k, v in env.items() if k != "MASTER_ADDR"})
    assert not launched_by_torchrun({})


def test_more_ranks_than_layers_is_a_usage_error(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text("import torch\nfrom torch import nn\n\n\ndef build():\n"
                    "    return nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)), torch.ones(2, 4)\n")
    code, stdout, stderr = standalone(3, f"{path}:build", "--format", "json")
    payload = json.loads(stdout)
    assert payload["reason"] == "torchrun started 3 ranks but the model has 2 layers: one stage per rank needs at most 2 ranks"
    assert [s["name"] for s in payload["steps"]] == ["import", "build"]
    assert_every_rank_ended(stderr, 3, 2)


def test_a_balance_that_does_not_match_the_ranks_is_a_usage_error():
    target = os.path.join(FIXTURES, "unet.py") + ":build"
    code, stdout, stderr = standalone(2, target, "--balance", "2,2,2")
    assert stdout == ""
    assert stderr.count("skiplint verify: --balance has 3 entries but torchrun started 2 ranks: give one entry "
                        "per rank\n") == 1
    assert_every_rank_ended(stderr, 2, 2)


@pytest.mark.gpu
def test_unet_over_nccl_one_gpu_per_rank():
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("nccl needs one GPU per rank")
    code, stdout, stderr = standalone(2, os.path.join(FIXTURES, "unet.py") + ":build", "--format", "json")
    payload = json.loads(stdout)
    assert code == 0, stderr
    assert payload["devices"] == ["cuda:0", "cuda:1"]
    assert [(c["mode"], c["ok"]) for c in payload["comparisons"]] == [("pipelining", True)]


FIXTURE_FILES = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".py"))
#: Fixtures whose skippables come from fairscale: their own library is the reference backend.
REFERENCE = {"unet_fairscale.py": "fairscale"}


def _reference_verdict(fixture, balance):
    target = os.path.join(FIXTURES, fixture) + ":build"
    reference = verify(target, backend=REFERENCE.get(fixture, "torchgpipe"), balance=balance, checkpoint="never")
    assert reference.reason is None, reference.reason
    return verdict(reference)


def test_a_skip_of_the_pipelines_own_input_runs_under_torchrun():
    """skp301_balance.py with the default balance over two ranks ([3, 2]): the skip of the
    pipeline's own input is carried from rank 0's stage, and the verdict is torchgpipe's."""
    target = os.path.join(FIXTURES, "skp301_balance.py") + ":build"
    code, stdout, stderr = standalone(2, target, "--format", "json", "--timeout", "120")
    payload = json.loads(stdout)
    assert payload["balance"] == [3, 2] and payload["reason"] is None, stderr
    assert [(s["name"], s["status"]) for s in payload["steps"] if s["name"].startswith("pipelining")] == [
        ("pipelining ScheduleGPipe (2 ranks)", "ok")]
    assert verdict(payload) == _reference_verdict("skp301_balance.py", (3, 2))


@pytest.mark.slow  # one launch of two ranks per runtime fixture
@pytest.mark.parametrize("fixture", FIXTURE_FILES)
def test_every_fixture_has_the_reference_verdict_under_torchrun(fixture):
    target = os.path.join(FIXTURES, fixture) + ":build"
    code, stdout, stderr = standalone(2, target, "--format", "json", "--timeout", "120")
    payload = json.loads(stdout)
    assert verdict(payload) == _reference_verdict(fixture, tuple(payload["balance"])), stderr
    assert code == payload["exit_code"]
