"""`-j N` gives the same output, in the same order, as `-j 1`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import config, parallel

REPO = Path(__file__).resolve().parent.parent


def skiplint(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skiplint", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_two_jobs_print_what_one_job_prints_on_the_fixtures(fmt: str) -> None:
    one = skiplint("-j", "1", "--format", fmt, "--extend-select", "SKP116,SKP302,SKP901", "fixtures")
    two = skiplint("-j", "2", "--format", fmt, "--extend-select", "SKP116,SKP302,SKP901", "fixtures")
    assert one.returncode == two.returncode == 1
    assert one.stdout and one.stdout == two.stdout
    assert one.stderr == two.stderr


def test_default_jobs_is_every_core_and_same_output() -> None:
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

    def check_all(tasks: list[parallel.Task], jobs: int = 0, settle: bool = False) -> list[object]:
        seen.append(settle)
        return real(tasks, jobs, settle)  # type: ignore[return-value]

    monkeypatch.setattr(parallel, "check_all", check_all)
    assert cli.main(["--isolated", tasks[0][0]]) == 1
    assert seen == [True]
