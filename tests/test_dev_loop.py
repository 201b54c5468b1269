"""The contributor's loop and CI read the same tox.ini: the README's test command runs the `quick`
label (both ends of the support matrix, the runtime companion, mypy, the package) without the
`slow` runs, and CI runs every environment with every test. A Python added to setup.cfg, or an
environment left out of CI or of the quick label's ends, fails here."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUICK_COMMAND = 'tox p -m quick -- -m "not slow"'


def tox_ini() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO / "tox.ini", encoding="utf-8")
    return parser


def env_list() -> list[str]:
    return [name.strip() for name in tox_ini()["tox"]["env_list"].split(",")]


def quick_label() -> list[str]:
    labels = {label.strip(): names for label, names in (
        line.split("=", 1) for line in tox_ini()["tox"]["labels"].strip().splitlines())}
    return [name.strip() for name in labels["quick"].split(",")]


def supported_pythons() -> list[str]:
    setup = configparser.ConfigParser(interpolation=None)
    setup.read(REPO / "setup.cfg", encoding="utf-8")
    found = re.findall(r"Programming Language :: Python :: 3\.(\d+)$", setup["metadata"]["classifiers"], re.M)
    return [f"py3{minor}" for minor in found]


def test_tox_tests_every_supported_python_and_the_other_environments() -> None:
    assert supported_pythons() == ["py39", "py310", "py311", "py312", "py313"]
    assert sorted(env_list()) == sorted([*supported_pythons(), "lowest", "runtime", "typecheck", "package"])
    assert env_list()[0] == "runtime"  # the longest first, so that `tox p` ends soonest


def test_the_quick_label_holds_both_ends_of_the_matrix() -> None:
    quick = quick_label()
    assert set(quick) <= set(env_list())
    assert tox_ini()["testenv:lowest"]["basepython"] == "python3.9"  # the oldest Python, oldest pins
    assert supported_pythons()[-1] in quick and "lowest" in quick
    assert {"runtime", "typecheck", "package"} <= set(quick)


def test_ci_runs_every_environment_with_every_test() -> None:
    commands = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                if "tox " in line and not line.lstrip().startswith("#")]
    assert len(commands) == 1
    words = shlex.split(commands[0])
    assert words[1:3] == ["run-parallel", "--parallel"]
    # No environment, label or pytest argument that would leave anything out.
    assert not {"-e", "-m", "--", "-f"} & set(words), words


def test_the_readme_gives_the_quick_command_and_the_whole_one() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Quick start")
    quick_start = readme[start:readme.index("\n## ", start + 1)]
    assert f".venv-tox/bin/{QUICK_COMMAND}\n" in quick_start
    development = readme[readme.index("## Development"):]
    assert f"\n{QUICK_COMMAND} " in development and "\ntox p  " in development


def test_the_long_runs_are_marked_slow() -> None:
    from tests import test_properties
    from tests.fuzz import test_fuzz

    assert "slow:" in tox_ini()["pytest"]["markers"]
    assert test_properties.pytestmark.name == "slow"
    assert "slow" in [mark.name for mark in test_fuzz.test_fuzz_input_ends_cleanly.pytestmark]


def test_no_test_looks_for_the_bare_word_skiplint_in_output() -> None:
    # A clone, a tox environment or a temporary folder may be named skiplint/: a test that asserts
    # "skiplint" is (not) in some output passes or fails by the folder it runs from. Tests look for
    # the plugin's frames by module (tests/frames.plugin_frames) or for a whole phrase instead; nor
    # for the folder's name between two path separators (which matches the clone's own path).
    bare = re.compile(r"""["']skiplint["']\s+(?:not\s+)?in\b|sep\}skiplint\{os\.sep|["']/skiplint/["']""")
    found = [f"{path.relative_to(REPO)}:{number}" for path in sorted((REPO / "tests").rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if bare.search(line)]
    assert found == []
