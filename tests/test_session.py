"""State passed, not hidden (issue 39): everything an analysis keeps lives in the session its door
makes (skiplint.session.Session: the project walk and index, the parsed statements, the server's
memo, the kept compositions, the configuration's api-aliases); no skiplint module holds state of
its own outside the rule registries, and two sessions with their own configurations analysing
the same text in two threads at once each give their own findings."""

from __future__ import annotations

import ast
import contextvars
import dataclasses
import enum
import importlib
import itertools
import logging
import pkgutil
import re
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest

import skiplint
from skiplint import apiimports, config, engine, parallel
from skiplint.session import Session

PACKAGE = Path(skiplint.__file__).parent

#: Module-level values that are containers, filled once at import of `skiplint.rules` and never
#: changed after: the rule registries.
REGISTRIES = {
    "skiplint.rules.RULES", "skiplint.rules.base.CHECKS", "skiplint.rules.base.COMBINE",
    "skiplint.rules.base.FIXERS", "skiplint.checks.COMBINE", "skiplint.rules.pipe.CHECKS",
}
#: Tables of constants that happen to be dicts: read, never written (checked below: an analysis
#: leaves each as it found it).
TABLES = {
    "skiplint.apiimports._THROUGH_TORCH", "skiplint.cli.DELEGATED", "skiplint.cli.COMMANDS",
    "skiplint.config.KEYS", "skiplint.config._LOOKALIKES", "skiplint.edits.TARGETS", "skiplint.fix.TARGETS",
    "skiplint.formats._GITHUB_LEVEL", "skiplint.formats.FORMATS", "skiplint.gitignore._CLASSES",
    "skiplint.guard._STRING_REST", "skiplint.interpret.expressions.COMPARE",
    "skiplint.interpret.operations.AUG", "skiplint.interpret.operations.COMPARE",
    "skiplint.interpret.statements.AUG", "skiplint.lsp.server._ENCODINGS", "skiplint.port.SCHEDULES",
    "skiplint.port.check.TOLERANCES", "skiplint.port.command.SCHEDULES", "skiplint.port.command.DEFAULT_STAGES",
    "skiplint.rules.one_class._VERB", "skiplint.rules.one_class._UNDECLARED", "skiplint.rules.one_class._UNUSED",
    "skiplint.rules.pipe._PIPE_LABEL", "skiplint.rules.port._PIPE_NAMES", "skiplint.runtime.backends.SKIP_ROOTS",
    "skiplint.runtime.backends._PIP", "skiplint.runtime.join.RULES", "skiplint.runtime.messages.RULES",
    "skiplint.runtime.report.RULES", "skiplint.runtime.running.TOLERANCES",
    "skiplint.runtime.state.TOLERANCES", "skiplint.rules.portability._ADVICE", "skiplint.tokenscan._STRING_REST",
    "skiplint.tokenscan._FSTRING_TEXT",
}
#: Facts about Python's own classes, filled as types are met (by type, the same answer in every
#: session and thread): libcst node kinds and their fields.
TYPE_FACTS = {
    "skiplint.imports._CHAIN_KINDS", "skiplint.interpret.expressions._EVAL_KINDS", "skiplint.syntax._FIELDS",
    "skiplint.syntax._VALUE_KINDS", "skiplint.syntax._ITEM_IS_NODE", "skiplint.syntax._OPENS_SCOPE",
}
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, range, re.Pattern, types.MappingProxyType,
              Path, enum.Enum, types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
              types.MethodType, property, staticmethod, classmethod, logging.Logger, apiimports.Aliases)


#: The extras' own dependencies: a module that needs one is left out where it is not installed
#: (the static environments have no torch); any other import error fails the test.
OPTIONAL = {"torch", "torchgpipe", "fairscale", "pygls", "lsprotocol"}


def _modules() -> list[types.ModuleType]:
    names = ["skiplint"] + [m.name for m in pkgutil.walk_packages(skiplint.__path__, "skiplint.")
                            if ".examples" not in m.name and not m.name.endswith("__main__")]
    modules = []
    for name in names:
        try:
            modules.append(importlib.import_module(name))
        except ModuleNotFoundError as missing:
            if (missing.name or "").split(".")[0] not in OPTIONAL:
                raise
    return modules


def _holds_state(value: Any) -> bool:
    """Whether a module-level value can change: a container, a context variable, a per-thread
    object, or an object whose attributes can be assigned."""
    if isinstance(value, _IMMUTABLE) or callable(value) and not isinstance(value, (dict, list, set)):
        return False
    if isinstance(value, (tuple, frozenset)):
        return any(_holds_state(item) for item in value)
    if type(value) is object or type(value).__module__ in ("typing", "typing_extensions", "__future__"):
        return False
    if isinstance(value, (dict, list, set, bytearray, contextvars.ContextVar, threading.local, itertools.count)):
        return True
    if dataclasses.is_dataclass(value):
        return not type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
    if isinstance(value, apiimports.LazyPattern):
        return False  # a pattern compiled on first use
    if not hasattr(value, "__dict__") and hasattr(type(value), "__slots__") and not type(value).__slots__:
        return False  # a marker with no attributes (imports.OTHER)
    return True


def _state() -> dict[str, Any]:
    """Every module-level value that holds state, by module and name (a value imported into
    another module counts there too)."""
    return {f"{module.__name__}.{name}": value for module in _modules() for name, value in vars(module).items()
            if not name.startswith("__") and _holds_state(value)}


ALIASED_TEXT = ("from mypkg.skip import skippable, stash\nfrom torch import nn\n\n\n"
                "@skippable(stash=['declared'])\nclass Layer(nn.Module):\n    def forward(self, x):\n"
                "        yield stash('other', x)\n        return x\n\n\nmodel = nn.Sequential(Layer())\n")
ALIASES = (("mypkg.skip.skippable", "torchgpipe.skip.skippable"), ("mypkg.skip.stash", "torchgpipe.skip.stash"))
ALIASED_FINDINGS = [(5, "SKP103"), (8, "SKP101"), (12, "SKP202")]
#: A text that both configurations analyse (it imports the API itself); `stash` is the API's only
#: through the alias.
MIXED_TEXT = ("from torchgpipe.skip import skippable\nfrom mypkg.skip import stash\nfrom torch import nn\n\n\n"
              "@skippable(stash=['declared'])\nclass Layer(nn.Module):\n    def forward(self, x):\n"
              "        yield stash('other', x)\n        return x\n\n\nmodel = nn.Sequential(Layer())\n")
MIXED_FINDINGS = {"aliased": [(6, "SKP103"), (9, "SKP101"), (13, "SKP202")], "plain": [(13, "SKP202")]}


def _analyse_everything(tmp_path: Path) -> None:
    """Every door's analysis once: the CLI, flake8's plugin, fix, layout, the server's features."""
    from skiplint import cli, fix, layout
    from skiplint.flake8_plugin import SkiplintChecker
    from skiplint.lsp import features

    path = tmp_path / "m.py"
    path.write_text(ALIASED_TEXT, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.skiplint.api-aliases]\n"mypkg.skip.skippable" = "torchgpipe.skip.skippable"\n'
        '"mypkg.skip.stash" = "torchgpipe.skip.stash"\n', encoding="utf-8")
    assert cli.main(["--isolated", "--format", "json", str(path)]) in (0, 1)
    settings = config.Finder().for_file(str(path))
    checker = SkiplintChecker(None, ALIASED_TEXT.splitlines(True), str(path))
    assert [row[0] for row in checker.run()] == [5, 8, 12]
    assert fix.fix_source(ALIASED_TEXT, str(path), settings).error is None
    assert layout.load(str(path), settings).compositions
    assert [(d.line, d.code) for d in features.check(ALIASED_TEXT, str(path), settings).diagnostics] == \
        ALIASED_FINDINGS


def test_no_module_level_state_outside_the_rule_registries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    before = {name: repr(value) for name, value in _state().items() if name in TABLES | REGISTRIES}
    _analyse_everything(tmp_path)
    capsys.readouterr()
    state = _state()
    loaded = {module.__name__ for module in _modules()}  # without an extra's modules where it is missing
    expected = {name for name in REGISTRIES | TABLES | TYPE_FACTS if name.rsplit(".", 1)[0] in loaded}
    assert set(state) == expected, sorted(set(state) ^ expected)
    assert {name: repr(state[name]) for name in before} == before  # read, never written
    assert not any(isinstance(value, contextvars.ContextVar) for value in state.values())
    for name in TYPE_FACTS:
        assert all(isinstance(key, type) for key in state[name]), name


def test_aliases_are_a_value() -> None:
    aliases = apiimports.Aliases(ALIASES)
    with pytest.raises(AttributeError):
        aliases.pairs = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        aliases.table["mypkg.other"] = "stash"  # type: ignore[index]
    with pytest.raises(TypeError):
        apiimports.API["mypkg.other"] = "stash"  # type: ignore[index]
    assert aliases.table["mypkg.skip.stash"] == "stash" and "mypkg.skip.stash" not in apiimports.API
    assert aliases == apiimports.Aliases(reversed(ALIASES)) and aliases.needles == (b"mypkg",)


def test_the_only_rebound_globals_are_a_worker_process_own() -> None:
    """`global` statements: only parallel's bookkeeping of a worker process (which files it has
    begun, since when, its collector) and the session the worker makes when it starts (the worker
    is a door of its own: sessions do not cross processes)."""
    rebound = set()
    for path in PACKAGE.rglob("*.py"):
        if "examples" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Global):
                rebound.update(f"{path.relative_to(PACKAGE).as_posix()}:{name}" for name in node.names)
    assert rebound == {"parallel.py:_STARTED", "parallel.py:_SINCE", "parallel.py:_checked_since",
                       "parallel.py:_SESSION"}
    from skiplint import parallel as in_this_process

    assert in_this_process._SESSION is None  # the run's own process hands its session down


def test_the_engine_keeps_no_index_of_its_own() -> None:
    """Every door makes its session; a call that is handed none gets a new one of its own."""
    assert not hasattr(engine, "INDEX") and not hasattr(engine, "_PLAIN")
    first = engine.check_text(ALIASED_TEXT, "m.py")
    assert first.diagnostics == ()  # no aliases: `mypkg.skip` is no API
    aliased = Session(aliases=apiimports.Aliases(ALIASES))
    assert [(d.line, d.code) for d in engine.check_text(ALIASED_TEXT, "m.py", session=aliased).diagnostics] == \
        ALIASED_FINDINGS
    assert engine.check_text(ALIASED_TEXT, "m.py").diagnostics == ()


def test_two_sessions_with_their_own_configurations_in_two_threads_at_once(tmp_path: Path) -> None:
    """The same texts checked by two doors at the same time in two threads, each with its own
    configuration (an api-alias that makes `mypkg.skip` the API; max-unroll) and its own session:
    each gives its own findings every time, and keeps only its own compositions. Both analyse
    MIXED_TEXT (it imports the API), so both read the aliases all through the analysis."""
    path = str(tmp_path / "m.py")
    settings = {"aliased": config.Config(api_aliases=ALIASES, max_unroll=2), "plain": config.Config(max_unroll=50)}
    kept: dict[str, dict[str, Any]] = {"aliased": {}, "plain": {}}
    found: dict[str, list[list[tuple[int, str]]]] = {"aliased": [], "plain": []}
    rounds = 12
    together = threading.Barrier(2, timeout=60)
    errors: list[BaseException] = []

    def door(name: str) -> None:
        session = Session(kept=kept[name])
        try:
            for _ in range(rounds):
                together.wait()  # both threads begin each round at once
                for text in (MIXED_TEXT, ALIASED_TEXT):
                    result = parallel.check_source(text, path, settings[name], session)
                    found[name].append([(d.line, d.code) for d in result.diagnostics])
        except BaseException as error:  # shown by the assertion below
            errors.append(error)
            together.abort()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads take turns as often as Python lets them
    try:
        threads = [threading.Thread(target=door, args=(name,)) for name in ("aliased", "plain")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert found["aliased"] == [MIXED_FINDINGS["aliased"], ALIASED_FINDINGS] * rounds
    assert found["plain"] == [MIXED_FINDINGS["plain"], []] * rounds
    # Each session keeps the compositions of the last text it analysed (the plain one does not
    # analyse ALIASED_TEXT: without the alias it cannot use the API).
    assert list(kept["aliased"]) == [path] == list(kept["plain"])
    assert kept["aliased"][path] is not kept["plain"][path]
