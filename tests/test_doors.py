"""One project, every door: `skiplint`, `skiplint -j 2`, `flake8 --select SKP` and `skiplint layout`
read the same configuration the same way and print the same findings; nothing heavy is imported
for a file that does not use the API; an analyzer bug or a dead worker is reported, never lost."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skiplint import config, parallel


def run(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))


BLOCKS = """\
    from torch import nn

    from {api} import pop, skippable, stash


    @skippable(stash=["skip"])
    class Down(nn.Module):
        def forward(self, x):
            yield stash("skip", x)
            return x


    @skippable(pop=["skip"])
    class Up(nn.Module):
        def forward(self, x):
            skip = yield pop("skip")
            return x + skip
    """

TYPO = """\
    from torch import nn

    from mypkg.api import skippable, stash


    @skippable(stash=["declared"])
    class Probe(nn.Module):
        def forward(self, x):
            yield stash("stashed", x)
            return x
    """

#: A project with [tool.skiplint] (api-aliases, exclude, per-file-ignores), the same choices for
#: flake8 in .flake8 (flake8's own select/ignore/exclude/per-file-ignores decide what it shows), a
#: black-wrapped import, a re-export under aliases and an excluded folder. (A file-level noqa and
#: .gitignore'd folders belong here too once the CLI honours them.)
PROJECT = {
    "pyproject.toml": """\
        [tool.skiplint]
        api-aliases = {"mypkg.api" = "torchgpipe.skip"}
        exclude = ["generated"]

        [tool.skiplint.per-file-ignores]
        "tests/*.py" = ["SKP103"]
        """,
    ".flake8": """\
        [flake8]
        extend-exclude = generated
        per-file-ignores = tests/*.py:SKP103
        """,
    "mypkg/__init__.py": "from .blocks import Down as D, Up as U\n",
    "mypkg/api.py": "from torchgpipe.skip import pop, skippable, stash\n",
    "mypkg/blocks.py": BLOCKS.format(api="mypkg.api").rstrip() + "\n\n\n"
                       + TYPO.split("\n\n\n", 1)[1].replace("Probe", "Typo"),
    "mypkg/model.py": """\
        from torch import nn

        from . import (
            blocks,
        )

        model = nn.Sequential(blocks.Up(), blocks.Down())
        """,
    "app.py": """\
        from torch import nn

        from mypkg import D, U

        good = nn.Sequential(D(), U())
        bad = nn.Sequential(U(), D())
        """,
    "tests/test_blocks.py": TYPO,
    "generated/bad.py": TYPO,
    # File-level noqa, read alike by every door: flake8's own, and skiplint's.
    "legacy.py": "# flake8: noqa\n" + TYPO,
    "scratch.py": TYPO + "# skiplint: noqa\n",
}

EXPECTED = [
    "app.py:6:21: SKP201 layer 0 (Up) pops 'skip' but no earlier layer stashes it",
    "app.py:6:26: SKP202 layer 1 (Down) stashes 'skip' but no later layer pops it",
    "mypkg/blocks.py:20:19: SKP103 'declared' is declared in stash=[...] but no path of forward stashes it",
    "mypkg/blocks.py:23:15: SKP101 'stashed' is stashed but not declared in stash=[...]",
    "mypkg/model.py:7:23: SKP201 layer 0 (Up) pops 'skip' but no earlier layer stashes it",
    "mypkg/model.py:7:36: SKP202 layer 1 (Down) stashes 'skip' but no later layer pops it",
    "tests/test_blocks.py:9:15: SKP101 'stashed' is stashed but not declared in stash=[...]",
]

#: `skiplint layout app.py:bad`: the re-exported aliases resolve to the classes, as in the lint.
LAYOUT = [
    "bad  (app.py:6)",
    "       0  Up",
    "       1  Down",
    "  note: SKP201 layer 0 (Up) pops 'skip' but no earlier layer stashes it",
    "  note: SKP202 layer 1 (Down) stashes 'skip' but no later layer pops it",
]


def lines(output: str) -> list[str]:
    return sorted(line[2:] if line.startswith("./") else line for line in output.splitlines())


def test_one_project_through_every_door(tmp_path: Path) -> None:
    write(tmp_path, PROJECT)
    one = run("-m", "skiplint", "-j", "1", cwd=tmp_path)
    two = run("-m", "skiplint", "-j", "2", cwd=tmp_path)
    flake8 = run("-m", "flake8", "--select", "SKP", cwd=tmp_path)
    assert one.stderr == two.stderr == flake8.stderr == ""
    assert lines(one.stdout) == lines(two.stdout) == lines(flake8.stdout) == EXPECTED
    assert one.returncode == two.returncode == flake8.returncode == 1
    layout = run("-m", "skiplint", "layout", "app.py:bad", cwd=tmp_path)
    assert layout.returncode == 0
    assert layout.stdout.splitlines() == LAYOUT


def test_api_alias_of_one_directory_stays_there(tmp_path: Path) -> None:
    # a/ configures an alias, its sibling b/ does not; both compose the shared layers module.
    write(tmp_path, {
        "pkg/__init__.py": "", "pkg/a/__init__.py": "", "pkg/b/__init__.py": "",
        "pkg/layers.py": BLOCKS.format(api="proj.skip"),
        "pkg/a/setup.cfg": "[skiplint]\napi-aliases = proj.skip = torchgpipe.skip\n",
        "pkg/a/model.py": "from torch import nn\nfrom ..layers import Down, Up\n\nmodel = nn.Sequential(Up(), Down())\n",
        "pkg/b/model.py": "from torch import nn\nfrom ..layers import Down, Up\n\nmodel = nn.Sequential(Up(), Down())\n",
    })
    expected = ["pkg/a/model.py:4:23: SKP201 layer 0 (Up) pops 'skip' but no earlier layer stashes it",
                "pkg/a/model.py:4:29: SKP202 layer 1 (Down) stashes 'skip' but no later layer pops it"]
    for argv in (["-m", "skiplint", "-j", "1", "pkg/a", "pkg/b"], ["-m", "skiplint", "-j", "1", "pkg/b", "pkg/a"],
                 ["-m", "skiplint", "-j", "2", "pkg/a", "pkg/b"], ["-m", "flake8", "--select", "SKP", "pkg/a", "pkg/b"]):
        assert lines(run(*argv, cwd=tmp_path).stdout) == expected, argv
    # In one process, in either order, as an editor's long-lived flake8 would.
    finder = config.Finder()
    tasks = list(finder.discover([str(tmp_path / "pkg" / "a"), str(tmp_path / "pkg" / "b")]))
    for order in (tasks, tasks[::-1]):
        found = {Path(r.path).parent.name: [d.code for d in r.diagnostics] for r in parallel.check_all(order, 1)
                 if r.path.endswith("model.py")}
        assert found["a"] == ["SKP201", "SKP202"] and found["b"] == []


def test_flake8_reads_the_projects_skiplint_configuration(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": '[tool.skiplint]\napi-aliases = {"mypkg.api" = "torchgpipe.skip"}\n',
        "mypkg/__init__.py": "", "mypkg/api.py": "from torchgpipe.skip import skippable, stash\n",
        "m.py": TYPO,
    })
    expected = ["m.py:6:19: SKP103 'declared' is declared in stash=[...] but no path of forward stashes it",
                "m.py:9:15: SKP101 'stashed' is stashed but not declared in stash=[...]"]
    assert lines(run("-m", "skiplint", "m.py", cwd=tmp_path).stdout) == expected
    assert lines(run("-m", "flake8", "--select", "SKP", "m.py", cwd=tmp_path).stdout) == expected
    # flake8's own option overrides the project's setting.
    overridden = run("-m", "flake8", "--select", "SKP", "--skiplint-api-aliases", "other.api=torchgpipe.skip",
                     "m.py", cwd=tmp_path)
    assert overridden.stdout == "" and overridden.returncode == 0


NON_API = """\
import torch
from torch import nn


class Linear(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
"""

DRIVER = """\
import sys
door = sys.argv.pop(1)
try:
    if door == "flake8":
        from flake8.main.cli import main
    else:
        from skiplint.cli import main
    main(sys.argv[1:])
except SystemExit:
    pass
print("heavy:", sorted(m for m in ("libcst", "skiplint.engine", "skiplint.project") if m in sys.modules),
      file=sys.stderr)
print("loaded:", sorted(m for m in sys.modules if m.startswith("skiplint.")), file=sys.stderr)
"""


@pytest.mark.parametrize("door", ["skiplint", "flake8"])
def test_nothing_heavy_is_imported_for_a_file_without_the_api(tmp_path: Path, door: str) -> None:
    write(tmp_path, {"driver.py": DRIVER, "linear.py": NON_API, "api.py": TYPO.replace("mypkg.api", "torchgpipe.skip")})
    argv = ["driver.py", door] + (["--select", "SKP"] if door == "flake8" else [])
    plain = run(*argv, "linear.py", cwd=tmp_path)
    assert plain.stdout == "" and plain.stderr.splitlines()[-2] == "heavy: []"
    api = run(*argv, "api.py", cwd=tmp_path)
    assert "SKP101" in api.stdout
    assert api.stderr.splitlines()[-2] == "heavy: ['libcst', 'skiplint.engine', 'skiplint.project']"


def test_the_flake8_plugin_loads_only_the_front_for_a_file_without_the_api_or_sequential(tmp_path: Path) -> None:
    """What flake8 pays for the plugin on such a file (most files of a project): the configuration
    lookup and the prefilter; not the project walk, the diagnostics or the limits."""
    write(tmp_path, {"driver.py": DRIVER, "plain.py": "import os\n\nprint(os.sep)\n"})
    plain = run("driver.py", "flake8", "--select", "SKP", "plain.py", cwd=tmp_path)
    assert plain.stdout == ""
    assert plain.stderr.splitlines()[-1] == ("loaded: ['skiplint.config', 'skiplint.filenoqa', "
                                             "'skiplint.flake8_plugin', 'skiplint.prefilter', "
                                             "'skiplint.rules', 'skiplint.sources']")


@pytest.mark.parametrize("options", [["--format", "json"], ["--format", "sarif"], ["--format", "github"],
                                     ["-j", "2"], ["--statistics"]])
def test_no_report_format_or_job_count_imports_anything_heavy_for_files_without_the_api(
        tmp_path: Path, options: list[str]) -> None:
    write(tmp_path, {"driver.py": DRIVER, "linear.py": NON_API, "conv.py": NON_API.replace("Linear", "Conv")})
    plain = run("driver.py", "skiplint", *options, "linear.py", "conv.py", cwd=tmp_path)
    assert plain.stderr.splitlines()[-2] == "heavy: []", plain.stderr


SITECUSTOMIZE = """\
import multiprocessing
import os
import signal

from skiplint import parallel

_check_one = parallel.check_one


def check_one(task):
    path = task[0]
    marker = os.environ["KILL_MARKER"]
    if path.endswith(os.environ["KILL_FILE"]) and multiprocessing.parent_process() is not None:
        if os.environ.get("KILL_ONCE") != "1" or not os.path.exists(marker):
            open(marker, "a").close()
            os.kill(os.getpid(), signal.SIGKILL)
    return _check_one(task)


parallel.check_one = check_one

if os.environ.get("BUG_FILE"):
    from skiplint import engine

    _check_text = engine.check_text

    def check_text(text, path, *args, **kwargs):
        if path.endswith(os.environ["BUG_FILE"]):
            raise ValueError("analyzer bug")
        return _check_text(text, path, *args, **kwargs)

    engine.check_text = check_text
"""


def dying_tree(tmp_path: Path) -> dict[str, str]:
    files = {f"m{i:02d}.py": TYPO.replace("mypkg.api", "torchgpipe.skip") for i in range(12)}
    write(tmp_path / "src", files)
    write(tmp_path / "hook", {"sitecustomize.py": SITECUSTOMIZE})
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "hook"), KILL_FILE="m05.py",
               KILL_MARKER=str(tmp_path / "killed"))
    return env


def test_a_worker_that_dies_once_costs_nothing(tmp_path: Path) -> None:
    env = dying_tree(tmp_path)
    env["KILL_ONCE"] = "1"
    result = run("-m", "skiplint", "-j", "2", "src", cwd=tmp_path, env=env)
    assert (tmp_path / "killed").exists()  # the worker did die
    assert result.returncode == 1 and result.stderr == ""
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == sorted(
        [f"src/m{i:02d}.py" for i in range(12)] * 2)


def test_a_file_that_kills_its_worker_twice_is_reported_unchecked(tmp_path: Path) -> None:
    env = dying_tree(tmp_path)
    result = run("-m", "skiplint", "-j", "2", "src", cwd=tmp_path, env=env)
    assert result.returncode == 2 and result.stderr == ""
    out = result.stdout.splitlines()
    assert "src/m05.py:1:1: SKP900 could not check this file: the process checking it died, also when " \
           "retried alone (killed by SIGKILL)" in out
    assert [line.split(":")[0] for line in out] == sorted(
        [f"src/m{i:02d}.py" for i in range(12) if i != 5] * 2 + ["src/m05.py"])


def test_an_analyzer_bug_in_the_cli_is_skp902_and_exit_2(tmp_path: Path) -> None:
    env = dying_tree(tmp_path)
    env.update(KILL_FILE="-", BUG_FILE="m03.py")
    for jobs in ("1", "2"):
        result = run("-m", "skiplint", "-j", jobs, "src", cwd=tmp_path, env=env)
        assert result.returncode == 2
        assert "src/m03.py:1:1: SKP902 internal error while analysing this file: ValueError: analyzer bug; " \
               "please report" in result.stdout.splitlines()
