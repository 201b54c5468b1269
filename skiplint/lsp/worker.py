"""The server's analysis thread: one daemon thread that runs the jobs that need the engine
(analyses, quick fixes, layouts, lenses) one at a time; results come back to the event loop as
futures. (A daemon, so that a job still running never holds the process after `exit`.)"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: The analysis thread's stack, in bytes: a main thread's usual 8 MB.
WORKER_STACK = 8 * 1024 * 1024


class Worker:
    """One thread that runs jobs in the order they are submitted."""

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any]]]" = \
            queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="skiplint-analysis", daemon=True)
        previous = threading.stack_size()
        try:  # at least the room a main thread has (some systems give threads far less)
            threading.stack_size(WORKER_STACK)
        except (ValueError, RuntimeError):
            pass
        try:
            self._thread.start()
        finally:
            threading.stack_size(previous)

    #: Jobs submitted and not yet finished, as the event loop's thread sees it (a job whose
    #: future was cancelled still runs to its end).
    pending = 0

    def submit(self, job: Callable[[], T]) -> "asyncio.Future[T]":
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.pending += 1
        self._jobs.put((loop, future, job))
        return future

    def _finished(self) -> None:
        self.pending -= 1

    def _run(self) -> None:
        while True:
            loop, future, job = self._jobs.get()
            try:
                result = job()
            except BaseException as error:  # handed to whoever awaits the job
                loop.call_soon_threadsafe(_fail, future, error, self._finished)
            else:
                loop.call_soon_threadsafe(_succeed, future, result, self._finished)


def _succeed(future: "asyncio.Future[Any]", result: Any, finished: Callable[[], None]) -> None:
    finished()
    if not future.cancelled():
        future.set_result(result)


def _fail(future: "asyncio.Future[Any]", error: BaseException, finished: Callable[[], None]) -> None:
    finished()
    if not future.cancelled():
        future.set_exception(error)
