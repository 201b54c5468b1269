"""The shape of the package: skiplint's modules import one another without a circle.

The graph is read from the source with `ast`: every `import` and `from ... import` of a skiplint
module, at the top of a module or inside a function (a lazy import that closes a circle is a
circle all the same: the two modules still need each other), except those under
`if TYPE_CHECKING:`, which only the type checker runs.
"""

from __future__ import annotations

import ast
import pathlib
from typing import Iterator, Union

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "skiplint"


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        if (PACKAGE / "rules" / "examples") in path.parents:
            continue  # the rules' example programs (data shipped with the package), no modules of it
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _imports(node: ast.AST) -> Iterator[Union[ast.Import, ast.ImportFrom]]:
    """Every import statement under `node`, but those only the type checker runs."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        elif isinstance(child, ast.If) and _type_checking(child):
            for other in child.orelse:
                yield from _imports(ast.Module(body=[other], type_ignores=[]))
        else:
            yield from _imports(child)


def import_graph() -> dict[str, set[str]]:
    """Module -> the skiplint modules it imports (a package's `__init__` counts as the package;
    `from pkg import name` counts as pkg.name when that is a module, else as pkg)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: set[str] = set()
        for statement in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(statement, ast.Import):
                targets = [alias.name for alias in statement.names]
            else:
                if statement.level:
                    base = package[:len(package) - statement.level + 1]
                    module = ".".join(base + ([statement.module] if statement.module else []))
                else:
                    module = statement.module or ""
                targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module
                           for alias in statement.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]  # `import a.b.c` of a package's attribute
                if target and target != name and target.split(".")[0] == "skiplint":
                    edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_graph_sees_the_imports_it_should() -> None:
    graph = import_graph()
    assert "skiplint.limits" in graph["skiplint.parsing"]  # top level
    assert "skiplint.projectscan" in graph["skiplint.prefilter"]  # inside a function
    assert "skiplint.rules.analyzer" in graph["skiplint.prefilter"]  # `from skiplint.rules import analyzer`, lazily
    assert "skiplint.diagnostics" in graph["skiplint.prefilter"]  # under TYPE_CHECKING and lazily too


def test_cycles_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    assert cycles(import_graph()) == []
