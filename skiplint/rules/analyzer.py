"""SKP9xx: the analyzer itself. What skiplint could not check."""

from __future__ import annotations

from typing import Iterator

from skiplint.findings import AnalyzerBug, At, Finding, Unchecked
from skiplint.limits import BUDGET
from skiplint.rules.base import Rule, checks

#: The family's heading in docs/rules.md, and what its rules predict (rendered by skiplint.rules.doc).
TITLE = 'SKP9xx: the analyzer itself'
BLURB = 'What skiplint could not check.'


UNCHECKED_FILE = Rule(
    code='SKP900', name='unchecked-file',
    template='could not check this file: {reason}',
    summary='a file could not be read or parsed',
    failure='',
    reported_at="where the file stops being checkable: a syntax error's line and column, as the running "
                "Python's parser puts them, or the token past a parser limit; line 1 for a file that cannot "
                'be read or decoded, or one past the size limit (flake8 reports what Python cannot parse as E999)',
    when='the file cannot be read at all (missing, unreadable, not a regular file, larger than the size '
         'limit), or it may use the API (it imports an API module, or composes skippable classes imported '
         'from its own project) and cannot be decoded or parsed. A file whose bytes name no API module is '
         'neither decoded nor parsed, so nothing is reported about it, whatever it holds (a syntax error, NUL '
         'bytes, bytes that are not text): Python and flake8 (E902, E999) report those',
)


COMPUTED_SKIP_NAME = Rule(
    code='SKP901', name='computed-skip-name',
    template='{what} is computed at run time; skiplint cannot check it',
    summary='a skip name or declaration is computed at run time, so the checks abstain for it',
    failure='',
    reported_at='the computed expression (for `.isolate(...)`, the namespace or `only=` argument; for a '
                "pipe's options, the pipe call; for a stash that may be a view, the `.detach_()` call)",
    when=("the name cannot be known for a class the module makes: a name read from a factory's parameter, a "
          "loop's variable or a class attribute is checked class by class when the module calls the factory "
          '(or runs the loop) with names it can read (up to '
          f"{BUDGET.specializations} classes per class statement), "
          'and is reported here when it is computed at run time or the factory is never called in the module. '
          'Also the namespace or the `only=` names given to `.isolate(...)` when they cannot be known (a '
          "builder's parameter): the layer's skips are then not checked. And a pipe's `balance=`, `chunks=` or "
          '`checkpoint=` that cannot be known (given through `**options`, `*args` or a parameter, or computed) '
          'where some value the pipe accepts makes one of its checks fail (each balance of one or two partitions '
          f"is tried, up to 64 layers): reported at the pipe call. And whether a stash that a layer detaches "
          'in place right after its pop is a view, where it may be one (see SKP206): reported at the '
          '`.detach_()` call'),
    opt_in=True,
)


INTERNAL_ERROR = Rule(
    code='SKP902', name='internal-error',
    template='internal error while analysing {what}: {error}; please report',
    summary='an internal error of the analyzer: never silent, the CLI exits 2 and flake8 shows it',
    failure='',
    reported_at='line 1 (the analysis of the rest of the file is still reported)',
)


@checks("unchecked", UNCHECKED_FILE)
def unchecked_file(fact: Unchecked) -> Iterator[Finding]:
    yield UNCHECKED_FILE.at(At(fact.line, fact.col), reason=fact.reason)


@checks("bug", INTERNAL_ERROR)
def internal_error(fact: AnalyzerBug) -> Iterator[Finding]:
    yield INTERNAL_ERROR.at(None, what=fact.what, error=fact.error)
