"""`skiplint fix`: libcst rewrites of the mechanical mistakes, SKP106, SKP107 and SKP401.

Each fix replaces only the reported node, so every other byte of the file (formatting, comments,
line endings, encoding) stays as it was. A fix is kept only when the rewritten source lints
without that finding; otherwise the file is left as it was for that finding.
"""

from __future__ import annotations

import argparse
import difflib
import io
import keyword
import sys
import tokenize
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from skiplint import config, imports, parallel, parsing, sources
from skiplint.diagnostics import Diagnostic
from skiplint.imports import dotted_name

FIXABLE = ("SKP106", "SKP107", "SKP401")
#: Where the skip API lives for each `--target`: (the skip package, the module that contains it).
TARGETS: dict[str, tuple[str, str]] = {
    "torchgpipe": ("torchgpipe.skip", "torchgpipe"),
    "fairscale": ("fairscale.nn.pipe.skip", "fairscale.nn.pipe"),
}
#: The removed torch modules that held the skip API, and the modules whose `skip` they imported.
_REMOVED_SKIP_ROOTS = tuple(root for root in imports.SKIP_ROOTS if root.startswith(imports.REMOVED_MODULES))
_REMOVED_PARENTS = ("torch.distributed.pipeline.sync", "torch.distributed._pipeline.sync")

EXIT_OK, EXIT_CHANGES, EXIT_UNCHECKED = 0, 1, 2


class _NotFixable(Exception):
    """This occurrence has no mechanical rewrite (the message says why)."""


@dataclass(frozen=True)
class FileFix:
    """What `skiplint fix` did to one file."""

    path: str
    original: str
    fixed: str
    applied: tuple[Diagnostic, ...]
    #: Findings of the fixable codes left in place, each with the reason.
    left: tuple[tuple[Diagnostic, str], ...]
    error: Optional[str] = None

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


# -- rewriting one node ----------------------------------------------------------------------------

def _dotted(name: str) -> Union[cst.Name, cst.Attribute]:
    head, *rest = name.split(".")
    node: Union[cst.Name, cst.Attribute] = cst.Name(head)
    for part in rest:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def _moved(module: str, target: str) -> Optional[str]:
    """The target's spelling of a removed skip module, or None when it is not one."""
    skip_root, _ = TARGETS[target]
    for root in _REMOVED_SKIP_ROOTS:
        if module == root or module.startswith(root + "."):
            return skip_root + module[len(root):]
    return None


def _fix_import(node: cst.CSTNode, target: str) -> cst.CSTNode:
    if isinstance(node, cst.ImportFrom):
        if node.relative or node.module is None:
            raise _NotFixable("relative import")
        module = dotted_name(node.module) or ""
        moved = _moved(module, target)
        if moved is not None:
            return node.with_changes(module=_dotted(moved))
        if module in _REMOVED_PARENTS and not isinstance(node.names, cst.ImportStar) and all(
                isinstance(alias.name, cst.Name) and alias.name.value in ("skip", "_skip")
                for alias in node.names):
            names = [
                alias.with_changes(name=cst.Name("skip"),
                                   asname=alias.asname or (cst.AsName(name=cst.Name("_skip"))
                                                           if alias.name.value == "_skip" else None))
                for alias in node.names
            ]
            return node.with_changes(module=_dotted(TARGETS[target][1]), names=names)
        raise _NotFixable(f"'{module}' has no drop-in replacement in {target}")
    if isinstance(node, cst.Import):
        names = []
        for alias in node.names:
            module = dotted_name(alias.name) or ""
            if imports.removed_module(cst.Import(names=[alias.with_changes(comma=cst.MaybeSentinel.DEFAULT)])):
                moved = _moved(module, target)
                if moved is None or alias.asname is None:
                    # Without `as`, the code spells the full torch path wherever it uses the module.
                    raise _NotFixable(f"'import {module}' is used through its full name")
                alias = alias.with_changes(name=_dotted(moved))
            names.append(alias)
        return node.with_changes(names=names)
    raise _NotFixable("not an import statement")


def _free_name(wanted: str, taken: set[str]) -> str:
    if not (wanted.isidentifier() and not keyword.iskeyword(wanted)):
        wanted = "skip"
    candidate, n = wanted, 1
    while candidate in taken:
        n += 1
        candidate = f"{wanted}_{n}" if n > 1 else wanted
    return candidate


class _Located:
    """The nodes of a module by position, with their parents."""

    def __init__(self, module: cst.Module) -> None:
        self.wrapper = MetadataWrapper(module)
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)

    def at(self, line: int, col: int) -> list[cst.CSTNode]:
        """Nodes starting at (line, col), outermost first."""
        found = [node for node, where in self.positions.items()
                 if where.start.line == line and where.start.column == col]
        depth = {id(node): self._depth(node) for node in found}
        return sorted(found, key=lambda node: depth[id(node)])

    def _depth(self, node: cst.CSTNode) -> int:
        depth = 0
        while node in self.parents:
            node = self.parents[node]
            depth += 1
        return depth

    def function_of(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return node if isinstance(node, cst.FunctionDef) else None
        return None

    def yield_allowed(self, node: cst.CSTNode) -> bool:
        """Whether adding a yield at `node` keeps the program's meaning apart from the fix: inside a
        function that is already a generator, or the forward of a decorated class (@skippable)."""
        func = self.function_of(node)
        if func is None or func.asynchronous is not None:
            return False
        found: list[bool] = []

        class Yields(cst.CSTVisitor):
            def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
                return inner is func

            def visit_ClassDef(self, _: cst.ClassDef) -> bool:
                return False

            def visit_Lambda(self, _: cst.Lambda) -> bool:
                return False

            def visit_Yield(self, _: cst.Yield) -> None:
                found.append(True)

        func.visit(Yields())
        if found:
            return True
        block = self.parents.get(func)
        cls = self.parents.get(block) if block is not None else None
        return func.name.value == "forward" and isinstance(cls, cst.ClassDef) and bool(cls.decorators)

    def names_in_scope(self, node: cst.CSTNode) -> set[str]:
        """Every name used in the function (or module) around `node`."""
        scope: cst.CSTNode = node
        while scope in self.parents and not isinstance(scope, cst.FunctionDef):
            scope = self.parents[scope]
        names: set[str] = set()

        class Collect(cst.CSTVisitor):
            def visit_Name(self, name: cst.Name) -> None:
                names.add(name.value)

        scope.visit(Collect())
        return names


def _rewrite(module: cst.Module, diagnostic: Diagnostic, target: str) -> cst.Module:
    """The module with the node of one finding rewritten; _NotFixable when there is no rewrite."""
    located = _Located(module)
    nodes = located.at(diagnostic.line, diagnostic.col)
    old: Optional[cst.CSTNode] = None
    new: Optional[cst.CSTNode] = None
    if diagnostic.code == "SKP106":
        for node in nodes:
            parent = located.parents.get(node)
            if isinstance(parent, cst.Arg) and parent.value is node and isinstance(node, cst.BaseExpression):
                value = node
                if isinstance(value, cst.SimpleString) and len(value.lpar) == 1:
                    value = value.with_changes(lpar=[], rpar=[])
                old, new = node, cst.List(elements=[cst.Element(value=value)])
                break
        else:
            raise _NotFixable("the declaration is not a call argument")
    elif diagnostic.code == "SKP107":
        for node in nodes:
            if not isinstance(node, cst.Call):
                continue
            parent = located.parents.get(node)
            if not located.yield_allowed(node):
                raise _NotFixable("a yield here would change what the enclosing function is")
            if isinstance(parent, cst.Expr) and parent.value is node:
                if diagnostic.message.split(" ", 2)[1].startswith("stash("):
                    old, new = parent, parent.with_changes(value=cst.Yield(value=node))
                else:
                    wanted = _skip_name(node)
                    name = _free_name(wanted, located.names_in_scope(node))
                    old = parent
                    new = cst.Assign(targets=[cst.AssignTarget(target=cst.Name(name))],
                                     value=cst.Yield(value=node), semicolon=parent.semicolon)
                break
            if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
                old, new = node, cst.Yield(value=node)
                break
        else:
            raise _NotFixable("the command is part of a larger expression")
    elif diagnostic.code == "SKP401":
        for node in nodes:
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                old, new = node, _fix_import(node, target)
                break
        else:
            raise _NotFixable("no import statement at the reported position")
    else:
        raise _NotFixable(f"{diagnostic.code} has no automatic fix")
    assert old is not None and new is not None
    replaced: Any = new
    result = located.module.deep_replace(old, replaced)
    assert isinstance(result, cst.Module)
    return result


def _skip_name(call: cst.Call) -> str:
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "name":
            if isinstance(arg.value, cst.SimpleString):
                value = arg.value.evaluated_value
                if isinstance(value, str):
                    return value
            break
    return "skip"


# -- one file --------------------------------------------------------------------------------------

def _fixable(result_diagnostics: Sequence[Diagnostic], codes: Sequence[str]) -> list[Diagnostic]:
    return [d for d in result_diagnostics if d.code in codes]


def fix_source(text: str, path: str, settings: config.Config = config.Config(), target: str = "torchgpipe",
               codes: Sequence[str] = FIXABLE) -> FileFix:
    """Apply every fix that works, one at a time, re-linting after each."""
    result = parallel.check_source(text, path, settings)
    if result.error is not None:
        return FileFix(path, text, text, (), (), result.error)
    current = text
    diagnostics = list(result.diagnostics)
    compiles = any(d.code in codes for d in diagnostics) and _compiles(text, path)
    applied: list[Diagnostic] = []
    left: list[tuple[Diagnostic, str]] = []
    tried: set[tuple[str, int, int, str]] = set()
    for _ in range(4 * len(diagnostics) + 8):
        pending = [d for d in _fixable(diagnostics, codes) if (d.code, d.line, d.col, d.message) not in tried]
        if not pending:
            break
        diagnostic = pending[0]
        tried.add((diagnostic.code, diagnostic.line, diagnostic.col, diagnostic.message))
        try:
            candidate = _rewrite(parsing.parse_module(current), diagnostic, target).code
        except _NotFixable as why:
            left.append((diagnostic, str(why)))
            continue
        except parsing.ParseFailure as error:
            left.append((diagnostic, f"could not rewrite: {error}"))
            continue
        if compiles and not _compiles(candidate, path):
            left.append((diagnostic, "the rewritten file would not compile"))
            continue
        after = parallel.check_source(candidate, path, settings)
        before_count = sum(1 for d in diagnostics if d.code == diagnostic.code)
        after_count = sum(1 for d in after.diagnostics if d.code == diagnostic.code)
        if after.error is not None or after_count >= before_count:
            left.append((diagnostic, "the rewritten file still has this finding"))
            continue
        applied.append(diagnostic)
        current = candidate
        diagnostics = list(after.diagnostics)
    return FileFix(path, text, current, tuple(applied), tuple(left))


def _compiles(text: str, path: str) -> bool:
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _encoding(data: bytes) -> str:
    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def fix_file(path: str, settings: config.Config, target: str, codes: Sequence[str],
             write: bool) -> FileFix:
    try:
        data = sources.read_bytes(path)
        if not imports.mentions_api(data) and not settings.api_aliases:
            sources.decode(data)
            return FileFix(path, "", "", (), ())
        text = sources.decode(data)
    except sources.SourceError as error:
        return FileFix(path, "", "", (), (), str(error))
    outcome = fix_source(text, path, settings, target, codes)
    if write and outcome.changed:
        with open(path, "wb") as handle:
            handle.write(outcome.fixed.encode(_encoding(data)))
    return outcome


# -- the command -----------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiplint fix",
        description="Rewrite the mechanical mistakes in place: SKP106 (a bare string declaration "
                    "becomes a one-element list), SKP107 (the missing yield, and the assignment "
                    "for a pop), SKP401 (imports of the removed torch.distributed.pipeline.sync "
                    "skip API move to --target). Everything else in the file is kept byte for "
                    "byte; a fix is kept only when the file then lints without that finding.",
        epilog="Exit status: 0 done (or nothing to fix), 1 with --diff when there are changes, "
               "2 a file could not be read or parsed.",
    )
    p.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                   help="files or directories to fix, recursively (default: .)")
    p.add_argument("--diff", action="store_true",
                   help="print the changes as a unified diff instead of writing them")
    p.add_argument("--target", choices=tuple(TARGETS), default="torchgpipe",
                   help="where SKP401 moves skip API imports (default: torchgpipe)")
    p.add_argument("--select", default=None, metavar="CODES",
                   help="comma-separated codes to fix (default: " + ",".join(FIXABLE) + ")")
    p.add_argument("--config", metavar="FILE", help="read the configuration from FILE only")
    p.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but the diff")
    return p


def _diff(outcome: FileFix) -> str:
    return "".join(difflib.unified_diff(
        outcome.original.splitlines(keepends=True), outcome.fixed.splitlines(keepends=True),
        fromfile=f"a/{outcome.path}", tofile=f"b/{outcome.path}"))


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    codes: tuple[str, ...] = FIXABLE
    if args.select:
        wanted = tuple(c.strip().upper() for c in args.select.replace(" ", ",").split(",") if c.strip())
        codes = tuple(code for code in FIXABLE if code.startswith(wanted))
    finder = config.Finder(explicit=args.config, isolated=args.isolated)
    tasks = list(finder.discover(args.paths))
    for problem in finder.problems:
        print(problem, file=sys.stderr)
    say: Callable[[str], None] = (lambda _line: None) if args.quiet else (lambda line: print(line, file=sys.stderr))
    status = EXIT_OK
    for path, settings in tasks:
        outcome = fix_file(path, settings, args.target, codes, write=not args.diff)
        if outcome.error is not None:
            say(f"{path}: could not fix this file: {outcome.error}")
            status = EXIT_UNCHECKED
            continue
        if outcome.changed:
            if args.diff:
                sys.stdout.write(_diff(outcome))
                status = max(status, EXIT_CHANGES)
            fixed = ", ".join(f"{d.code} (line {d.line})" for d in outcome.applied)
            say(f"{path}: {'would fix' if args.diff else 'fixed'} {fixed}")
        for diagnostic, why in outcome.left:
            say(f"{path}:{diagnostic.line}:{diagnostic.col + 1}: {diagnostic.code} not fixed: {why}")
    return status
