"""Checking many files, on one core or several (`-j`), with the same results in the same order."""

from __future__ import annotations

import inspect
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, Optional, Sequence

from skiplint import engine, imports
from skiplint.config import Config

#: A unit of work: one file and the configuration it is checked with (sent to workers as is).
Task = tuple[str, Config]


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return max(os.cpu_count() or 1, 1)


def _engine_options(func: Callable[..., Any], config: Config) -> dict[str, Any]:
    """Settings that this engine function accepts (max-unroll reaches it when it can)."""
    if config.max_unroll is not None and "max_unroll" in inspect.signature(func).parameters:
        return {"max_unroll": config.max_unroll}
    return {}


def _without_ignored(result: engine.FileResult, path: str, config: Config) -> engine.FileResult:
    ignored = config.ignored_in(path)
    if ignored and result.diagnostics:
        kept = tuple(d for d in result.diagnostics if not d.code.startswith(ignored))
        result = engine.FileResult(result.path, kept, result.error)
    return result


def _selection(config: Config) -> engine.Selection:
    return engine.Selection(config.select, config.ignore, config.extend_select)


def check_one(task: Task) -> engine.FileResult:
    """Check one file with its configuration: selection, api-aliases, then per-file-ignores."""
    path, config = task
    with imports.using_aliases(config.api_aliases):
        result = engine.check_file(path, _selection(config), **_engine_options(engine.check_file, config))
    return _without_ignored(result, path, config)


def check_source(text: str, path: str, config: Config) -> engine.FileResult:
    """As check_one, for source text already in hand (`skiplint fix` re-linting its output)."""
    with imports.using_aliases(config.api_aliases):
        result = engine.check_text(text, path, _selection(config), **_engine_options(engine.check_text, config))
    return _without_ignored(result, path, config)


def check_all(tasks: Sequence[Task], jobs: Optional[int] = None) -> list[engine.FileResult]:
    """Results for every task, in the tasks' order, whatever the number of jobs."""
    jobs = default_jobs() if jobs is None or jobs <= 0 else jobs
    jobs = min(jobs, len(tasks))
    if jobs <= 1:
        return [check_one(task) for task in tasks]
    chunksize = max(1, min(32, len(tasks) // (jobs * 4)))
    try:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(check_one, tasks, chunksize=chunksize))
    except (OSError, ImportError, NotImplementedError):
        # No process support here (e.g. a sandbox without semaphores): the same work, serially.
        return [check_one(task) for task in tasks]
