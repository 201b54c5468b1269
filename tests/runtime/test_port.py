"""`skiplint port`: the torchrun script it writes, the settings it takes (given, the factory's
pipe's, defaults), what it refuses before anything runs, and `--check`, which runs the port under
torchrun (gloo) against GPipe and names the first tensor that differs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchgpipe")

from skiplint import cli, port  # noqa: E402
from skiplint.port import command  # noqa: E402

from .conftest import FIXTURES, ROOT  # noqa: E402

UNET = os.path.join(FIXTURES, "unet.py") + ":build"
EQUAL = re.compile(r"^skiplint port: --check: the (\w+) port over (\d) processes equals (\w+) \((\[[\d, ]+\]), "
                   r"(\d+) micro-batches\): output, loss and (\d+) gradients, in float32 \(rtol 1e-05, atol 1e-06\) "
                   r"and float64$")

#: Two skips of the same shape stashed by one layer and popped in the next stage: swapping them
#: on the way changes the result, not its shape.
TWO_SKIPS = textwrap.dedent('''\
    import torch
    from torch import nn
    from torchgpipe.skip import pop, skippable, stash


    @skippable(stash=["a", "b"])
    class StashTwo(nn.Module):
        def forward(self, x):
            yield stash("a", torch.tanh(x))
            yield stash("b", x * 2)
            return x


    @skippable(pop=["a"])
    class PopA(nn.Module):
        def forward(self, x):
            a = yield pop("a")
            return x * a


    @skippable(pop=["b"])
    class PopB(nn.Module):
        def forward(self, x):
            b = yield pop("b")
            return x - b


    def build():
        torch.manual_seed(0)
        model = nn.Sequential(StashTwo(), nn.Linear(4, 4), nn.Linear(4, 4), PopA(), PopB())
        return model, torch.randn(4, 4)
''')

#: Swaps the skips a stage receives (and nothing it sends), in every process that imports it.
PLANTED = textwrap.dedent('''\
    import os

    if os.environ.get("SKIPLINT_PLANT") == "swap":
        from skiplint.runtime import adapter

        _init = adapter.Stage.__init__

        def _swapped(self, *args):  # each stage reads its incoming skips in the wrong order
            _init(self, *args)
            self.incoming = tuple(reversed(self.incoming))

        adapter.Stage.__init__ = _swapped
''')

#: The factory returns the pipe: GPipe cannot be built here (no CUDA), and its settings still count.
RETURNS_PIPE = textwrap.dedent('''\
    import torch
    from torch import nn
    from torchgpipe import GPipe
    from torchgpipe.skip import pop, skippable, stash


    @skippable(stash=["skip"])
    class Save(nn.Module):
        def forward(self, x):
            yield stash("skip", x)
            return x


    @skippable(pop=["skip"])
    class Load(nn.Module):
        def forward(self, x):
            skip = yield pop("skip")
            return x + skip


    def make_pipe():
        model = nn.Sequential(Save(), nn.Linear(4, 4), nn.Linear(4, 4), Load(), nn.Linear(4, 4))
        return GPipe(model, balance=[1, 2, 2], chunks=4)
''')


def port_cli(capsys, *args):
    code = cli.main(["port", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_unet_port_equals_gpipe(capsys):
    code, out, err = port_cli(capsys, UNET, "--check")
    assert code == 0, err
    assert EQUAL.match(out.strip()).groups() == ("gpipe", "2", "torchgpipe", "[3, 3]", "2", "12")


def test_a_planted_routing_bug_is_named(capsys, tmp_path, monkeypatch):
    model = tmp_path / "two_skips.py"
    model.write_text(TWO_SKIPS)
    (tmp_path / "sitecustomize.py").write_text(PLANTED)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), ROOT]))
    code, out, err = port_cli(capsys, f"{model}:build", "--balance", "2,3", "--check")
    assert code == 0, err  # nothing planted: equal
    monkeypatch.setenv("SKIPLINT_PLANT", "swap")
    code, out, err = port_cli(capsys, f"{model}:build", "--balance", "2,3", "--check")
    assert code == 1, err
    assert re.match(r"^skiplint port: --check: the output differs in float32: max \|diff\| [\d.e+-]+ at \[\d, \d\] "
                    r"\(ported [-\d.e+]+, GPipe [-\d.e+]+\)$", out.strip()), out


def test_a_factory_that_returns_the_pipe_gives_its_balance_and_chunks(tmp_path):
    path = tmp_path / "returns_pipe.py"
    path.write_text(RETURNS_PIPE)
    built = port.build(f"{path}:make_pipe")
    settings = command.settle(f"{path}:make_pipe", None, None, "gpipe", built)
    assert (settings.balance, settings.chunks, settings.ranks, settings.library) == ((1, 2, 2), 4, 3, "torchgpipe")
    assert dict(settings.origin) == {"balance": "the factory's torchgpipe pipe",
                                     "chunks": "the factory's torchgpipe pipe"}
    given = command.settle(f"{path}:make_pipe", (2, 3), 2, "gpipe", built)
    assert (given.balance, given.chunks, given.ranks) == ((2, 3), 2, 2)


@pytest.mark.parametrize("args, reason", [
    (["--balance", "3,2"], "balance [3, 2] sums to 5 but the model has 6 layers"),
    (["--schedule", "1f1b", "--balance", "2,2,2", "--chunks", "2"],
     "the 1f1b schedule needs at least as many micro-batches as stages: --chunks 3 or more, not 2"),
    (["--schedule", "interleaved", "--balance", "3,3"],
     "the interleaved schedule runs two stages on each of at least two processes: give --balance an even "
     "number of stages, at least 4, not 2"),
    (["--schedule", "interleaved", "--balance", "1,1,1,1,2"],
     "the interleaved schedule runs two stages on each of at least two processes: give --balance an even "
     "number of stages, at least 4, not 5"),
    (["--schedule", "interleaved", "--balance", "1,1,1,1,1,1", "--chunks", "7"],
     "the interleaved schedule over 3 processes splits the micro-batches into 2 equal rounds: --chunks 7 does "
     "not divide into them"),
    (["--chunks", "0"], "--chunks must be at least 1, not 0"),
])
def test_what_cannot_be_ported_is_said_before_anything_runs(capsys, tmp_path, args, reason):
    code, out, err = port_cli(capsys, UNET, *args, "-o", str(tmp_path / "unet_pp.py"))
    assert (code, out, err) == (2, "", f"skiplint port: cannot port {UNET}: {reason}\n")
    assert not (tmp_path / "unet_pp.py").exists()


@pytest.mark.parametrize("fixture, reason", [
    ("skp105_stash_and_pop.py", "torchgpipe's verify_skippables rejects the model: '1' declared 'skip' both as "
                                "stashable and as poppable; `skiplint check` says where"),
    ("skp202_stash_never_popped.py", "torchgpipe's verify_skippables rejects the model: no module declared 'skip' "
                                     "as poppable but stashed; `skiplint check` says where"),
    ("skp110_pop_twice.py", "the model fails on its sample: KeyError: 'skip'"),
])
def test_a_model_with_a_skip_bug_is_not_ported(capsys, fixture, reason):
    target = os.path.join(FIXTURES, fixture) + ":build"
    assert port_cli(capsys, target, "--check") == (2, "", f"skiplint port: cannot port {target}: {reason}\n")


def test_a_script_that_cannot_be_written(capsys, tmp_path):
    missing = tmp_path / "no such folder" / "pp.py"
    assert port_cli(capsys, UNET, "-o", str(missing)) == (
        2, "", f"skiplint port: cannot write {missing}: No such file or directory\n")


def test_nothing_to_do(capsys):
    assert port_cli(capsys, UNET) == (2, "", "skiplint port: nothing to do: give -o SCRIPT, --check, or both\n")


def test_the_script_names_the_settings_and_marks_what_the_user_fills_in(capsys, tmp_path):
    script = tmp_path / "unet_pp.py"
    code, out, err = port_cli(capsys, UNET, "--schedule", "1f1b", "--balance", "2,2,2", "-o", str(script))
    assert code == 0, err
    assert out == (f"wrote {script}: 3 stages [2, 2, 2] over 3 processes, 1f1b, 3 micro-batches; run it with "
                   f"torchrun --nproc-per-node 3 {script}\n")
    text = script.read_text()
    compile(text, str(script), "exec")
    assert f"TARGET = {os.path.join(FIXTURES, 'unet.py') + ':build'!r}\n" in text
    assert "BALANCE = (2, 2, 2)\nCHUNKS = 3\nSCHEDULE = '1f1b'\n" in text
    assert text.count("# TODO(port):") == 2
    assert "torchrun --nproc-per-node 3 unet_pp.py" in text


def test_a_gpipe_checkpoint_loads_into_the_stages():
    from torchgpipe import GPipe

    built = port.build(UNET)
    pipe = GPipe(built.model, balance=[2, 2, 2], devices=["cpu"] * 3, chunks=2)
    state = pipe.state_dict()
    assert any(key.startswith("partitions.1.") for key in state)
    from skiplint.runtime import adapter

    fresh = port.build(UNET).model
    stages = adapter.stages(fresh, adapter.plan(fresh, (2, 2, 2)))
    for stage in stages:
        stage.load_state_dict(port.stage_state(state, stage))
    for name, tensor in built.model.state_dict().items():
        assert torch.equal(fresh.state_dict()[name], tensor), name


@pytest.mark.slow  # two launches of two processes
@pytest.mark.parametrize("schedule", ["1f1b", "interleaved"])
def test_every_schedule_of_the_unet_port_equals_gpipe(capsys, schedule):
    code, out, err = port_cli(capsys, UNET, "--schedule", schedule, "--check")
    assert code == 0, err
    assert EQUAL.match(out.strip()).group(1) == schedule


#: The runtime fixtures whose build is clean under GPipe, each ported with its own (default) settings.
CLEAN = ["unet.py", "unet_fairscale.py", "skp301_balance.py"]


@pytest.mark.slow  # one launch per fixture
@pytest.mark.parametrize("fixture", CLEAN)
def test_every_clean_runtime_fixture_ports_equal(capsys, fixture):
    code, out, err = port_cli(capsys, os.path.join(FIXTURES, fixture) + ":build", "--check")
    assert code == 0, err
    assert EQUAL.match(out.strip())


GPIPE_TRAINING = textwrap.dedent('''\
    import sys

    import torch
    from torchgpipe import GPipe

    from skiplint import port

    torch.set_num_threads(1)
    torch.manual_seed(0)
    built = port.build(sys.argv[1])
    with torch.no_grad():
        shape = built.model(built.sample).shape
    target = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    pipe = GPipe(built.model, balance=[3, 3], devices=["cpu", "cpu"], chunks=2)
    optimizer = torch.optim.SGD(pipe.parameters(), lr=0.01)
    for step in range(3):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(pipe(built.sample), target)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.9g}")
''')


def _losses(text):
    return [float(v) for v in re.findall(r"^step \d loss (\S+)$", text, re.M)]


@pytest.mark.slow  # a torchrun launch of the written script
def test_the_written_script_trains_the_unet_as_gpipe_does(capsys, tmp_path):
    script = tmp_path / "unet_pp.py"
    code, _out, err = port_cli(capsys, UNET, "-o", str(script))
    assert code == 0, err
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=ROOT)
    trained = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                              str(script), "--steps", "3"], capture_output=True, text=True, env=env, timeout=600)
    assert trained.returncode == 0, trained.stderr
    reference = tmp_path / "gpipe_training.py"
    reference.write_text(GPIPE_TRAINING)
    gpipe = subprocess.run([sys.executable, str(reference), UNET], capture_output=True, text=True, env=env,
                           timeout=600)
    assert gpipe.returncode == 0, gpipe.stderr
    ported, expected = _losses(trained.stdout), _losses(gpipe.stdout)
    assert len(ported) == len(expected) == 3
    assert ported == pytest.approx(expected, rel=1e-5, abs=1e-6)


CHECKPOINTED = textwrap.dedent('''\
    import torch
    from torch import nn
    from torchgpipe import GPipe


    def make_pipe():
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
        return GPipe(model, balance=[2, 1], devices=["cpu", "cpu"], chunks=2, checkpoint="always")
''')

NONE_ACROSS = textwrap.dedent('''\
    import torch
    from torch import nn
    from torchgpipe.skip import pop, skippable, stash


    @skippable(stash=["mask"])
    class NoMask(nn.Module):
        def forward(self, x):
            yield stash("mask", None)
            return x


    @skippable(pop=["mask"])
    class ApplyMask(nn.Module):
        def forward(self, x):
            mask = yield pop("mask")
            return x if mask is None else x * mask


    def build():
        return nn.Sequential(NoMask(), nn.Linear(4, 4), ApplyMask()), torch.ones(4, 4)
''')


def test_a_blocker_finding_refuses_the_port_in_the_rules_words(capsys, tmp_path):
    path = tmp_path / "checkpointed.py"
    path.write_text(CHECKPOINTED)
    code, out, err = port_cli(capsys, f"{path}:make_pipe", "-o", str(tmp_path / "pp.py"))
    assert (code, out) == (2, "")
    assert err == (f"skiplint port: cannot port {path}:make_pipe: {path}:8:75: SKP503 GPipe(checkpoint='always') "
                   "has no counterpart in torch.distributed.pipelining: wrap the layers to recompute in "
                   "torch.utils.checkpoint.checkpoint inside their forward instead\n")
    found = subprocess.run([sys.executable, "-m", "skiplint", "check", "--select", "SKP503", str(path)],
                           capture_output=True, text=True)
    assert found.stdout.splitlines()[0] == err.split(": ", 2)[2].rstrip("\n")


def test_a_skip_of_none_between_stages_is_refused(capsys, tmp_path):
    path = tmp_path / "none_across.py"
    path.write_text(NONE_ACROSS)
    code, out, err = port_cli(capsys, f"{path}:build", "--balance", "1,2", "-o", str(tmp_path / "pp.py"))
    assert (code, out) == (2, "")
    assert err == (f"skiplint port: cannot port {path}:build: stage 0 would send its skip 'mask' as a NoneType, not "
                   "a tensor: torch.distributed.pipelining carries only tensors between stages; stash a tensor, or "
                   "keep the stash and its pop in one stage (SKP501)\n")
    code, out, err = port_cli(capsys, f"{path}:build", "--balance", "3", "-o", str(tmp_path / "pp.py"))
    assert code == 0, err  # one stage: the None never leaves it


def generated_unet(depth):
    """A skippable Sequential of 2 * depth + 3 layers: the pipeline's input stashed by the first
    layer and popped by the last, and `depth` nested skips named 'skip'; every skip in a namespace."""
    return textwrap.dedent(f'''\
        import torch
        from torch import nn
        from torchgpipe.skip import Namespace, pop, skippable, stash


        @skippable(stash=["input"])
        class KeepInput(nn.Module):
            def forward(self, x):
                yield stash("input", x)
                return x


        @skippable(pop=["input"])
        class AddInput(nn.Module):
            def forward(self, x):
                identity = yield pop("input")
                return x + identity


        @skippable(stash=["skip"])
        class Down(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(4, 4)

            def forward(self, x):
                x = torch.tanh(self.linear(x))
                yield stash("skip", x)
                return x * 0.5


        @skippable(pop=["skip"])
        class Up(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = nn.Linear(8, 4)

            def forward(self, x):
                skip = yield pop("skip")
                return self.linear(torch.cat([x, skip], dim=1))


        def build():
            torch.manual_seed(0)
            spaces = [Namespace() for _ in range({depth})]
            first = Namespace()  # a default namespace beside isolated ones fails GPipe itself (SKP306)
            layers = [KeepInput().isolate(first)]
            layers += [Down().isolate(ns) for ns in spaces]
            layers.append(nn.Linear(4, 4))
            layers += [Up().isolate(ns) for ns in reversed(spaces)]
            layers.append(AddInput().isolate(first))
            return nn.Sequential(*layers), torch.randn(12, 4)
    ''')


@pytest.mark.slow  # one torchrun launch per case
@pytest.mark.parametrize("depth, schedule, balance, chunks", [
    (2, "gpipe", "2,5", 2), (2, "gpipe", "3,2,2", 4), (3, "gpipe", "1,8", 1),
    (2, "1f1b", "4,3", 2), (2, "1f1b", "1,3,3", 3), (3, "1f1b", "5,4", 4),
    (2, "interleaved", "2,2,2,1", 2), (3, "interleaved", "1,3,3,2", 4),
])
def test_generated_sequentials_port_equal(capsys, tmp_path, depth, schedule, balance, chunks):
    path = tmp_path / f"unet{depth}.py"
    path.write_text(generated_unet(depth))
    code, out, err = port_cli(capsys, f"{path}:build", "--schedule", schedule, "--balance", balance,
                              "--chunks", str(chunks), "--check")
    assert code == 0, err
    assert EQUAL.match(out.strip()).group(1) == schedule


SAME_VALUE = textwrap.dedent('''\
    import torch
    from torch import nn
    from torchgpipe.skip import pop, skippable, stash


    @skippable(stash=["skip"])
    class Save(nn.Module):
        def forward(self, x):
            yield stash("skip", x)
            return x


    @skippable(pop=["skip"])
    class Load(nn.Module):
        def forward(self, x):
            skip = yield pop("skip")
            return x + skip


    def build():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 4), Save(), nn.Linear(4, 4), nn.Tanh(), Load(), nn.Linear(4, 4))
        return model, torch.randn(4, 4)
''')


def test_a_value_that_is_both_output_and_skip_reaches_two_stages_later(capsys, tmp_path):
    """`yield stash(n, x); return x` at a stage's edge: the same tensor is the stage's output and a
    skip popped two stages later (what the traced front end fails in backward); 1F1B runs it."""
    path = tmp_path / "same_value.py"
    path.write_text(SAME_VALUE)
    code, out, err = port_cli(capsys, f"{path}:build", "--balance", "2,2,2", "--schedule", "1f1b", "--chunks", "4",
                              "--check")
    assert code == 0, err
    assert EQUAL.match(out.strip()).groups()[:5] == ("1f1b", "3", "torchgpipe", "[2, 2, 2]", "4")


TUPLES = textwrap.dedent('''\
    import torch
    from torch import nn
    from torchgpipe.skip import pop, skippable, stash


    class Split(nn.Module):
        def forward(self, x):
            return x, x * 2


    class Merge(nn.Module):
        def forward(self, pair):
            a, b = pair
            return a + b


    class Both(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, pair):
            a, b = pair
            return self.linear(a), torch.tanh(b)


    @skippable(stash=["skip"])
    class Save(nn.Module):
        def forward(self, x):
            yield stash("skip", x)
            return x


    @skippable(pop=["skip"])
    class Load(nn.Module):
        def forward(self, x):
            skip = yield pop("skip")
            return x + skip


    def build():
        torch.manual_seed(0)
        return nn.Sequential(Save(), Split(), Both(), Merge(), nn.Linear(4, 4), Load()), torch.randn(4, 4)
''')


@pytest.mark.slow  # two launches of three processes
@pytest.mark.parametrize("schedule, chunks", [("gpipe", "2"), ("1f1b", "4")])
def test_a_tuple_between_layers_crosses_a_stage_boundary(capsys, tmp_path, schedule, chunks):
    """A layer that returns a tuple at a stage's edge: its tensors cross the boundary before the skips."""
    path = tmp_path / "tuples.py"
    path.write_text(TUPLES)
    code, out, err = port_cli(capsys, f"{path}:build", "--balance", "2,2,2", "--schedule", schedule, "--chunks", chunks,
                              "--check")
    assert code == 0, err
    assert EQUAL.match(out.strip()).group(1) == schedule
