"""Checking many files, on one core or several (`-j`), with the same results in the same order.

A file that names no API module gets its verdict from the prefilter alone: the engine (and with
it libcst) is imported only for a file that needs it. A worker process that dies (the kernel's
OOM killer, a crashing C extension) costs the run nothing but the file it was on: the other
files' results are kept, the files it may have been checking are retried each in a fresh process
of its own, and one that kills that process too is reported as not checked (SKP900). A worker
that spends more than limits.FILE_SECONDS on one file (a stopped or stuck process: no file needs
that long) is ended the same way, and that file is reported as not checked (SKP900).
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import os
import signal
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence, Union

from skiplint import limits, prefilter
from skiplint.config import Config
from skiplint.diagnostics import FileResult
from skiplint.rules import Selection
from skiplint.session import Session

#: A unit of work: one file and the configuration it is checked with (sent to workers as is).
Task = tuple[str, Config]


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return max(os.cpu_count() or 1, 1)


def _without_ignored(result: FileResult, path: str, config: Config) -> FileResult:
    ignored = config.ignored_in(path)
    if ignored and result.diagnostics:
        kept = tuple(d for d in result.diagnostics if not d.code.startswith(ignored))
        result = FileResult(result.path, kept, result.error)
    return result


def _selection(config: Config) -> Selection:
    return Selection(config.select, config.ignore, config.extend_select)


def check_one(task: Task, session: Optional[Session] = None) -> FileResult:
    """Check one file with its configuration: selection, api-aliases, then per-file-ignores;
    `session`: what the door hands the analysis (skiplint.session.Session; None: one of its own)."""
    path, config = task
    own = (session or Session()).configured(config.api_aliases)
    return checked(path, config, lambda: prefilter.triage(path, own), own)


def check_data(data: bytes, path: str, config: Config, session: Optional[Session] = None) -> FileResult:
    """As check_one, for source read from elsewhere (standard input): the same verdicts, from
    the same guards."""
    own = (session or Session()).configured(config.api_aliases)
    return checked(path, config, lambda: prefilter.judge(data, path, own), own)


def checked(path: str, config: Config, triage: Callable[[], Any], session: Optional[Session] = None) -> FileResult:
    """The result of one source with its configuration, from `triage` (a verdict or the text to
    analyse); an analyzer bug is SKP902, never a traceback."""
    verdict = _judged(path, config, triage)
    return verdict if isinstance(verdict, FileResult) else _analyse((path, config), verdict, session or Session())


def _judged(path: str, config: Config, triage: Callable[[], Any]) -> Union[FileResult, str]:
    """`triage`'s verdict with the file's per-file-ignores applied, or the text to analyse."""
    verdict = _guarded(path, config, triage)
    return _without_ignored(verdict, path, config) if isinstance(verdict, FileResult) else verdict


def _analyse(task: Task, text: str, session: Session) -> FileResult:
    """check_one's second half: the analysis of a file the prefilter passed, given its text."""
    from skiplint import engine

    path, config = task
    result = _guarded(path, config, lambda: engine.check_text(
        text, path, _selection(config), prefiltered=True, max_unroll=config.max_unroll,
        session=session.configured(config.api_aliases)))
    return _without_ignored(result, path, config)


def _guarded(path: str, config: Config, work: Callable[[], Any]) -> Any:
    """`work()`, or SKP902 (where it is selected) for the analyzer bug it raised: never silent,
    never a traceback."""
    try:
        return work()
    except Exception as error:
        if os.environ.get("SKIPLINT_DEBUG"):
            raise
        result, selection = prefilter.internal_error(path, "this file", error), _selection(config)
        return FileResult(path, tuple(d for d in result.diagnostics if selection(d.code)), result.error)


def check_source(text: str, path: str, config: Config, session: Optional[Session] = None) -> FileResult:
    """As check_one, for source text already in hand (`skiplint fix` re-linting its output, the
    language server's buffers)."""
    from skiplint import engine

    result = engine.check_text(text, path, _selection(config), max_unroll=config.max_unroll,
                               session=(session or Session()).configured(config.api_aliases))
    return _without_ignored(result, path, config)


# -- the cycle collector ------------------------------------------------------------------------------
# A run keeps what it learns of every module it reads (the project summaries: about 20 objects the
# collector tracks per module) and every file's result. Each full collection goes through all of it
# again, and one comes every 40 to 90 files: over 10,000 generated files the collector took 14.9 s
# of 106 s (119 full collections), 14x its time over 1,000 files (24). So every SETTLE_EVERY files the run collects once
# and moves what is still alive out of the collector's view (gc.freeze): later collections go through
# what the newer files left, and the run's time grows with its files again (the collector 5.8 s,
# the run 94 s). What is frozen is still freed by reference counting; only a reference cycle that
# becomes garbage while frozen waits for the end of the run, and the run makes none (the cache
# keeps every summary to the end). Only a process that is the run's own settles: the CLI asks for
# it (check_all(settle=True)) for itself and its workers; any other caller's collector is its own.
# (Objects frozen already say nothing of who froze them: Python 3.12.1 starts with 375 of its own.)

#: Files checked between two settlings of the cycle collector.
SETTLE_EVERY = 100

#: Files checked since the last settling in this process, or None where this process's collector
#: is not ours to change.
_checked_since: Optional[int] = None


def _after_file() -> None:
    global _checked_since
    if _checked_since is None:
        return
    _checked_since += 1
    if _checked_since >= SETTLE_EVERY:
        _checked_since = 0
        gc.collect()
        gc.freeze()


@contextmanager
def _settling(settle: bool) -> Iterator[None]:
    """Settle the collector while checking in this process, if asked and it is on; what was
    frozen is given back to it at the end."""
    global _checked_since
    if not settle or not gc.isenabled() or _checked_since is not None:
        yield
        return
    _checked_since = 0
    try:
        yield
    finally:
        _checked_since = None
        gc.unfreeze()


def _serially(tasks: Sequence[Task], settle: bool, session: Session) -> list[FileResult]:
    out = []
    with _settling(settle):
        for task in tasks:
            out.append(check_one(task, session))
            _after_file()
    return out


# -- workers ---------------------------------------------------------------------------------------

#: In a worker: one shared byte per task, 1 when the worker starts it and 2 when it is done, and
#: the time it started (see _pool_round).
_STARTED: Optional[Any] = None
_SINCE: Optional[Any] = None
#: In a worker: its session (sessions do not cross processes; None in the run's own process).
_SESSION: Optional[Session] = None
#: Seconds between two looks at the workers' files (a bound of minutes needs no finer clock).
_TICK = 0.5
_KILL = getattr(signal, "SIGKILL", signal.SIGTERM)


def _worker_init(started: Any, since: Any, workers: Any, settle: bool) -> None:
    global _STARTED, _SINCE, _checked_since, _SESSION
    _STARTED, _SINCE = started, since
    _SESSION = Session()  # the worker's door: one session for every file it is given
    with workers.get_lock():  # each worker's pid, so that the run can end a stopped one
        slot = next((i for i in range(len(workers)) if not workers[i]), None)
        if slot is not None:
            workers[slot] = os.getpid()
    # A worker is the run's own process: when asked, its collector settles for as long as it lives.
    _checked_since = 0 if settle and gc.isenabled() else None


def _check_chunk(chunk: list[tuple[int, Task]]) -> list[tuple[int, FileResult]]:
    session = _SESSION or Session()
    out = []
    for index, task in chunk:
        if _STARTED is not None and _SINCE is not None:
            _SINCE[index] = time.monotonic()
            _STARTED[index] = 1
        out.append((index, check_one(task, session)))
        if _STARTED is not None:
            _STARTED[index] = 2
        _after_file()
    return out


def _timed_out(task: Task) -> FileResult:
    return prefilter.unchecked(task[0], f"checking it took more than {limits.FILE_SECONDS:g} s, the limit for "
                                        "one file; the process checking it was ended")


def _end(pids: Sequence[int]) -> None:
    for pid in pids:
        if pid:
            try:
                os.kill(pid, _KILL)
            except OSError:  # gone already
                pass


def _close(pool: ProcessPoolExecutor, workers: Any) -> None:
    """Shut the pool down without waiting on a worker that cannot exit (a stopped one): the workers
    get limits.WORKER_EXIT_SECONDS to end; those still there are ended."""
    pool.shutdown(wait=False)
    pids = set(workers[:]) - {0}
    deadline = time.monotonic() + limits.WORKER_EXIT_SECONDS
    while time.monotonic() < deadline:
        left = [p.pid for p in multiprocessing.active_children() if p.pid in pids]
        if not left:
            break
        time.sleep(0.01)
    else:
        _end([p.pid or 0 for p in multiprocessing.active_children() if p.pid in pids])


def _pool_round(tasks: Sequence[Task], todo: list[int], jobs: int,
                results: list[Optional[FileResult]], settle: bool) -> tuple[list[int], list[int]]:
    """Run `todo` in one pool, filling `results`. When a worker dies, the pool is lost: returns
    the tasks it had not started and those it had started but not finished; else ([], [])."""
    context = multiprocessing.get_context()
    started = context.Array("b", len(tasks), lock=False)
    since = context.Array("d", len(tasks), lock=False)
    chunksize = max(1, min(32, len(todo) // (jobs * 4)))
    chunks = [[(i, tasks[i]) for i in todo[k:k + chunksize]] for k in range(0, len(todo), chunksize)]
    workers = context.Array("i", min(jobs, len(chunks)))
    broken = False
    with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=context,
                             initializer=_worker_init, initargs=(started, since, workers, settle)) as pool:
        futures: set[Future[list[tuple[int, FileResult]]]] = {pool.submit(_check_chunk, c) for c in chunks}
        try:
            seen, moved = bytes(started), time.monotonic()
            look = moved + _TICK
            while futures:
                done, futures = wait(futures, timeout=_TICK, return_when=FIRST_COMPLETED)
                for future in done:
                    try:
                        for index, result in future.result():
                            results[index] = result
                    except BrokenProcessPool:
                        broken = True
                now = time.monotonic()
                if not futures or now < look:
                    continue
                look = now + _TICK
                if bytes(started) != seen:
                    seen, moved = bytes(started), now
                overdue = [i for i in todo if seen[i] == 1 and since[i] and now - since[i] > limits.FILE_SECONDS]
                if overdue or now - moved > limits.FILE_SECONDS:
                    # No file needs that long: a worker is stopped or stuck (also one that stopped
                    # idle, which holds up the others). The pool is ended, the overdue file
                    # reported, and what the others had begun is retried, each file alone.
                    for index in overdue:
                        results[index] = _timed_out(tasks[index])
                    _end(workers[:])
                    broken = True
                    break
        finally:
            _close(pool, workers)
    left = [i for i in todo if results[i] is None]
    if not broken or not left:
        return [], []
    begun = [i for i in left if started[i]]
    if not begun:  # the pool died before starting anything: no shared run can make progress
        return [], left
    return [i for i in left if not started[i]], begun


def _isolated(batch: Sequence[tuple[int, Task]]) -> list[tuple[int, Optional[FileResult], Optional[int]]]:
    """Check each task in a fresh process of its own, all at once: (index, result or None when
    the process died, its exit code). A process still checking after limits.FILE_SECONDS is ended
    and its file reported as not checked."""
    context = multiprocessing.get_context()
    running = []
    for index, task in batch:
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_isolated_child, args=(task, send), daemon=True)
        process.start()
        send.close()
        running.append((index, task, process, receive))
    deadline = time.monotonic() + limits.FILE_SECONDS
    out: list[tuple[int, Optional[FileResult], Optional[int]]] = []
    for index, task, process, receive in running:
        result: Optional[FileResult]
        try:
            if receive.poll(max(deadline - time.monotonic(), 0.0)):
                result = receive.recv()
            else:
                result = _timed_out(task)
                process.kill()
        except EOFError:
            result = None
        process.join()
        receive.close()
        out.append((index, result, process.exitcode))
    return out


def _isolated_child(task: Task, send: Any) -> None:
    send.send(check_one(task, Session()))
    send.close()


def _died(path: str, exitcode: Optional[int]) -> FileResult:
    if exitcode is not None and exitcode < 0:
        try:
            how = f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            how = f"killed by signal {-exitcode}"
    else:
        how = f"exit status {exitcode}"
    return prefilter.unchecked(path, f"the process checking it died, also when retried alone ({how})")


def check_all(tasks: Sequence[Task], jobs: Optional[int] = None, settle: bool = False,
              session: Optional[Session] = None) -> list[FileResult]:
    """Results for every task, in the tasks' order, whatever the number of jobs. `jobs` None or 0:
    chosen from the files (see `_chosen`). `settle`: this process and its workers are the run's
    own, and their cycle collectors settle every SETTLE_EVERY files (see above); the results are
    the same either way. `session`: the door's, for the files checked in this process (each
    worker makes its own)."""
    session = session or Session()
    if jobs is None or jobs <= 0:
        return _chosen(tasks, settle, session)
    jobs = min(jobs, len(tasks))
    if jobs <= 1:
        return _serially(tasks, settle, session)
    results: list[Optional[FileResult]] = [None] * len(tasks)
    todo = list(range(len(tasks)))
    suspects: list[int] = []
    try:
        while todo:
            todo, begun = _pool_round(tasks, todo, jobs, results, settle)
            suspects.extend(begun)
    except (OSError, ImportError, NotImplementedError):
        # No process support here (e.g. a sandbox without semaphores): the same work, serially.
        return _serially(tasks, settle, session)
    for start in range(0, len(suspects), jobs):
        for index, result, exitcode in _isolated([(i, tasks[i]) for i in suspects[start:start + jobs]]):
            results[index] = result if result is not None else _died(tasks[index][0], exitcode)
    return [result for result in results if result is not None]


# -- choosing the number of processes ---------------------------------------------------------------
# A pool costs its start: each worker imports the analyzer (libcst and the engine: about 0.3 s of CPU)
# and learns again the project modules that its files import. On a quiet 2-core machine a pool
# took 1.35x the time of -j 1 on fixtures/compositions (18 files) and 0.97x on the whole fixtures
# tree (125 files, 0.1 MB that the prefilter passes), 10 interleaved pairs each, and 0.53x on the
# 1,000 generated files (3.2 MB, best of 3). So with no -j the files are read and prefiltered here, and the
# pool starts only once the files waiting for the analysis hold POOL_ANALYSIS_BYTES (about 2 s of
# the analysis on that machine), or when the files hold POOL_READ_BYTES in all (reading and
# prefiltering alone are then worth sharing: the torch sources, 49 MB, 0.77x with a pool).

#: Bytes of files that need the analysis (the prefilter passes them) from which a pool pays.
POOL_ANALYSIS_BYTES = 512 * 1024
#: Bytes of files in all from which a pool pays for reading and prefiltering them alone.
POOL_READ_BYTES = 32 * 1024 * 1024


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, ValueError):
        return 0  # reading it will say why (SKP900)


def _chosen(tasks: Sequence[Task], settle: bool, session: Session) -> list[FileResult]:
    """check_all with the number of processes chosen from the files: every core when they are
    many MB (POOL_READ_BYTES), else this process, which hands the files it has not analysed yet to
    a pool on every core once the files waiting for the analysis reach POOL_ANALYSIS_BYTES."""
    cores = default_jobs()
    if cores <= 1 or len(tasks) <= 1:
        return _serially(tasks, settle, session)
    if sum(_size(path) for path, _ in tasks) >= POOL_READ_BYTES:
        return check_all(tasks, cores, settle, session)
    results: list[Optional[FileResult]] = [None] * len(tasks)
    waiting: list[tuple[int, str]] = []
    waiting_bytes = 0
    rest: list[int] = []
    with _settling(settle):
        for index, (path, config) in enumerate(tasks):
            own = session.configured(config.api_aliases)
            verdict = _judged(path, config, functools.partial(prefilter.triage, path, own))
            if isinstance(verdict, FileResult):
                results[index] = verdict
                _after_file()
                continue
            waiting.append((index, verdict))
            waiting_bytes += len(verdict)
            if waiting_bytes >= POOL_ANALYSIS_BYTES and len(waiting) + len(tasks) - index - 1 > 1:
                rest = [i for i, _ in waiting] + list(range(index + 1, len(tasks)))
                break
        else:
            for index, text in waiting:
                results[index] = _analyse(tasks[index], text, session)
                _after_file()
    if rest:
        waiting.clear()
        # Workers forked from here inherit the analyzer instead of importing it each.
        from skiplint import engine  # noqa: F401
        for index, result in zip(rest, check_all([tasks[i] for i in rest], min(cores, len(rest)), settle, session)):
            results[index] = result
    return [result for result in results if result is not None]
