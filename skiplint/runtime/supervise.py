"""`skiplint verify` in a supervised child process. The parent (`run`) owns the report, the exit
status and the clock: every step has `--timeout` seconds, and an exit, a signal or a hang of the
child becomes the report's one-line reason, naming the step it happened in. No torch is imported
in the parent.

The child (`child`) gets the job as one JSON line on stdin, imports torch and runs the model. It
tells the parent each step's start and end and then the report, as JSON lines on what was its
stdout; everything the model prints goes to stderr, which the parent passes on. When the report is
sent it ends at once, whatever threads the model left running; when the parent goes away (stdin
closes) it ends too."""

from __future__ import annotations

import codecs
import dataclasses
import faulthandler
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from typing import IO, Any, Callable, Optional

from skiplint.runtime.errors import hide_library_notices
from skiplint.runtime.options import Options, split_target
from skiplint.runtime.report import Report, Step

#: Seconds the child may take to start Python and import torch, before its first step.
STARTUP = 120.0
#: Seconds a child that closed its end is given to exit on its own.
_EXIT_GRACE = 10.0
#: Seconds the pipelining step's own limit adds to --timeout, so that the parent's clock, which
#: names the step, is the one that stops a hang.
BACKSTOP = 30.0
_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from skiplint.runtime.supervise import child; child()"
_POSIX = os.name == "posix"


def _pass_on(stream: IO[bytes]) -> None:
    """The child's output, on to stderr as it comes."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
        if not chunk:
            break
        try:
            sys.stderr.write(decoder.decode(chunk))
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    stream.close()


def _read_events(stream: IO[bytes], into: "queue.Queue[Optional[bytes]]") -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def _exited(proc: "subprocess.Popen[bytes]", within: float) -> bool:
    """Waits up to `within` seconds for the child to exit, without reaping it (its process group
    stays valid for the kill that follows)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _POSIX:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        elif proc.poll() is not None:
            return True
        time.sleep(0.01)
    return False


def _stop(proc: "subprocess.Popen[bytes]") -> None:
    """Kills the child and every process it started (its own process group), then reaps it."""
    if _POSIX:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    elif proc.poll() is None:
        proc.kill()
    proc.wait()


def run(options: Options, progress: Optional[Callable[[Step], None]] = None, *, verbose: bool = False) -> Report:
    """The report of a run in a supervised child; the child's output goes to stderr."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", _BOOT, root], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            start_new_session=_POSIX)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    events: queue.Queue[Optional[bytes]] = queue.Queue()
    readers = [threading.Thread(target=_read_events, args=(proc.stdout, events), daemon=True),
               threading.Thread(target=_pass_on, args=(proc.stderr,), daemon=True)]
    for reader in readers:
        reader.start()
    steps: list[Step] = []

    def record(step: Step) -> None:
        steps.append(step)
        if progress is not None:
            progress(step)

    current: Optional[str] = None
    started, limit = time.monotonic(), max(options.timeout, STARTUP)
    payload: Optional[dict[str, Any]] = None
    reason: Optional[str] = None
    try:
        # The child's sys.path: the working directory first (as `python -m` puts it), then this one's.
        cwd = os.getcwd()
        path = [cwd] + [p for p in sys.path if p and os.path.abspath(p) != cwd]
        job = {"options": options.to_dict(), "sys_path": path, "verbose": verbose}
        try:
            proc.stdin.write(json.dumps(job).encode("utf-8") + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:  # it died at once: its exit status says why
            pass
        while True:
            try:
                line = events.get(timeout=max(started + limit - time.monotonic(), 0.0))
            except queue.Empty:
                reason = (f"no answer in {options.timeout:g} s during {current}" if current is not None
                          else f"no answer in {limit:g} s while starting Python and importing torch")
                break
            if line is None:
                break
            message = json.loads(line)
            if "begin" in message:
                current, started, limit = message["begin"], time.monotonic(), options.timeout
            elif "step" in message:
                record(Step(**message["step"]))
            elif "report" in message:
                payload = message["report"]
                break
        exited = payload is not None or reason is not None or _exited(proc, _EXIT_GRACE)
    finally:
        if proc.returncode is None:
            _stop(proc)
        try:
            proc.stdin.close()
        except OSError:
            pass
        for reader in readers:
            reader.join(timeout=2.0)
    if payload is not None:
        report = Report.from_dict(payload["report"])
        report.traceback = payload.get("traceback", "")
        return report
    if reason is None:
        status = proc.returncode
        during = f"during {current}" if current is not None else "before its first step"
        if not exited:
            reason = f"the verify process stopped answering but did not exit {during}"
        elif status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            reason = f"killed by {name} {during}"
        elif current is None:
            reason = f"the verify process exited with status {status} {during}"
        else:
            reason = f"the model's code ended the process with exit status {status} {during}"
    if current is not None and (not steps or steps[-1].name != current):
        record(Step(current, "error", round(time.monotonic() - started, 4), reason))
    return Report(options.target, steps=steps, reason=reason)


# -- the child ----------------------------------------------------------------------------------

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


def _child_report(options: Options, events: IO[str]) -> Report:
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


def child() -> None:
    """The supervised process (see the module's docstring): the job on stdin, events on stdout."""
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
    report = _child_report(options, events)
    cause = report.cause
    text = "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)) if cause is not None else ""
    payload = {"report": report.to_dict(), "traceback": text}
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _send(events, "report", payload)
    os._exit(0)
