"""The supervised side of `skiplint verify`: the process that imports torch and runs the model.

Started by skiplint.runtime.supervise with the job as one JSON line on stdin. It tells the parent
each step's start and end and then the report, as JSON lines on what was its stdout; everything
the model prints goes to stderr, which the parent passes on. When the report is sent it ends at
once, whatever threads the model left running. When the parent goes away (stdin closes) it ends too.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import sys
import threading
import traceback
from typing import IO, Any

from skiplint.runtime.errors import hide_library_notices
from skiplint.runtime.options import Options, split_target
from skiplint.runtime.report import Report

#: Seconds the pipelining step's own limit adds to --timeout, so that the parent's clock, which
#: names the step, is the one that stops a hang.
BACKSTOP = 30.0


def _watch_parent(job: IO[bytes]) -> None:
    while job.read(4096):
        pass
    os._exit(3)


def _send(events: IO[str], kind: str, value: Any) -> None:
    try:
        events.write(json.dumps({kind: value}) + "\n")
        events.flush()
    except (OSError, ValueError):  # the parent is gone: nobody waits for this run
        os._exit(3)


def _traceback(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


def _run(options: Options, events: IO[str]) -> Report:
    try:
        from skiplint.runtime import run
    except ImportError as error:
        return Report(options.target, reason=f"torch is not installed ({error}); install it pinned, then "
                                             "the extra: pip install torch==2.13.0 && "
                                             "pip install -c constraints.txt 'skiplint[runtime]'")
    runner = run.Runner(dataclasses.replace(options, timeout=options.timeout + BACKSTOP),
                        progress=lambda step: _send(events, "step", dataclasses.asdict(step)),
                        begin=lambda name: _send(events, "begin", name))
    return runner.run()


def main() -> None:
    events = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    job_in = os.fdopen(os.dup(0), "rb", buffering=0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    job = json.loads(job_in.readline())
    threading.Thread(target=_watch_parent, args=(job_in,), daemon=True).start()
    sys.path[:] = job["sys_path"]
    options = Options.from_dict(job["options"])
    sys.argv = [split_target(options.target)[0]]
    if job.get("verbose"):
        faulthandler.enable()
    hide_library_notices()
    report = _run(options, events)
    cause = report.cause
    report.cause = None
    payload = {"report": report.to_dict(), "traceback": _traceback(cause) if cause is not None else ""}
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _send(events, "report", payload)
    os._exit(0)


if __name__ == "__main__":
    main()
