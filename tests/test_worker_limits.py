"""A `-j` worker that is stopped (SIGSTOP) or stuck costs the run one file, never the run: each file
has limits.FILE_SECONDS in a worker, then its process is ended and the file reported as not
checked (one SKP900 line, exit 2); every other file is still checked. A hook in sitecustomize makes
one worker stop or hang and lowers the limit, as no real file can."""

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
    import multiprocessing
    import os
    import signal
    import time

    from skiplint import limits, parallel

    limits.FILE_SECONDS = float(os.environ["FILE_SECONDS"])
    limits.WORKER_EXIT_SECONDS = 1.0
    _check_one = parallel.check_one
    _worker_init = parallel._worker_init


    def check_one(task):
        if task[0].endswith(os.environ.get("STUCK_FILE", "-")) and multiprocessing.parent_process() is not None:
            if os.environ["HOW"] == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
            else:
                time.sleep(3600)
        return _check_one(task)


    def worker_init(*args):
        _worker_init(*args)
        # The first worker stops before it takes any file (it may hold the queue's lock meanwhile).
        if os.environ.get("HOW") == "stop-idle" and args[2][0] == os.getpid():
            os.kill(os.getpid(), signal.SIGSTOP)


    parallel.check_one = check_one
    parallel._worker_init = worker_init
""")


def checked(i: int) -> list[str]:
    """The output for src/mNN.py when it is checked."""
    return [f"src/m{i:02d}.py:5:19: SKP103 'declared' is declared in stash=[...] but no path of forward stashes it",
            f"src/m{i:02d}.py:8:15: SKP101 'typo' is stashed but not declared in stash=[...]"]


#: The limit in these runs: far above what a file takes on a loaded machine, also in a fresh process.
TEST_LIMIT = "15"


def skiplint_run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    for i in range(12):
        (tmp_path / "src" / f"m{i:02d}.py").parent.mkdir(exist_ok=True)
        (tmp_path / "src" / f"m{i:02d}.py").write_text(UNDECLARED)
    (tmp_path / "hook").mkdir(exist_ok=True)
    (tmp_path / "hook" / "sitecustomize.py").write_text(HOOK)
    environ = dict(os.environ, PYTHONPATH=str(tmp_path / "hook"), FILE_SECONDS=TEST_LIMIT, **env)
    return subprocess.run([sys.executable, "-m", "skiplint", "-j", "2", "src"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=environ)


@pytest.mark.parametrize("how", ["stop", "hang"])
def test_a_worker_stopped_or_stuck_on_a_file_costs_that_file(tmp_path: Path, how: str) -> None:
    result = skiplint_run(tmp_path, STUCK_FILE="m05.py", HOW=how)
    assert result.returncode == 2 and result.stderr == ""
    unchecked = (f"src/m05.py:1:1: SKP900 could not check this file: checking it took more than {TEST_LIMIT} s, "
                 "the limit for one file; the process checking it was ended")
    assert result.stdout.splitlines() == [
        line for i in range(12) for line in (checked(i) if i != 5 else [unchecked])], result.stdout


def test_a_worker_stopped_while_idle_holds_up_nothing(tmp_path: Path) -> None:
    result = skiplint_run(tmp_path, HOW="stop-idle")
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
