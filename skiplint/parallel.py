"""Checking many files, on one core or several (`-j`), with the same results in the same order."""

from __future__ import annotations

import inspect
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Optional, Sequence

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


def _engine_options(config: Config) -> dict[str, Any]:
    """Settings for engine.check_file that this engine accepts (max-unroll reaches it when it can)."""
    if config.max_unroll is not None and "max_unroll" in inspect.signature(engine.check_file).parameters:
        return {"max_unroll": config.max_unroll}
    return {}


def check_one(task: Task) -> engine.FileResult:
    """Check one file with its configuration: selection, api-aliases, then per-file-ignores."""
    path, config = task
    selection = engine.Selection(config.select, config.ignore, config.extend_select)
    with imports.using_aliases(config.api_aliases):
        result = engine.check_file(path, selection, **_engine_options(config))
    ignored = config.ignored_in(path)
    if ignored and result.diagnostics:
        kept = tuple(d for d in result.diagnostics if not d.code.startswith(ignored))
        result = engine.FileResult(result.path, kept, result.error)
    return result


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
