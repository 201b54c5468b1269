"""A `-j` worker that is stopped (SIGSTOP) or stuck costs the run one file, never the run: each file
has limits.FILE_SECONDS in a worker, then its process is ended and the file reported as not
checked (one SKP900 line, exit 2); every other file is still checked. A hook in sitecustomize makes
a worker stop or hang and lowers the limit, as no real file can; one run has a stopped worker and a
stuck one, whose limits elapse together."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from skiplint import limits, parallel
from tests.messages import printed

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX signals")

#: A file with two findings, so that a checked file shows in the output.
UNDECLARED = textwrap.dedent("""\
    from torch import nn
    from torchgpipe.skip import skippable, stash


    @skippable(stash=["declared"])
    class Probe(nn.Module):
        def forward(self, x):
            yield stash("typo", x)
            return x
""")

HOOK = textwrap.dedent("""\
    import json
    import multiprocessing
    import os
    import signal
    import time

    from skiplint import limits, parallel

    limits.FILE_SECONDS = float(os.environ["FILE_SECONDS"])
    limits.WORKER_EXIT_SECONDS = 1.0
    #: STUCK="m03.py:stop,m08.py:hang": the worker that takes that file stops (SIGSTOP) or hangs on it.
    STUCK = dict(item.split(":") for item in os.environ.get("STUCK", "").split(",") if item)
    _check_chunk = parallel._check_chunk
    _check_one = parallel.check_one
    _worker_init = parallel._worker_init
    _index = -1


    def check_chunk(chunk):
        global _index
        out = []
        for pair in chunk:
            _index = pair[0]  # the file's place in the run, for meet()
            out += _check_chunk([pair])
        return out


    def meet(name):
        # The stuck files wait for each other (each in its own worker), then both take the earlier of
        # their two starts, as if two workers had taken them at the same moment: both are overdue at
        # the run's same look, so that the run waits out one limit for the two of them.
        meeting = os.environ["MEET"]
        with open(os.path.join(meeting, name + ".tmp"), "w") as out:
            json.dump(parallel._SINCE[_index], out)
        os.replace(os.path.join(meeting, name + ".tmp"), os.path.join(meeting, name))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(os.path.exists(os.path.join(meeting, n)) for n in STUCK):
            time.sleep(0.01)
        starts = []
        for other in STUCK:
            if os.path.exists(os.path.join(meeting, other)):
                with open(os.path.join(meeting, other)) as given:
                    starts.append(json.load(given))
        parallel._SINCE[_index] = min(starts)


    def check_one(task, session=None):
        how = STUCK.get(os.path.basename(task[0]))
        if how and multiprocessing.parent_process() is not None:
            meet(os.path.basename(task[0]))
            if how == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
            else:
                time.sleep(3600)
        return _check_one(task, session)


    def worker_init(*args):
        _worker_init(*args)
        # The first worker stops before it takes any file (it may hold the queue's lock meanwhile).
        if os.environ.get("STOP_IDLE") and args[2][0] == os.getpid():
            os.kill(os.getpid(), signal.SIGSTOP)


    parallel._check_chunk = check_chunk
    parallel.check_one = check_one
    parallel._worker_init = worker_init
""")


def checked(i: int) -> list[str]:
    """The output for src/mNN.py when it is checked."""
    return [printed(f"src/m{i:02d}.py", 5, 19, "SKP103", name="declared"),
            printed(f"src/m{i:02d}.py", 8, 15, "SKP101", name="typo")]


#: The limit in these runs: far above what a file takes on a loaded machine, also in a fresh process.
TEST_LIMIT = "15"


def unchecked(i: int) -> str:
    """The output for src/mNN.py when its worker was ended."""
    return (f"src/m{i:02d}.py:1:1: SKP900 could not check this file: checking it took more than {TEST_LIMIT} s, "
            "the limit for one file; the process checking it was ended")


def skiplint_run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    for i in range(12):
        (tmp_path / "src" / f"m{i:02d}.py").parent.mkdir(exist_ok=True)
        (tmp_path / "src" / f"m{i:02d}.py").write_text(UNDECLARED)
    (tmp_path / "hook").mkdir(exist_ok=True)
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    (tmp_path / "meet").mkdir(exist_ok=True)
    path = os.pathsep.join([str(tmp_path / "hook"), *filter(None, [os.environ.get("PYTHONPATH")])])
    environ = dict(os.environ, PYTHONPATH=path, FILE_SECONDS=TEST_LIMIT, MEET=str(tmp_path / "meet"), **env)
    return subprocess.run([sys.executable, "-m", "skiplint", "-j", "2", "src"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=environ)


#: Which file's worker is stopped and which one's hangs, in the one run that the tests below share.
STUCK = {"stop": 3, "hang": 8}


@pytest.fixture(scope="module")
def stuck_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """One run for both ways of being stuck: their limits elapse together (one wait of TEST_LIMIT)."""
    stuck = ",".join(f"m{i:02d}.py:{how}" for how, i in STUCK.items())
    return skiplint_run(tmp_path_factory.mktemp("stuck"), STUCK=stuck)


@pytest.mark.parametrize("how", sorted(STUCK))
def test_a_worker_stopped_or_stuck_on_a_file_costs_that_file(stuck_run: subprocess.CompletedProcess[str],
                                                             how: str) -> None:
    assert stuck_run.returncode == 2 and stuck_run.stderr == ""
    i = STUCK[how]
    assert [line for line in stuck_run.stdout.splitlines() if line.startswith(f"src/m{i:02d}.py:")] == [unchecked(i)], \
        stuck_run.stdout


def test_every_other_file_is_checked_meanwhile(stuck_run: subprocess.CompletedProcess[str]) -> None:
    assert stuck_run.returncode == 2 and stuck_run.stderr == ""
    assert stuck_run.stdout.splitlines() == [
        line for i in range(12) for line in ([unchecked(i)] if i in STUCK.values() else checked(i))], stuck_run.stdout


def test_a_worker_stopped_while_idle_holds_up_nothing(tmp_path: Path) -> None:
    result = skiplint_run(tmp_path, STOP_IDLE="1")
    assert result.returncode == 1 and result.stderr == ""
    assert result.stdout.splitlines() == [line for i in range(12) for line in checked(i)], result.stdout


def test_the_limit_is_generous() -> None:
    # A bound for a process that does not run, never for a slow file: well past the parser's worst case.
    assert limits.FILE_SECONDS >= 600 and parallel._TICK < limits.FILE_SECONDS


def test_a_stopped_worker_does_not_keep_the_run_from_ending(monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    monkeypatch.setattr(limits, "WORKER_EXIT_SECONDS", 1.0)
    context = multiprocessing.get_context()
    workers = context.Array("i", 1)
    pool = parallel.ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=parallel._worker_init,
                                        initargs=(context.Array("b", 1, lock=False),
                                                  context.Array("d", 1, lock=False), workers, False))
    assert pool.submit(os.getpid).result() == workers[0]
    os.kill(workers[0], signal.SIGSTOP)
    closing = threading.Thread(target=lambda: (parallel._close(pool, workers), pool.shutdown(wait=True)), daemon=True)
    closing.start()
    closing.join(timeout=120)  # a guard against a hang, not a timing: it returns once the worker is ended
    if closing.is_alive():
        os.kill(workers[0], signal.SIGKILL)
    assert not closing.is_alive(), "the stopped worker kept the pool from shutting down"
    for process in [p for p in multiprocessing.active_children() if p.pid == workers[0]]:
        # Ended, perhaps not reaped yet (the pool's own thread may be reaping it meanwhile).
        for _ in range(1200):
            if process.exitcode is not None:
                break
            threading.Event().wait(0.05)
        assert process.exitcode == -signal.SIGKILL
