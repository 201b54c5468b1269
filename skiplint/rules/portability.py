"""SKP4xx: portability. Code that stops importing on a newer PyTorch."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator, Optional

from skiplint.rules.base import Rule, checks, fixes

if TYPE_CHECKING:
    from skiplint.diagnostics import Diagnostic
    from skiplint.edits import Edit, Source
    from skiplint.facts import ModuleFacts
    from skiplint.findings import Finding

#: The family's heading in docs/rules.md, and what its rules predict (rendered by skiplint.rules.doc).
TITLE = 'SKP4xx: portability'
BLURB = 'Code that stops importing on a newer PyTorch.'


REMOVED_TORCH_PIPELINE = Rule(
    code='SKP401', name='removed-torch-pipeline',
    template="'{module}' was removed in PyTorch 2.4; {advice}",
    summary='import of torch.distributed.pipeline.sync, removed in PyTorch 2.4',
    failure='ModuleNotFoundError on torch >= 2.4',
    reported_at='the import',
    fix_title='Import from `{target}`',
)


# -- checks ----------------------------------------------------------------------------------------

#: What replaces each thing an import from the removed torch.distributed.pipeline brings in.
_ADVICE = {
    "skip": "import skippable, stash, pop and Namespace from torchgpipe.skip or fairscale.nn.pipe.skip",
    "Pipe": "use torchgpipe.GPipe or fairscale.nn.Pipe (partitions by balance=), or torch.distributed.pipelining",
    "PipeSequential": "give a plain nn.Sequential to torchgpipe.GPipe or fairscale.nn.Pipe, or split the stages "
                      "with torch.distributed.pipelining",
    "placement": "place layers with balance= and devices= of torchgpipe.GPipe or fairscale.nn.Pipe, or split the "
                 "stages with torch.distributed.pipelining",
    "package": "the skip API lives on in torchgpipe.skip and fairscale.nn.pipe.skip, the pipe in torchgpipe.GPipe "
               "and fairscale.nn.Pipe; or move to torch.distributed.pipelining",
}


@checks("module", REMOVED_TORCH_PIPELINE)
def removed_imports(facts: ModuleFacts) -> Iterator[Finding]:
    for imported in facts.removed_imports:
        advice = "; ".join(_ADVICE[kind] for kind in imported.brings)
        yield REMOVED_TORCH_PIPELINE.at(imported.site, module=imported.module, advice=advice)


# -- fixes (`Rule.fixer`; `skiplint fix` keeps an edit only when the file gets strictly better) -------

#: The removed torch modules whose `skip` (the skip API's package) a fix may import from --target.
_REMOVED_PARENTS = ("torch.distributed.pipeline.sync", "torch.distributed._pipeline.sync")


@fixes(REMOVED_TORCH_PIPELINE)
def _import_from_target(source: Source, finding: Diagnostic, target: str) -> list[Edit]:
    """SKP401: the import statement the finding spans imports the skip API from --target instead."""
    statements = source.nodes(finding, (ast.Import, ast.ImportFrom))
    return _import_edits(source, statements[0], target)


def _moved(module: str, target: str) -> Optional[str]:
    """The target's spelling of a removed skip module, or None when it is not one."""
    from skiplint import imports
    from skiplint.edits import TARGETS

    skip_root, _ = TARGETS[target]
    for root in imports.SKIP_ROOTS:
        if root.startswith(imports.REMOVED_MODULES) and (module == root or module.startswith(root + ".")):
            return skip_root + module[len(root):]
    return None


def _removed(module: str) -> bool:
    from skiplint import imports

    return any(module == root or module.startswith(root + ".") for root in imports.REMOVED_MODULES)


def _dotted_run(tokens: list[tuple[str, int, int]], index: int) -> tuple[str, int, int, int]:
    """The dotted name starting at tokens[index]: (name, start, end, index after it)."""
    parts, start, end = [tokens[index][0]], tokens[index][1], tokens[index][2]
    index += 1
    while index + 1 < len(tokens) and tokens[index][0] == "." and tokens[index + 1][0].isidentifier():
        parts.append(tokens[index + 1][0])
        end = tokens[index + 1][2]
        index += 2
    return ".".join(parts), start, end, index


def _aliases(tokens: list[tuple[str, int, int]]) -> list[tuple[tuple[str, int, int], bool]]:
    """The names after `from ... import`: each name token, and whether `as` follows it."""
    names = [token for token in tokens if token[0] not in ("(", ")", ",")]
    out, index = [], 0
    while index < len(names):
        has_asname = index + 1 < len(names) and names[index + 1][0] == "as"
        out.append((names[index], has_asname))
        index += 3 if has_asname else 1
    return out


def _import_edits(source: Source, stmt: ast.AST, target: str) -> list[Edit]:
    from skiplint.edits import TARGETS, Edit, NotFixable

    tokens = source.tokens(stmt)
    if isinstance(stmt, ast.ImportFrom):
        if stmt.level or stmt.module is None:
            raise NotFixable("relative import")
        module, start, end, after = _dotted_run(tokens, 1)
        if module != stmt.module or tokens[after][0] != "import":
            raise NotFixable("the module path could not be located")
        moved = _moved(module, target)
        if moved is not None:
            return [Edit(start, end, moved)]
        names = [alias.name for alias in stmt.names]
        if module in _REMOVED_PARENTS and "*" not in names and set(names) <= {"skip", "_skip"}:
            edits = [Edit(start, end, TARGETS[target][1])]
            aliases = _aliases(tokens[after + 1:])
            if [name[0] for name, _ in aliases] != names:
                raise NotFixable("the imported names could not be located")
            for (name, has_asname) in aliases:
                if name[0] == "_skip":
                    edits.append(Edit(name[1], name[2], "skip" if has_asname else "skip as _skip"))
            return edits
        raise NotFixable(f"'{module}' has no drop-in replacement in {target}")
    if isinstance(stmt, ast.Import):
        edits, index = [], 1
        for alias in stmt.names:
            module, start, end, index = _dotted_run(tokens, index)
            if module != alias.name:
                raise NotFixable("the module path could not be located")
            if index < len(tokens) and tokens[index][0] == "as":
                index += 2
            index += 1  # the comma
            if _removed(module):
                moved = _moved(module, target)
                if moved is None or alias.asname is None:
                    # Without `as`, the code spells the full torch path wherever it uses the module.
                    raise NotFixable(f"'import {module}' is used through its full name")
                edits.append(Edit(start, end, moved))
        return edits
    raise NotFixable("not an import statement")
