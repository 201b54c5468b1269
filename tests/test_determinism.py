"""Property tests with a fixed, bounded budget: no valid program crashes the analyzer, and the
output is the same on every run and for every -j.

hypothesmith writes arbitrary valid Python; an import of the API is put in front so that the
prefilter lets every example through to the parser and the extractor. `derandomize=True` and a
small max_examples keep CI deterministic and fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skiplint import engine, rules
from tests import inprocess

#: hypothesmith compiles what it generates; CPython's warnings about that code are not ours.
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

REPO = Path(__file__).resolve().parent.parent
BUDGET = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
HEADERS = (
    "from torchgpipe.skip import skippable, stash, pop, Namespace\n",
    "from fairscale.nn.pipe.skip import *\nimport torch.nn as nn\n",
    "import torch.distributed.pipeline.sync.skip as sk\nfrom torchgpipe import GPipe\n",
)
CLASS = textwrap.dedent("""\

    @skippable(stash=["a"], pop=["b"])
    class Generated(nn.Module):
        def forward(self, x):
    {body}
""")


def crash_free(source: str) -> engine.FileResult:
    """Check `source`; no exception, no analyzer bug (SKP902, which the engine reports instead of
    raising), positions in range."""
    result = engine.check_text(source, "generated.py", engine.EVERYTHING)
    assert isinstance(result, engine.FileResult)
    assert [d.message for d in result.diagnostics if d.code == "SKP902"] == [], source
    for diagnostic in result.diagnostics:
        assert diagnostic.line >= 1 and diagnostic.col >= 0
        assert diagnostic.message.startswith(diagnostic.code)
    return result


@pytest.mark.slow
@BUDGET
@given(header=st.sampled_from(HEADERS), program=hypothesmith.from_grammar())
def test_no_valid_module_crashes_the_analyzer(header: str, program: str) -> None:
    crash_free(header + program)


@pytest.mark.slow
@BUDGET
@given(statements=hypothesmith.from_grammar(start="file_input"))
def test_no_valid_forward_body_crashes_the_analyzer(statements: str) -> None:
    """The same programs as the body of a skippable forward, where the path analysis runs."""
    lines = [line for line in statements.splitlines() if line.strip()] or ["pass"]
    body = textwrap.indent("\n".join(lines), " " * 8) + "\n        yield stash('a', x)\n"
    crash_free(HEADERS[0] + "import torch.nn as nn\n" + CLASS.format(body=body))


@pytest.mark.slow
@BUDGET
@given(program=hypothesmith.from_grammar())
def test_same_result_on_every_run(program: str) -> None:
    source = HEADERS[0] + program
    first = engine.check_text(source, "generated.py", engine.EVERYTHING)
    second = engine.check_text(source, "generated.py", engine.EVERYTHING)
    assert first == second


def cli(*args: str, seed: str = "0") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skiplint", "--isolated", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": seed})


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 generated model files (the benchmark generator): cross-module work for the index."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import generate
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    root = tmp_path_factory.mktemp("determinism") / "tree"
    generate.generate(str(root), 40, seed=7)
    return root


def test_output_identical_across_runs_hash_seeds_and_jobs(tree: Path) -> None:
    args = ("--extend-select", ",".join(sorted(rules.OPT_IN)), "fixtures", str(tree))
    runs = [cli("-j", "1", *args), cli("-j", "1", *args, seed="1"), cli("-j", "2", *args, seed="2")]
    assert "SKP" in runs[0].stdout, runs[0].stderr
    for run in runs[1:]:
        assert run.returncode == runs[0].returncode
        assert run.stdout == runs[0].stdout


def test_json_identical_across_jobs(tree: Path) -> None:
    # -j 1 in this process (whatever its hash seed), -j 2 in a process and its workers.
    args = ("--format", "json", "fixtures", str(tree))
    one, two = inprocess.skiplint(["--isolated", "-j", "1", *args], REPO), cli("-j", "2", *args)
    assert one.stdout and one.stdout == two.stdout
