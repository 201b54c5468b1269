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
