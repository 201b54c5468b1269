"""One project, every door: `skiplint`, `skiplint -j 2`, `flake8 --select SKP` and `skiplint layout`
read the same configuration the same way and print the same findings; nothing heavy is imported
for a file that does not use the API; an analyzer bug or a dead worker is reported, never lost.

Each door (the path, standard input, flake8, the -j 2 pool) keeps real subprocesses here; the same
CLI called again, in another order or for another command, runs in this process (tests.inprocess),
where a subprocess would prove nothing more."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, NamedTuple

import pytest

from skiplint import config, engine, parallel
from tests import inprocess
from tests.messages import printed


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
    printed("mypkg/blocks.py", 20, 19, "SKP103", name="declared"),
    printed("mypkg/blocks.py", 23, 15, "SKP101", name="stashed"),
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
    layout = inprocess.skiplint(["layout", "app.py:bad"], tmp_path)
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
    for argv in (["-m", "skiplint", "-j", "2", "pkg/a", "pkg/b"],
                 ["-m", "flake8", "--select", "SKP", "pkg/a", "pkg/b"]):
        assert lines(run(*argv, cwd=tmp_path).stdout) == expected, argv
    for paths in (["pkg/a", "pkg/b"], ["pkg/b", "pkg/a"]):  # -j 1, in either order
        assert lines(inprocess.skiplint(["-j", "1", *paths], tmp_path).stdout) == expected, paths
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
    expected = [printed("m.py", 6, 19, "SKP103", name="declared"), printed("m.py", 9, 15, "SKP101", name="stashed")]
    assert lines(inprocess.skiplint(["m.py"], tmp_path).stdout) == expected
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
    lookup, the prefilter (with the API's import table) and the session; not the rules package
    (the codes come from its table, skiplint/rules/codes.txt), the project walk or the diagnostics."""
    write(tmp_path, {"driver.py": DRIVER, "plain.py": "import os\n\nprint(os.sep)\n"})
    plain = run("driver.py", "flake8", "--select", "SKP", "plain.py", cwd=tmp_path)
    assert plain.stdout == ""
    assert plain.stderr.splitlines()[-1] == (
        "loaded: ['skiplint.apiimports', 'skiplint.config', 'skiplint.filenoqa', 'skiplint.flake8_plugin', "
        "'skiplint.limits', 'skiplint.prefilter', 'skiplint.session', 'skiplint.sources', 'skiplint.textlines']")


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


def check_one(task, session=None):
    path = task[0]
    marker = os.environ["KILL_MARKER"]
    if path.endswith(os.environ["KILL_FILE"]) and multiprocessing.parent_process() is not None:
        if os.environ.get("KILL_ONCE") != "1" or not os.path.exists(marker):
            open(marker, "a").close()
            os.kill(os.getpid(), signal.SIGKILL)
    return _check_one(task, session)


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


def test_an_analyzer_bug_in_the_cli_is_skp902_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a worker of the pool (a subprocess, its analyzer broken by the hook) and with -j 1 (here,
    the same break patched in)."""
    env = dying_tree(tmp_path)
    env.update(KILL_FILE="-", BUG_FILE="m03.py")
    pool = run("-m", "skiplint", "-j", "2", "src", cwd=tmp_path, env=env)
    monkeypatch.setattr(engine, "check_text", buggy(engine.check_text, "m03.py"))
    serial = inprocess.skiplint(["-j", "1", "src"], tmp_path)
    for result in (pool, serial):
        assert result.returncode == 2
        assert "src/m03.py:1:1: SKP902 internal error while analysing this file: ValueError: analyzer bug; " \
               "please report" in result.stdout.splitlines()


# -- every door has the same guards ------------------------------------------------------------------

BUG_HOOK = """\
import os

if os.environ.get("BUG_FILE"):
    from skiplint import engine, layout

    def buggy(original):
        def call(text, path, *args, **kwargs):
            if path.endswith(os.environ["BUG_FILE"]):
                raise ValueError("analyzer bug")
            return original(text, path, *args, **kwargs)
        return call

    engine.check_text = buggy(engine.check_text)
    engine.analyze_models = buggy(engine.analyze_models)
"""


def buggy(original: Callable[..., object], name: str) -> Callable[..., object]:
    """`original`, raising BUG_HOOK's ValueError for a path that ends with `name` (this process's
    own copy of the hook)."""
    def call(text: str, path: str, *args: object, **kwargs: object) -> object:
        if path.endswith(name):
            raise ValueError("analyzer bug")
        return original(text, path, *args, **kwargs)
    return call


BUG_LINE = "SKP902 internal error while analysing this file: ValueError: analyzer bug; please report"


def bug_tree(tmp_path: Path) -> dict[str, str]:
    write(tmp_path, {"src/m.py": TYPO.replace("mypkg.api", "torchgpipe.skip"), "hook/sitecustomize.py": BUG_HOOK})
    return dict(os.environ, PYTHONPATH=str(tmp_path / "hook"), BUG_FILE="m.py")


def test_an_analyzer_bug_is_one_line_through_every_door(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The path, standard input, layout, fix (in place and on standard input) and flake8: one line
    each, exit 2 where the command has its own status; never a traceback. The doors run as
    processes (the hook breaks their analyzer); layout and fix, commands of the same CLI, here with
    the same break patched in."""
    env = bug_tree(tmp_path)
    source = (tmp_path / "src" / "m.py").read_bytes()

    def door(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, *argv], cwd=tmp_path, input=stdin, capture_output=True,
                              timeout=300, env=env)

    path = door("-m", "skiplint", "--isolated", "-j", "1", "src/m.py")
    stdin = door("-m", "skiplint", "--isolated", "-", "--stdin-display-name", "src/m.py", stdin=source)
    assert path.stdout == stdin.stdout == f"src/m.py:1:1: {BUG_LINE}\n".encode()
    assert (path.returncode, path.stderr, stdin.returncode, stdin.stderr) == (2, b"", 2, b"")
    flake8 = door("-m", "flake8", "--isolated", "--select", "SKP", "src/m.py")
    assert (flake8.stdout, flake8.stderr) == (f"src/m.py:1:1: {BUG_LINE}\n".encode(), b"")
    monkeypatch.setattr(engine, "check_text", buggy(engine.check_text, "m.py"))
    monkeypatch.setattr(engine, "analyze_models", buggy(engine.analyze_models, "m.py"))
    layout = inprocess.skiplint(["layout", "src/m.py"], tmp_path)
    assert (layout.returncode, layout.stdout, layout.stderr) == (2, "", f"src/m.py: {BUG_LINE}\n")
    fix = inprocess.skiplint(["fix", "--isolated", "src/m.py"], tmp_path)
    reason = BUG_LINE[len("SKP902 "):]
    assert (fix.returncode, fix.stdout, fix.stderr) == (2, "", f"src/m.py: could not fix this file: {reason}\n")
    assert (tmp_path / "src" / "m.py").read_bytes() == source
    fixed = inprocess.skiplint(["fix", "--isolated", "-", "--stdin-display-name", "src/m.py"], tmp_path, stdin=source)
    assert (fixed.returncode, fixed.stdout) == (2, source.decode())  # given back as it came
    assert fixed.stderr == f"src/m.py: could not fix this source: {reason}\n"


def _limited() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.skipif(not os.path.exists("/dev/zero") or sys.platform == "win32", reason="POSIX")
@pytest.mark.parametrize("command", [["-"], ["fix", "-"]])
def test_endless_standard_input_is_refused_after_the_size_limit(tmp_path: Path, command: list[str]) -> None:
    """`skiplint - < /dev/zero` read until MemoryError: now at most the size limit and one byte."""
    with open("/dev/zero", "rb") as zero:
        done = subprocess.run([sys.executable, "-m", "skiplint", *command, "--isolated"], cwd=tmp_path, stdin=zero,
                              capture_output=True, text=True, timeout=120, preexec_fn=_limited)
    reason = "too large to check (more than 4.2 MB; the limit is 4.2 MB)"
    assert done.returncode == 2
    if command == ["-"]:
        assert (done.stdout, done.stderr) == (f"stdin:1:1: SKP900 could not check this file: {reason}\n", "")
    else:  # fix: nothing given back, since not all of it was read
        assert (done.stdout, done.stderr) == ("", f"stdin: could not fix this source: {reason}\n")


def test_a_source_over_the_size_limit_is_refused_alike_by_every_door(tmp_path: Path) -> None:
    """4.5 MB of CJK text in a module that uses the API: 1.5 million characters, 4.5 million
    bytes. The path and standard input refuse it; the flake8 plugin counted characters and
    analysed it, then counted bytes and stayed silent, and now says the CLI's SKP900 word for word."""
    text = textwrap.dedent(TYPO).replace("mypkg.api", "torchgpipe.skip") + "".join(
        f"# {'漢字' * 40}\n" for _ in range(18_000))
    write(tmp_path, {"big.py": text})
    data = (tmp_path / "big.py").read_bytes()
    assert len(text) < 4 * 1024 * 1024 < len(data)
    reason = f"too large to check ({len(data) / 1e6:.1f} MB; the limit is 4.2 MB)"
    path = inprocess.skiplint(["--isolated", "big.py"], tmp_path)
    assert (path.returncode, path.stdout) == (2, f"big.py:1:1: SKP900 could not check this file: {reason}\n")
    stdin = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-", "--stdin-display-name", "big.py"],
                           cwd=tmp_path, input=data, capture_output=True, timeout=300)
    assert stdin.returncode == 2 and b"too large to check (more than 4.2 MB" in stdin.stdout
    from skiplint.flake8_plugin import SkiplintChecker

    finding = f"SKP900 could not check this file: {reason}"
    assert list(SkiplintChecker(None, text.splitlines(keepends=True), str(tmp_path / "big.py")).run()) == [
        (1, 0, finding, SkiplintChecker)]
    flake8 = run("-m", "flake8", "--isolated", "--select", "SKP", "big.py", cwd=tmp_path)
    assert (flake8.returncode, flake8.stdout, flake8.stderr) == (1, f"big.py:1:1: {finding}\n", "")
    # Standard input: flake8 has all of it, so it gives the size (the CLI stops reading past the limit).
    piped = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "SKP", "-",
                            "--stdin-display-name", "big.py"], cwd=tmp_path, input=data, capture_output=True,
                           timeout=300)
    assert (piped.returncode, piped.stdout) == (1, f"big.py:1:1: {finding}\n".encode())


@pytest.mark.parametrize("argv", [["layout", "m.py"], ["fix", "--diff", "--isolated", "m.py"],
                                  ["rule", "SKP101"], ["--isolated", "m.py"]])
def test_a_reader_gone_early_is_one_line_for_every_command(tmp_path: Path, argv: list[str]) -> None:
    """`skiplint layout m.py | head -1` ended in a BrokenPipeError traceback."""
    (tmp_path / "m.py").write_text(textwrap.dedent(BLOCKS.format(api="torchgpipe.skip")) + "\n\n"
                                   "@skippable(stash='late')\nclass Late(nn.Module):\n    def forward(self, x):\n"
                                   "        yield stash('late', x)\n        return x\n\n\n"
                                   "model = nn.Sequential(Down(), Up(), Late())\n")
    read, write_end = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "skiplint", *argv], cwd=tmp_path, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert done.returncode == 2
    assert done.stderr in ("skiplint: standard output was closed before the whole output was written\n",
                           "skiplint: standard output was closed before the whole report was written\n")


# -- every door over the same files, each run once over every case's file ----------------------------

UNDECLARED = TYPO.replace("mypkg.api", "torchgpipe.skip")
UNDECLARED_LINES = [printed("{}", 6, 19, "SKP103", name="declared"), printed("{}", 9, 15, "SKP101", name="stashed")]

#: Where `str.splitlines` breaks a line and Python's tokenizer and flake8 do not (the form feed aside).
SEPARATORS = ["\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\x0b"]


def separated(separator: str) -> str:
    """UNDECLARED with `x = 1<separator># flake8: noqa` after its first import (its findings on the
    same lines)."""
    text = textwrap.dedent(UNDECLARED).replace("from torch import nn\n",
                                               f"from torch import nn\nx = 1{separator}# flake8: noqa\n", 1)
    return text.replace("\n\n\n@", "\n\n@")


def separated_name(separator: str, skipped: bool = False) -> str:
    return f"sep_{ord(separator):04x}{'_skipped' if skipped else ''}.py"


#: Encodings that hide the API from the bytes: the cookie, and the text's bytes after it.
COOKIES: dict[str, tuple[bytes, Callable[[str], bytes]]] = {
    # t written in UTF-7 (+AHQ-): the bytes hold no `torchgpipe` that the text does.
    "utf-7": (b"# coding: utf-7\n",
              lambda text: text.encode("utf-7").replace(b"torchgpipe", b"+AHQ-orchgpipe")),
    "latin-1": (b"# -*- coding: latin-1 -*-\n", lambda text: text.encode("latin-1")),
    "cp1252": (b"# vim: set fileencoding=cp1252 :\n", lambda text: text.encode("cp1252")),
}
ACCENTED = textwrap.dedent(UNDECLARED).replace("declared", "déclaré")


def encoded_name(encoding: str) -> str:
    return f"enc_{encoding}.py"


class DoorRuns(NamedTuple):
    """The processes run once over every case's file: `python -m skiplint --isolated` with -j 1
    and -j 2, and flake8 (--select SKP,E9: its own E999 for what Python cannot compile)."""
    root: Path
    names: list[str]
    serial: subprocess.CompletedProcess[str]
    pool: subprocess.CompletedProcess[str]
    flake8: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def door_runs(tmp_path_factory: pytest.TempPathFactory) -> DoorRuns:
    root = tmp_path_factory.mktemp("doors")
    files: dict[str, bytes] = {}
    for separator in SEPARATORS:
        text = separated(separator)
        files[separated_name(separator)] = text.encode("utf-8")
        skipped = text.replace(f"x = 1{separator}# flake8: noqa", "# flake8: noqa")
        files[separated_name(separator, skipped=True)] = skipped.encode("utf-8")
    for encoding, (cookie, encode) in COOKIES.items():
        files[encoded_name(encoding)] = cookie + encode(ACCENTED)
    for name, data in files.items():
        (root / name).write_bytes(data)
    names = sorted(files)
    serial, pool = (run("-m", "skiplint", "--isolated", "-j", jobs, *names, cwd=root) for jobs in ("1", "2"))
    flake8 = run("-m", "flake8", "--isolated", "--select", "SKP,E9", *names, cwd=root)
    return DoorRuns(root, names, serial, pool, flake8)


def report_of(output: str, name: str) -> str:
    """The lines of `output` about the file `name` (split at newlines only: a message may hold any
    other break)."""
    return "".join(line + "\n" for line in output.split("\n") if line.startswith(f"{name}:"))


def _every_door(runs: DoorRuns, name: str) -> tuple[list[str], tuple[int, int]]:
    """The report of `name` through the path (-j 1 and -j 2, from the runs over every case's file;
    -j 1 again, over this file alone, in this process), standard input (in this process) and
    flake8; and the exit statuses of the path and standard input for this file alone."""
    alone = inprocess.skiplint(["--isolated", "-j", "1", name], runs.root)
    stdin = inprocess.skiplint(["--isolated", "-", "--stdin-display-name", name], runs.root,
                               stdin=(runs.root / name).read_bytes())
    reports = [report_of(runs.serial.stdout, name), report_of(runs.pool.stdout, name), alone.stdout, stdin.stdout,
               report_of(runs.flake8.stdout, name)]
    return reports, (alone.returncode, stdin.returncode)


def test_every_door_over_every_case_reports_only_their_files_and_exits_with_the_worst(door_runs: DoorRuns) -> None:
    """What the cases below read from the runs over all their files: every line is about one of
    the files, -j 1 and -j 2 print the same and nothing on standard error, and the status is the
    worst of the files' (2: some are no Python; flake8's 1: something was reported)."""
    assert door_runs.serial.stderr == door_runs.pool.stderr == ""
    for done in (door_runs.serial, door_runs.pool, door_runs.flake8):
        assert done.stdout.endswith("\n")
        assert {line.split(":", 1)[0] for line in done.stdout.split("\n")[:-1]} <= set(door_runs.names)
    assert door_runs.serial.stdout == door_runs.pool.stdout
    assert (door_runs.serial.returncode, door_runs.pool.returncode, door_runs.flake8.returncode) == (2, 2, 1)


@pytest.mark.parametrize("separator", SEPARATORS)
def test_a_file_noqa_after_code_and_a_break_that_ends_no_line_skips_nothing(door_runs: DoorRuns,
                                                                            separator: str) -> None:
    """`str.splitlines` breaks at these; Python's tokenizer and flake8 do not: `x = 1<break>#
    flake8: noqa` is code then a comment on one line, no file-level noqa, in every door."""
    name = separated_name(separator)
    reports, statuses = _every_door(door_runs, name)
    if separator == "\x0c":  # a form feed is a blank to Python: the file is checked
        expected = "".join(line.format(name) + "\n" for line in UNDECLARED_LINES)
        assert reports == [expected] * 5 and statuses == (1, 1)
    else:  # the others are no Python: the file is no longer passed as clean
        cli, *others, flake8 = reports
        assert others == [cli] * 3 and statuses == (2, 2)
        # Where the running Python's parser puts the error: column 6 (the separator), or 5 on 3.10,
        # which reads `1<separator>` as an invalid decimal literal.
        with pytest.raises(SyntaxError) as error:
            compile((door_runs.root / name).read_text(encoding="utf-8"), name, "exec")
        where = f"{name}:{error.value.lineno}:{error.value.offset}: "
        assert where in (f"{name}:2:6: ", f"{name}:2:5: ")
        assert cli.startswith(where + "SKP900 could not check this file: syntax error: ") and cli.count("\n") == 1
        assert flake8.startswith(f"{name}:2:") and " E999 " in flake8  # flake8's status: the run's, 1
    # The noqa comment on a line of its own: the whole file is skipped.
    assert _every_door(door_runs, separated_name(separator, skipped=True)) == ([""] * 5, (0, 0))


@pytest.mark.parametrize("encoding", list(COOKIES))
def test_encodings_that_hide_the_api_from_the_bytes_are_read_as_text_by_every_door(
        door_runs: DoorRuns, encoding: str) -> None:
    """A `# coding: utf-7` file was clean by path (its bytes name no API module) while standard
    input and flake8 reported its findings: the prefilter decides on the text whenever the
    encoding is not UTF-8."""
    name = encoded_name(encoding)
    expected = (printed(name, 7, 19, "SKP103", name="déclaré") + "\n"
                + printed(name, 10, 15, "SKP101", name="stashed") + "\n")
    assert _every_door(door_runs, name) == ([expected] * 5, (1, 1))
