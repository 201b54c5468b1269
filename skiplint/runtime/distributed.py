"""`torchrun ... -m skiplint verify TARGET`: one verify spread over the ranks torchrun started.

Each rank joins the launcher's process group (gloo on CPU, nccl on CUDA with a gloo group beside it
for objects) and runs one pipeline stage on cuda:LOCAL_RANK, or the CPU without CUDA. Rank 0 builds
the model and the sample, runs the steps of the single-machine `pipelining` backend (static pass,
plain reference, join), broadcasts the parameters, the sample and the balance, gathers every rank's
gradients, and alone prints the report.

The rendezvous store is the notice board that keeps the run bounded: each rank posts its host, the
step it is in (busy with its own work, or waiting on a peer) and any error. In every rank the main
thread only watches the board while a worker thread does the work, so a rank that raises, runs out
of memory or never answers ends the run on every rank within `--timeout`, and rank 0's report names
the rank, its host and the step. The board and its watch are skiplint.runtime.board.
"""

from __future__ import annotations

import argparse
import datetime
import os
import socket
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Optional

from skiplint.runtime import messages
from skiplint.runtime.board import (ACK_WAIT, ENDED, GRACE, LAUNCHER_ENV, MARK_WAIT, POLL, PREFIX, REJECTED,
                                    STEP_PLAN, Board, Fault, Watch, ended, on_sigterm, one_gpu_per_rank, silent)
from skiplint.runtime.errors import CannotRun, hide_library_notices, one_line
from skiplint.runtime.report import EXIT_NOT_RUN, STEP_BUILD, STEP_IMPORT


def launched_by_torchrun(environ: Optional[dict[str, str]] = None) -> bool:
    """Whether the launcher's environment is present: verify is then one rank of a distributed run."""
    env = os.environ if environ is None else environ
    return all(env.get(name) for name in LAUNCHER_ENV)


@dataclass
class Context:
    """One rank's view of the run."""

    args: argparse.Namespace
    rank: int
    world: int
    board: Board
    device: Any
    #: The gloo group objects travel on (None: the default group is gloo).
    group: Any
    stream: IO[str]
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Set once rank 0's report is settled; later step lines from the worker are dropped.
    closed: bool = False

    @property
    def text(self) -> bool:
        return bool(self.args.format == "text")


def _usage(args: argparse.Namespace, world: int) -> Optional[str]:
    """Options that cannot fit a run of `world` ranks, checked on every rank before anything runs."""
    if args.backend not in ("auto", "pipelining"):
        return (f"--backend {args.backend} does not run under torchrun: each rank is one stage of the "
                "pipelining backend (leave --backend out)")
    if args.devices:
        return "--devices does not apply under torchrun: each rank uses cuda:LOCAL_RANK, or the CPU without CUDA"
    if args.balance is not None and len(args.balance) != world:
        return (f"--balance has {len(args.balance)} entries but torchrun started {world} ranks: give one entry "
                "per rank")
    if args.balance is not None and any(size < 1 for size in args.balance):
        return "--balance entries must be at least 1: every rank holds one stage"
    if args.chunks < 1:
        return f"--chunks must be at least 1, not {args.chunks}"
    if not args.timeout > 0:
        return f"--timeout must be more than 0 seconds, not {args.timeout:g}"
    return None


def main(args: argparse.Namespace) -> int:
    """One rank of `torchrun ... -m skiplint verify`; every rank returns (and exits with) rank 0's status."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    problem = _usage(args, world)
    try:
        import torch
        import torch.distributed as dist
        from torch.distributed.rendezvous import rendezvous
    except ImportError as error:
        if rank == 0:
            print(f"skiplint verify: torch is not installed ({error}); install it with: "
                  "pip install 'skiplint[runtime]'", file=sys.stderr)
        return EXIT_NOT_RUN
    # The target sees its own file name as argv, not verify's options.
    sys.argv = [args.target.rpartition(":")[0]]
    # The report owns stdout: whatever the model or the libraries print goes to stderr.
    sys.stdout.flush()
    stream = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    hide_library_notices()
    local_rank = int(os.environ["LOCAL_RANK"])
    timeout = datetime.timedelta(seconds=max(args.timeout, 60.0))
    # Waits on peers outlast the board's deadline, so that a rank that stalls is named before its
    # peers' collectives time out.
    pg_timeout = datetime.timedelta(seconds=args.timeout * 2 + 30)
    try:
        store, rank, world = next(rendezvous("env://", timeout=timeout))
        if problem is not None:
            os._exit(_usage_error(Board(store, rank, world), problem, max(args.timeout, ACK_WAIT)))
        cuda = one_gpu_per_rank(torch, store, rank, world, local_rank)
        device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
        if cuda:
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if cuda else "gloo", store=store, rank=rank, world_size=world,
                                timeout=pg_timeout)
        group = dist.new_group(backend="gloo", timeout=pg_timeout) if cuda else None
    except Exception as error:
        print(f"skiplint verify: rank {rank} could not join the process group: {one_line(error)}",
              file=sys.stderr, flush=True)
        return EXIT_NOT_RUN
    board = Board(store, rank, world)
    board.set(f"host/{rank}", socket.gethostname())
    board.set(f"device/{rank}", str(device))
    board.note(STEP_IMPORT, True)
    ctx = Context(args, rank, world, board, device, group, stream)
    if rank == 0:
        status = _lead(ctx)
    else:
        status = _follow(ctx)
    stream.flush()
    sys.stderr.flush()
    # A worker may still be blocked in a collective or in the model: nothing of it is worth waiting for.
    os._exit(status)


def _usage_error(board: Board, problem: str, wait: float) -> int:
    """Options no run can have: rank 0 says so once; the others end when it has (torchrun stops
    every rank as soon as one exits, which could cut rank 0 short)."""
    if board.rank == 0:
        print(f"skiplint verify: {problem}", file=sys.stderr, flush=True)
        board.set("status", str(EXIT_NOT_RUN))
        return EXIT_NOT_RUN
    deadline = time.monotonic() + wait
    while board.get("status") is None and time.monotonic() < deadline:
        time.sleep(POLL)
    return EXIT_NOT_RUN


# -- the work -------------------------------------------------------------------------------------

class _Worker(threading.Thread):
    """Runs `work` and keeps what it returned or raised."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True, name="skiplint-verify")
        self.work = work
        self.result: Any = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        try:
            self.result = self.work()
        except BaseException as error:  # the supervising thread reports it
            self.error = error


def _stage(ctx: Context, model: Any, plan: dict[str, Any]) -> list[Any]:
    """This rank's stage of the plan rank 0 broadcast (parameters, sample, loss weights, balance),
    its result gathered on rank 0: every rank's result there, [] elsewhere."""
    import torch.distributed as dist

    from skiplint.runtime.pipelining import run_stage

    model.load_state_dict(plan["state"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grads, output = run_stage(model, plan["sample"], plan["weights"][0], plan["balance"], plan["chunks"],
                                  ctx.rank, ctx.world, ctx.device, ctx.board.note)
    ctx.board.note("sending results to rank 0", False)
    out: Optional[list[Any]] = [None] * ctx.world if ctx.rank == 0 else None
    dist.gather_object({"grads": grads, "output": output}, out, dst=0, group=ctx.group)
    return out or []


def _follower_work(ctx: Context) -> None:
    import torch.distributed as dist

    from skiplint.runtime import target

    args, board = ctx.args, ctx.board
    try:
        # Only the model's structure is needed here: rank 0 sends its parameters and sample.
        loaded = target.load(args.target)
        board.note(STEP_BUILD, True)
        model = target.build(args.target, None, args.input_shape or (1,), loaded=loaded).model
        board.set(f"built/{ctx.rank}", "1")
        board.note(STEP_PLAN, False)
        while board.get("plan") is None:
            time.sleep(POLL)
        if board.get("plan") == "go":
            box: list[Any] = [None]
            dist.broadcast_object_list(box, src=0, group=ctx.group)
            _stage(ctx, model, box[0])
            board.note("waiting for the report", False)
    except BaseException as error:
        cause = error.__cause__ if type(error) is CannotRun else None
        if cause is not None and messages.is_verify_error(cause):
            # The target's own pipe rejected the model: rank 0 meets the same and joins it.
            board.set(f"built/{ctx.rank}", REJECTED)
            board.note(STEP_PLAN, False)
            return
        board.post_error(error)
        raise


def _follow(ctx: Context) -> int:
    """A rank other than 0: its stage, then rank 0's status."""
    board = ctx.board
    stop = on_sigterm(board)
    worker = _Worker(lambda: _follower_work(ctx))
    worker.start()
    # Rank 0 names a rank that stops answering; this rank gives up alone only when rank 0 itself is stuck.
    watch = Watch(board, ctx.world, ctx.args.timeout + GRACE)
    stopped_at: Optional[float] = None
    while True:
        try:
            status = board.get("status")
        except Exception:  # the store went away with rank 0's node
            return EXIT_NOT_RUN
        if status is not None:
            board.store.add(PREFIX + "acks", 1)
            return int(status)
        fault = watch.look(only=0)
        if fault is not None and fault.kind == "hang":
            print(f"skiplint verify: rank {ctx.rank}: {fault.line()}; giving up", file=sys.stderr, flush=True)
            return EXIT_NOT_RUN
        if stop.is_set():
            stopped_at = stopped_at or time.monotonic()
            if board.get("stopped/0") is None and time.monotonic() - stopped_at > MARK_WAIT:
                return _lead_ended(ctx)
        time.sleep(POLL)


def _lead_ended(ctx: Context) -> int:
    """torchrun stopped every rank and rank 0 did not say it was stopped: rank 0 is the process that
    ended, and cannot report. One rank says so for it (the report's one line, and with --format
    json the JSON document), and every rank exits with its status."""
    from skiplint.runtime.report import Report

    board = ctx.board
    if board.store.add(PREFIX + "reporter", 1) == 1:
        state = board.state(0)
        fault = Fault(0, board.host(0), state[2] if state is not None else STEP_IMPORT, "lost", ENDED)
        _emit(ctx, Report(ctx.args.target, reason=fault.line()))
        board.set("status", str(EXIT_NOT_RUN))
    return EXIT_NOT_RUN


# -- rank 0 ---------------------------------------------------------------------------------------

def _lead(ctx: Context) -> int:
    """Rank 0: the steps of the single-machine run with the stage step spread over the ranks."""
    from skiplint.runtime.report import Report, Step, format_step

    args = ctx.args
    shared: dict[str, Any] = {}

    def progress(step: Step) -> None:
        if ctx.text:
            ctx.stream.write(format_step(step) + "\n")
            ctx.stream.flush()

    if ctx.text:
        ctx.stream.write(f"skiplint verify {args.target}\n")
        ctx.stream.flush()
    worker = _Worker(lambda: _lead_work(ctx, progress, shared))
    watch = Watch(ctx.board, ctx.world, args.timeout)
    stop = on_sigterm(ctx.board)
    worker.start()
    report: Optional[Report] = None
    while report is None:
        if not worker.is_alive() and worker.error is None and worker.result is not None:
            report = worker.result
            break
        if not worker.is_alive() and worker.error is not None and not isinstance(worker.error, _Posted):
            report = _unexpected(ctx, shared, worker.error)
            break
        fault = watch.look()
        if stop.is_set() and (fault is None or fault.kind == "lost"):
            # The launcher stopped the run because a process ended: the one that did not hear the
            # stop, else the one still busy on the board.
            fault = (ended(ctx.board, ctx.world) or silent(ctx.board, ctx.world, ENDED)
                     or Fault(0, ctx.board.host(0), "the run", "lost", "torchrun stopped every rank"))
        if fault is not None:
            with ctx.lock:
                ctx.closed = True
            report = _fault_report(ctx, shared, fault, progress)
            break
        time.sleep(POLL)
    with ctx.lock:
        ctx.closed = True
    status = _emit(ctx, report)
    deadline = time.monotonic() + ACK_WAIT
    try:
        ctx.board.set("status", str(status))
        while ctx.world > 1 and time.monotonic() < deadline:
            if ctx.board.store.add(PREFIX + "acks", 0) >= ctx.world - 1:
                break
            time.sleep(POLL)
    except Exception:  # the store is gone with the launcher: the others are ending anyway
        pass
    return status


class _Posted(Exception):
    """The rank's error is on the board already: the watching thread reports it from there."""


def _lead_work(ctx: Context, progress: Callable[[Any], None], shared: dict[str, Any]) -> Any:
    import torch

    from skiplint.runtime.building import even_balance
    from skiplint.runtime.options import Options
    from skiplint.runtime.run import Runner

    args = ctx.args
    board = ctx.board
    options = Options(target=args.target, sample=args.sample,
                      input_shape=tuple(args.input_shape) if args.input_shape is not None else None,
                      backend="pipelining", balance=tuple(args.balance) if args.balance is not None else None,
                      chunks=args.chunks, devices=None, timeout=args.timeout)

    def begin(step: str) -> None:
        # Every step starts busy on the board: the watching thread bounds it by --timeout.
        board.note(step, True)

    runner = Runner(options, progress, begin)
    add = runner.steps.add

    def add_unless_closed(*step: Any) -> None:
        with ctx.lock:
            if ctx.closed and threading.current_thread() is not threading.main_thread():
                return
        add(*step)

    runner.steps.add = add_unless_closed  # type: ignore[method-assign, assignment]
    shared["runner"] = runner
    report = runner.report
    name = f"pipelining ScheduleGPipe ({ctx.world} ranks)"
    shared["stage step"] = name
    try:
        runner.load()
        if runner.rejected is None:
            runner.build()
        if runner.rejected is not None:  # the target's own pipe rejected the model: joined, no stage runs
            runner.static()
            runner.finish()
            return report
        layers = len(runner.model)
        if ctx.world > layers:
            raise CannotRun(f"torchrun started {ctx.world} ranks but the model has {layers} layers: "
                            f"one stage per rank needs at most {layers} ranks")
        if args.balance is None:
            runner.balance = even_balance(layers, ctx.world)
        runner.devices = [torch.device(board.get(f"device/{r}") or "cpu") for r in range(ctx.world)]
        runner.devices[0] = ctx.device
        report.balance = tuple(runner.balance)
        report.devices = tuple(str(d) for d in runner.devices)
        report.checkpoints = ("n/a",)
        runner.static()
        runner.check_balance()
        runner.verify()
        runner.split()
        reference = runner.plain()
        if reference is None or not runner.verified or not runner.balanced:
            runner.steps.add(name, "skipped", 0.0, "an earlier step failed")
        else:
            board.note("waiting for every rank to build the model", False)
            while not all(board.get(f"built/{r}") for r in range(1, ctx.world)):
                time.sleep(POLL)
            for rank in range(1, ctx.world):
                if board.get(f"built/{rank}") == REJECTED:
                    raise CannotRun(f"rank {rank} ({board.host(rank)}): verify_skippables rejected the model "
                                    "while the target imported or was built there, and not on rank 0")
            _lead_stage(ctx, runner, reference, name, shared)
        runner.finish()
    except CannotRun as error:
        report.reason = str(error)
        report.cause = error.__cause__ or error
    finally:  # any other error is the watching thread's to report (`_unexpected`)
        if board.get("plan") is None:  # the ranks waiting for the plan: no stage runs
            board.set("plan", "stop")
        board.note("report", False)
    return report


def _lead_stage(ctx: Context, runner: Any, reference: Any, name: str, shared: dict[str, Any]) -> None:
    import copy

    import torch.distributed as dist

    from skiplint.runtime import pipelining

    plan = {"state": runner.model.state_dict(), "sample": runner.sample, "weights": runner.weights,
            "balance": list(runner.balance), "chunks": runner.options.chunks}
    shared["stage started"] = time.perf_counter()
    with runner.steps.timed(name) as out:
        # What the backend cannot run is said before any rank starts its stage (CannotRun: exit 2).
        pipelining.check_carried(runner.model, tuple(runner.balance), runner.sample, runner.options.chunks)
        try:
            ctx.board.note("sending the model to every rank", False)
            ctx.board.set("plan", "go")
            dist.broadcast_object_list([plan], src=0, group=ctx.group)
            results = _stage(ctx, copy.deepcopy(runner.model), plan)
        except BaseException as error:
            ctx.board.post_error(error)
            raise _Posted() from error
        pipelining.compare(runner, reference, results, out)


def _fault_report(ctx: Context, shared: dict[str, Any], fault: Fault, progress: Callable[[Any], None]) -> Any:
    """Rank 0's report when a rank failed: the stage step fails with the fault's line; a fault that
    means the run could not happen ends it (exit 2), one of the model's own goes through the join."""
    from skiplint.runtime.report import Report, Step

    runner = shared.get("runner")
    if runner is None:
        report = Report(ctx.args.target)
        report.reason = fault.line()
        return report
    report = runner.report
    name = shared.get("stage step", "pipelining")
    started = shared.get("stage started")
    seconds = round(time.perf_counter() - started, 4) if started is not None else 0.0
    step = Step(name, "error" if fault.stops_the_run else "failed", seconds, fault.line())
    report.steps.append(step)
    progress(step)
    if fault.stops_the_run:
        report.reason = fault.line()
        return report
    try:
        runner.finish()
    except CannotRun as error:
        report.reason = str(error)
    return report


def _unexpected(ctx: Context, shared: dict[str, Any], error: BaseException) -> Any:
    from skiplint.runtime.report import Report

    runner = shared.get("runner")
    report = runner.report if runner is not None else Report(ctx.args.target)
    step = report.steps[-1].name if report.steps else STEP_IMPORT
    if isinstance(error, (SystemExit, KeyboardInterrupt)):
        report.reason = f"rank 0 ({ctx.board.host(0)}) stopped with {type(error).__name__} after step '{step}'"
    else:
        report.reason = f"unexpected error after step '{step}': {one_line(error)}"
    report.cause = error
    return report


def _emit(ctx: Context, report: Any) -> int:
    """The report on rank 0's stdout (text or one JSON document); the reason line on stderr."""
    cause = report.cause
    if report.reason is not None and ctx.args.verbose and cause is not None:
        traceback.print_exception(type(cause), cause, cause.__traceback__)
    if report.reason is None or not ctx.text:
        ctx.stream.write((report.summary_text() if ctx.text else report.to_json()) + "\n")
    ctx.stream.flush()
    if report.reason is not None:
        print(f"skiplint verify: {report.reason}", file=sys.stderr, flush=True)
    return int(report.exit_code)
