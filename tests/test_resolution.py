"""Which names are the skip API: the per-scope import table (imports.Scope) and import helpers."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from skiplint import imports
from skiplint.imports import OTHER, Scope
from skiplint.skippables import ModuleIndex


def index_of(source: str) -> ModuleIndex:
    return ModuleIndex(cst.parse_module(textwrap.dedent(source)))


def api(source: str, expr: str, function: str | None = None) -> str | None:
    """The API symbol `expr` refers to at module level, or inside the function named `function`."""
    index = index_of(source)
    scope = index.scope
    if function is not None:
        (func,) = [f for f, _ in index.functions if f.name.value == function]
        scope = index.scopes[id(func)]
    return scope.api(cst.parse_expression(expr))


@pytest.mark.parametrize("source, expr, symbol", [
    ("from torchgpipe.skip import stash", "stash", "stash"),
    ("from torchgpipe.skip import pop, stash, skippable, Namespace", "Namespace", "Namespace"),
    ("from fairscale.nn.pipe.skip import skippable", "skippable", "skippable"),
    ("from torch.distributed.pipeline.sync.skip import pop", "pop", "pop"),
    ("from torch.distributed.pipeline.sync._skip import pop", "pop", "pop"),
    ("from torch.distributed._pipeline.sync.skip import pop", "pop", "pop"),
    ("from torchgpipe.skip.skippable import stash", "stash", "stash"),
    ("from torchgpipe.skip.namespace import Namespace", "Namespace", "Namespace"),
    ("from fairscale.nn.pipe.skip.layout import inspect_skip_layout", "inspect_skip_layout",
     "inspect_skip_layout"),
    ("from torchgpipe.skip import pop as take", "take", "pop"),
    ("import fairscale.nn.pipe.skip as sk", "sk.stash", "stash"),
    ("import fairscale.nn.pipe.skip as sk", "sk.skippable", "skippable"),
    ("import torchgpipe.skip", "torchgpipe.skip.pop", "pop"),
    ("import torchgpipe.skip.skippable", "torchgpipe.skip.skippable.stash", "stash"),
    ("import torchgpipe", "torchgpipe.skip.skippable", "skippable"),
    ("from torchgpipe import skip", "skip.stash", "stash"),
    ("from torchgpipe import GPipe", "GPipe", "GPipe"),
    ("from fairscale.nn import Pipe", "Pipe", "FairscalePipe"),
    ("from torch.distributed.pipeline.sync import Pipe", "Pipe", "TorchPipe"),
    ("from torchgpipe.balance import balance_by_time", "balance_by_time", "balance_by_time"),
    ("from torch import nn", "nn.Sequential", "Sequential"),
])
def test_imported_names_resolve(source: str, expr: str, symbol: str) -> None:
    assert api(source, expr) == symbol


@pytest.mark.parametrize("source, expr", [
    ("from torchgpipe.skip import stash", "pop"),  # not imported
    ("from torchgpipe.skip import pop as take", "pop"),  # imported under another name
    ("import fairscale.nn.pipe.skip as sk", "sk.nothing"),
    ("import torchgpipe.skip as sk", "sk.stash.x"),
    ("from mylib.skip import stash", "stash"),  # a look-alike module
    ("from torchgpipe.skip import stash\nstash = None", "stash"),  # rebound
    ("from torchgpipe.skip import pop\ndef pop(store, key): pass", "pop"),  # redefined
    ("from torchgpipe.skip import pop\nclass pop: pass", "pop"),
    ("from torchgpipe.skip import pop\nfor pop in []: pass", "pop"),
    ("from torchgpipe.skip import pop\nwith open('f') as pop: pass", "pop"),
    ("from torchgpipe.skip import pop, stash\npop, stash = 1, 2", "stash"),
    ("from torchgpipe.skip import pop", "d.pop"),  # dict.pop, list.pop, deque.pop ...
    ("from torchgpipe.skip import pop", "dict.pop"),
    ("from torchgpipe.skip import pop", "self.queue.pop"),
    ("from torchgpipe.skip import *", "stash"),  # star imports bind nothing known
    ("from torchgpipe.skip import stash as pop, pop as stash\nfrom fairscale.nn.pipe.skip import pop",
     "pop"),  # two meanings
])
def test_other_names_do_not_resolve(source: str, expr: str) -> None:
    assert api(source, expr) is None


def test_try_except_fallback_between_roots_is_one_meaning() -> None:
    source = """
        try:
            from torchgpipe.skip import pop, stash
        except ImportError:
            from fairscale.nn.pipe.skip import pop, stash
    """
    assert api(source, "pop") == "pop"
    assert api(source, "stash") == "stash"


def test_function_imports_are_local_to_the_function() -> None:
    source = """
        def test_a():
            from torchgpipe.skip import stash
            return stash

        def test_b():
            return stash
    """
    assert api(source, "stash", function="test_a") == "stash"
    assert api(source, "stash", function="test_b") is None
    assert api(source, "stash") is None


def test_parameters_and_locals_shadow_module_imports() -> None:
    source = """
        from torchgpipe.skip import pop, stash

        def uses_api():
            return stash, pop

        def with_parameter(stash):
            return stash

        def with_local():
            pop = {}.pop
            return pop

        def with_star(*pop):
            return pop
    """
    assert api(source, "stash", function="uses_api") == "stash"
    assert api(source, "pop", function="uses_api") == "pop"
    assert api(source, "stash", function="with_parameter") is None
    assert api(source, "pop", function="with_local") is None
    assert api(source, "pop", function="with_star") is None


def test_nested_functions_see_enclosing_imports_but_not_class_bodies() -> None:
    source = """
        def outer():
            from fairscale.nn.pipe.skip import pop

            class Holder:
                from torchgpipe.skip import stash

                def method(self):
                    return stash, pop
    """
    index = index_of(source)
    (method,) = [f for f, _ in index.functions if f.name.value == "method"]
    scope = index.scopes[id(method)]
    assert scope.api(cst.Name("pop")) == "pop"
    assert scope.api(cst.Name("stash")) is None  # class scopes are skipped, as in Python


def test_scope_lookup_and_qualified_names() -> None:
    module = Scope("module", None)
    module.bind("sk", "fairscale.nn.pipe.skip")
    module.bind("take", "torchgpipe.skip.pop")
    function = Scope("function", module)
    function.bind("local", OTHER)
    assert function.lookup("sk") == ["fairscale.nn.pipe.skip"]
    assert function.lookup("missing") is None
    assert function.qualified(cst.parse_expression("sk.stash")) == "fairscale.nn.pipe.skip.stash"
    assert function.qualified(cst.parse_expression("take")) == "torchgpipe.skip.pop"
    assert function.qualified(cst.parse_expression("local.pop")) is None
    assert function.qualified(cst.parse_expression("f().pop")) is None
    assert function.api(cst.parse_expression("take")) == "pop"


@pytest.mark.parametrize("expr, dotted", [
    ("a", "a"), ("a.b.c", "a.b.c"), ("a().b", None), ("a[0].b", None), ("'a'.b", None),
])
def test_dotted_name(expr: str, dotted: str | None) -> None:
    assert imports.dotted_name(cst.parse_expression(expr)) == dotted


def _statement(source: str) -> cst.Import | cst.ImportFrom:
    line = cst.parse_statement(source)
    assert isinstance(line, cst.SimpleStatementLine)
    stmt = line.body[0]
    assert isinstance(stmt, (cst.Import, cst.ImportFrom))
    return stmt


@pytest.mark.parametrize("source, bindings", [
    ("import torchgpipe.skip", [("torchgpipe", "torchgpipe")]),
    ("import torchgpipe.skip as sk", [("sk", "torchgpipe.skip")]),
    ("from torchgpipe.skip import pop as take, stash",
     [("take", "torchgpipe.skip.pop"), ("stash", "torchgpipe.skip.stash")]),
    ("from . import layers", [("layers", ".layers")]),
    ("from ..pkg import layers", [("layers", "..pkg.layers")]),
    ("from torchgpipe.skip import *", []),
])
def test_import_bindings(source: str, bindings: list[tuple[str, str]]) -> None:
    assert list(imports.import_bindings(_statement(source))) == bindings


@pytest.mark.parametrize("source, removed", [
    ("import torch.distributed.pipeline.sync", "torch.distributed.pipeline.sync"),
    ("from torch.distributed.pipeline.sync.skip import pop", "torch.distributed.pipeline.sync.skip"),
    ("from torch.distributed import pipeline", "torch.distributed.pipeline"),
    ("from torch.distributed._pipeline.sync import Pipe", "torch.distributed._pipeline.sync"),
    ("import torch.distributed.pipelining", None),
    ("from torch.distributed import pipelining", None),
    ("from torchgpipe.skip import pop", None),
    ("from .pipeline import x", None),
])
def test_removed_module(source: str, removed: str | None) -> None:
    assert imports.removed_module(_statement(source)) == removed


def test_every_root_carries_the_whole_api() -> None:
    for root in imports.SKIP_ROOTS:
        for symbol in ("skippable", "stash", "pop", "Namespace", "verify_skippables"):
            assert imports.API[f"{root}.{symbol}"] == symbol
