"""`-j N` gives the same output, in the same order, as `-j 1`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from skiplint import config, parallel, rules
from skiplint.session import Session

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def skiplint(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """`skiplint ARGS` in the repository, in this process (the subprocess doors are tested in
    test_doors.py): its exit status and output as a subprocess would give them."""
    from skiplint import cli

    monkeypatch.chdir(REPO)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        status = cli.main(list(argv))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["skiplint", *argv], status, out, err)

    return run


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_two_jobs_print_what_one_job_prints_on_the_fixtures(fmt: str, skiplint: Callable[..., Any]) -> None:
    one = skiplint("-j", "1", "--format", fmt, "--extend-select", ",".join(sorted(rules.OPT_IN)), "fixtures")
    two = skiplint("-j", "2", "--format", fmt, "--extend-select", ",".join(sorted(rules.OPT_IN)), "fixtures")
    assert one.returncode == two.returncode == 1
    assert one.stdout and one.stdout == two.stdout
    assert one.stderr == two.stderr


def test_default_jobs_is_every_core_and_same_output(skiplint: Callable[..., Any]) -> None:
    assert parallel.default_jobs() >= 1
    assert skiplint("fixtures").stdout == skiplint("-j", "1", "fixtures").stdout


def test_order_and_per_file_config_survive_workers(tmp_path: Path) -> None:
    # Many files, each directory with its own configuration, so that chunks go to several workers.
    for i in range(40):
        sub = tmp_path / f"pkg{i % 4}"
        sub.mkdir(exist_ok=True)
        (sub / "setup.cfg").write_text(f"[skiplint]\nignore = {'SKP103' if i % 4 == 0 else 'SKP2'}\n"
                                       "api-aliases = proj.skip = torchgpipe.skip\n", encoding="utf-8")
        (sub / f"m{i:02d}.py").write_text(
            "from proj.skip import skippable, stash\n"
            "@skippable(stash=['a'])\n"
            "class A:\n"
            "    def forward(self, x):\n"
            f"        yield stash('b{i}', x)\n"
            "        return x\n", encoding="utf-8")
    finder = config.Finder()
    tasks = list(finder.discover([str(tmp_path)]))
    serial = parallel.check_all(tasks, 1)
    assert parallel.check_all(tasks, 3) == serial
    assert [r.path for r in serial] == [t[0] for t in tasks]
    codes = {Path(r.path).name: [d.code for d in r.diagnostics] for r in serial}
    assert codes["m00.py"] == ["SKP101"] and codes["m01.py"] == ["SKP103", "SKP101"]


def _model_tasks(tmp_path: Path, count: int) -> list[parallel.Task]:
    for i in range(count):
        (tmp_path / f"m{i}.py").write_text(
            "from torchgpipe.skip import skippable, stash\n"
            "@skippable(stash=['a'])\n"
            "class A:\n"
            "    def forward(self, x):\n"
            f"        yield stash('b{i}', x)\n"
            "        return x\n", encoding="utf-8")
    return list(config.Finder().discover([str(tmp_path)]))


def test_a_serial_run_settles_the_collector_every_few_files_and_unfreezes_at_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    tasks = _model_tasks(tmp_path, 5)
    unsettled = parallel.check_all(tasks, 1)
    calls: list[str] = []
    real_freeze, real_unfreeze = gc.freeze, gc.unfreeze
    monkeypatch.setattr(gc, "freeze", lambda: (calls.append("freeze"), real_freeze())[1])
    monkeypatch.setattr(gc, "unfreeze", lambda: (calls.append("unfreeze"), real_unfreeze())[1])
    monkeypatch.setattr(parallel, "SETTLE_EVERY", 2)
    assert parallel.check_all(tasks, 1, settle=True) == unsettled
    assert calls == ["freeze", "freeze", "unfreeze"]  # after the 2nd and the 4th file; at the end
    assert parallel._checked_since is None
    assert [[d.code for d in r.diagnostics] for r in unsettled] == [["SKP103", "SKP101"]] * 5
    assert parallel.check_all(tasks, 2, settle=True) == unsettled  # workers settle too (forked: every 2 files)


def test_only_a_run_that_asks_settles_and_never_with_the_collector_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    tasks = _model_tasks(tmp_path, 3)
    calls: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "unfreeze", lambda: calls.append("unfreeze"))
    monkeypatch.setattr(parallel, "SETTLE_EVERY", 1)
    parallel.check_all(tasks, 1)  # a library caller's collector is its own
    assert calls == []
    gc.disable()
    try:
        parallel.check_all(tasks, 1, settle=True)
    finally:
        gc.enable()
    assert calls == []
    parallel.check_all(tasks, 1, settle=True)
    assert calls == ["freeze"] * 3 + ["unfreeze"]


def test_the_cli_asks_its_run_to_settle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skiplint import cli

    tasks = _model_tasks(tmp_path, 1)
    seen: list[bool] = []
    real = parallel.check_all

    def check_all(tasks: list[parallel.Task], jobs: int = 0, settle: bool = False,
                  session: Optional[Session] = None) -> list[object]:
        seen.append(settle)
        return real(tasks, jobs, settle, session)  # type: ignore[return-value]

    monkeypatch.setattr(parallel, "check_all", check_all)
    assert cli.main(["--isolated", tasks[0][0]]) == 1
    assert seen == [True]


def _mixed_tasks(tmp_path: Path) -> list[parallel.Task]:
    """Files 0, 2, 4 and 5 use the API (the same size each); 1 and 3 do not."""
    for i in range(6):
        body = ("import os\nprint(os.sep)\n" if i in (1, 3) else
                "from torchgpipe.skip import skippable, stash\n@skippable(stash=['a'])\nclass A:\n"
                f"    def forward(self, x):\n        yield stash('b{i}', x)\n        return x\n")
        (tmp_path / f"m{i}.py").write_text(body, encoding="utf-8")
    return list(config.Finder(isolated=True).discover([str(tmp_path)]))


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], int]]:
    """The pools a run with no -j starts, as (files, processes), on a machine with two cores (the
    run hands them to check_all with the number of processes; -j 1 is no pool)."""
    started: list[tuple[list[str], int]] = []
    real = parallel.check_all

    def check_all(tasks: list[parallel.Task], jobs: Optional[int] = None, settle: bool = False,
                  session: Optional[Session] = None) -> list[object]:
        if jobs is not None and jobs > 1:
            started.append(([Path(path).name for path, _ in tasks], jobs))
        return real(tasks, jobs, settle, session)  # type: ignore[return-value]

    monkeypatch.setattr(parallel, "check_all", check_all)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 2)
    return started


def test_with_no_jobs_a_few_small_files_are_checked_in_this_process(
        tmp_path: Path, pools: list[tuple[list[str], int]]) -> None:
    tasks = _mixed_tasks(tmp_path)
    serial = parallel.check_all(tasks, 1)
    assert parallel.check_all(tasks) == parallel.check_all(tasks, 0) == serial
    assert pools == []
    assert [[d.code for d in r.diagnostics] for r in serial] == [["SKP103", "SKP101"], [], ["SKP103", "SKP101"], [],
                                                                ["SKP103", "SKP101"], ["SKP103", "SKP101"]]


def test_with_no_jobs_a_pool_starts_once_the_files_waiting_for_the_analysis_pay_for_it(
        tmp_path: Path, pools: list[tuple[list[str], int]], monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _mixed_tasks(tmp_path)
    serial = parallel.check_all(tasks, 1)
    api_file = len((tmp_path / "m0.py").read_text(encoding="utf-8"))
    monkeypatch.setattr(parallel, "POOL_ANALYSIS_BYTES", 2 * api_file)
    # m0 and m2 wait for the analysis and reach the mark: they and every file not read yet go to
    # the pool; m1, which the prefilter passed as clean, does not.
    assert parallel.check_all(tasks, settle=True) == serial
    assert pools == [(["m0.py", "m2.py", "m3.py", "m4.py", "m5.py"], 2)]
    pools.clear()
    monkeypatch.setattr(parallel, "POOL_ANALYSIS_BYTES", 4 * api_file)  # reached by the last file alone
    assert parallel.check_all(tasks) == serial
    assert pools == [(["m0.py", "m2.py", "m4.py", "m5.py"], 2)]
    pools.clear()
    monkeypatch.setattr(parallel, "POOL_ANALYSIS_BYTES", 4 * api_file + 1)  # never reached
    assert parallel.check_all(tasks) == serial
    assert pools == []


def test_with_no_jobs_many_megabytes_start_the_pool_at_once_and_one_core_or_one_file_never(
        tmp_path: Path, pools: list[tuple[list[str], int]], monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = _mixed_tasks(tmp_path)
    serial = parallel.check_all(tasks, 1)
    total = sum((tmp_path / f"m{i}.py").stat().st_size for i in range(6))
    monkeypatch.setattr(parallel, "POOL_READ_BYTES", total)
    assert parallel.check_all(tasks) == serial
    assert pools == [([f"m{i}.py" for i in range(6)], 2)]
    pools.clear()
    monkeypatch.setattr(parallel, "POOL_READ_BYTES", total + 1)
    assert parallel.check_all(tasks) == serial and pools == []
    # A pool is never started for one file, nor on one core.
    monkeypatch.setattr(parallel, "POOL_READ_BYTES", 0)
    monkeypatch.setattr(parallel, "POOL_ANALYSIS_BYTES", 0)
    assert parallel.check_all(tasks[:1]) == serial[:1] and pools == []
    monkeypatch.setattr(parallel, "POOL_READ_BYTES", total + 1)
    assert parallel.check_all([tasks[1], tasks[3], tasks[5]]) == [serial[1], serial[3], serial[5]]
    assert pools == []  # the only file that waits for the analysis is the last one: no pool for it
    monkeypatch.setattr(parallel, "default_jobs", lambda: 1)
    monkeypatch.setattr(parallel, "POOL_READ_BYTES", 0)
    assert parallel.check_all(tasks) == serial and pools == []
