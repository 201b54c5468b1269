"""The notice board of a distributed verify (skiplint.runtime.distributed): the rendezvous store
that every rank reads and writes under one prefix, what each rank posts there (its host, the step
it is in, busy or waiting on a peer, its error), and how a watching thread reads the first fault
off it: an error, a rank that stays busy past the timeout, a lost connection, or the rank that
ended when torchrun stopped every rank.
"""

from __future__ import annotations

import json
import signal
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Optional

from skiplint.runtime.errors import one_line
from skiplint.runtime.report import STEP_BUILD, STEP_IMPORT

#: The variables torchrun (or any launcher using env:// rendezvous) sets for every rank.
LAUNCHER_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR")
#: Seconds between two looks at the board.
POLL = 0.05
#: Seconds a rank other than 0 waits past the deadline for rank 0's status before it gives up alone.
GRACE = 15.0
#: Seconds rank 0 waits for the other ranks to read the status before it exits.
ACK_WAIT = 5.0
#: Seconds a rank waits, once torchrun has stopped every rank (SIGTERM), for the others to say they
#: were stopped too: a rank that does not say so is the process that ended, the culprit. Also how
#: long a lost connection waits for that stop, or for the peer's own error, before it is reported.
MARK_WAIT = 5.0
#: Why torchrun stopped every rank when the culprit left no error of its own.
ENDED = "the process ended without a result and torchrun stopped every rank"
PREFIX = "skiplint/verify/"

STEP_PLAN = "waiting for rank 0"
#: A rank's mark, in place of "built", when the target's own pipe rejected the model there.
REJECTED = "rejected"


@dataclass(frozen=True)
class Fault:
    """What ended one rank's part of the run early."""

    rank: int
    host: str
    step: str
    #: raised (an exception in the rank's own work), oom, hang, lost (a wait on a peer that failed).
    kind: str
    error: str = ""
    seconds: float = 0.0

    def line(self) -> str:
        who = f"rank {self.rank} ({self.host})"
        if self.kind == "hang":
            return f"{who} did not answer within {self.seconds:g}s during {self.step}"
        if self.kind == "oom":
            return f"{who} ran out of memory during {self.step}: {self.error}"
        if self.kind == "lost":
            return f"{who} stopped answering during {self.step}: {self.error}"
        kind, _, message = self.error.partition(": ")
        return f"{who} raised {kind} during {self.step}" + (f": {message}" if message else "")

    @property
    def stops_the_run(self) -> bool:
        """A run that could not happen (exit 2) rather than a model that fails (exit 1)."""
        return self.kind != "raised" or self.step in (STEP_IMPORT, STEP_BUILD, STEP_PLAN)


def one_gpu_per_rank(torch: Any, store: Any, rank: int, world: int, local_rank: int) -> bool:
    """Whether every rank has a GPU of its own, so that the run can take nccl. nccl refuses two
    ranks on one GPU (more ranks on a machine than it has GPUs, two launchers on one machine) and
    gloo carries only CPU tensors, so otherwise every rank runs on the CPU over gloo. Each rank
    publishes the GPU it would take (its LOCAL_RANK-th, by UUID) or that it has none, then reads
    every rank's: all ranks come to the same answer."""
    seat = "cpu"
    if torch.cuda.is_available() and local_rank < torch.cuda.device_count():
        seat = str(getattr(torch.cuda.get_device_properties(local_rank), "uuid", "") or
                   f"{socket.gethostname()}/{local_rank}")
    store.set(f"{PREFIX}seat/{rank}", seat)
    seats = [store.get(f"{PREFIX}seat/{peer}").decode() for peer in range(world)]
    return "cpu" not in seats and len(set(seats)) == world


class Board:
    """The rendezvous store, read and written by every rank under one prefix."""

    def __init__(self, store: Any, rank: int, world: int) -> None:
        self.store = store
        self.rank = rank
        self.world = world
        self._seq = 0
        self._lock = threading.Lock()

    def set(self, key: str, value: str) -> None:
        self.store.set(PREFIX + key, value)

    def get(self, key: str) -> Optional[str]:
        if not self.store.check([PREFIX + key]):
            return None
        value = self.store.get(PREFIX + key)
        return value.decode() if isinstance(value, bytes) else str(value)

    def note(self, step: str, busy: bool) -> None:
        """This rank is now in `step`, doing its own work (busy) or waiting on a peer."""
        with self._lock:
            self._seq += 1
            self.set(f"state/{self.rank}", json.dumps([self._seq, busy, step]))

    def state(self, rank: int) -> Optional[tuple[int, bool, str]]:
        value = self.get(f"state/{rank}")
        if value is None:
            return None
        seq, busy, step = json.loads(value)
        return int(seq), bool(busy), str(step)

    def post_error(self, error: BaseException) -> None:
        state = self.state(self.rank) or (0, True, STEP_IMPORT)
        _, busy, step = state
        import torch

        from skiplint.runtime import pipelining

        error = pipelining.root_cause(error)  # the schedule wraps the stage's own error
        oom = isinstance(error, (MemoryError, torch.cuda.OutOfMemoryError))
        kind = "oom" if oom else pipelining.RAISED if busy else pipelining.LOST
        self.set(f"error/{self.rank}", json.dumps({"kind": kind, "step": step, "error": one_line(error)}))

    def error(self, rank: int) -> Optional[dict[str, str]]:
        value = self.get(f"error/{rank}")
        return json.loads(value) if value is not None else None

    def host(self, rank: int) -> str:
        return self.get(f"host/{rank}") or "unknown host"


class Watch:
    """Reads every rank's state and errors off the board: the first fault, or None."""

    def __init__(self, board: Board, world: int, timeout: float) -> None:
        self.board = board
        self.world = world
        self.timeout = timeout
        #: rank -> (state, monotonic time it was first seen)
        self.seen: dict[int, tuple[Any, float]] = {}
        #: When a lost connection was first seen.
        self.lost_since: Optional[float] = None

    def look(self, only: Optional[int] = None) -> Optional[Fault]:
        """The first fault; a lost connection only once it has waited MARK_WAIT for the peer's own
        error or for torchrun's stop (after which the rank that ended is known)."""
        ranks = [only] if only is not None else list(range(self.world))
        now = time.monotonic()
        lost: Optional[Fault] = None
        for rank in ranks:
            error = self.board.error(rank)
            if error is not None:
                fault = Fault(rank, self.board.host(rank), error["step"], error["kind"], error["error"])
                if fault.kind != "lost":
                    return fault
                lost = lost or silent(self.board, self.world, f"rank {rank} lost its connection to it") or fault
        hang = self._hang(ranks, now)
        if hang is not None or lost is None:
            return hang
        self.lost_since = self.lost_since or now
        return lost if now - self.lost_since > MARK_WAIT else None

    def _hang(self, ranks: list[int], now: float) -> Optional[Fault]:
        for rank in ranks:
            state = self.board.state(rank)
            previous = self.seen.get(rank)
            if previous is None or previous[0] != state:
                self.seen[rank] = (state, now)
                continue
            if state is not None and state[1] and now - previous[1] > self.timeout:
                return Fault(rank, self.board.host(rank), state[2], "hang", seconds=self.timeout)
        return None


def on_sigterm(board: Board) -> threading.Event:
    """torchrun stops every rank with SIGTERM when one of them exits early: each rank that gets it
    says so on the board (the one that ended cannot), and rank 0 still reports."""
    stop = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        if not stop.is_set():
            stop.set()
            try:
                board.set(f"stopped/{board.rank}", "1")
            except Exception:  # the store is gone with the launcher: nobody is left to tell
                pass

    signal.signal(signal.SIGTERM, handler)
    return stop


def silent(board: Board, world: int, why: str) -> Optional[Fault]:
    """The rank that went silent: the first one, other than this one (which is running), that the
    board still shows busy with its own work and without an error of its own (a process that
    died leaves its last state behind)."""
    for rank in range(world):
        if rank == board.rank:
            continue
        state = board.state(rank)
        if state is not None and state[1] and board.error(rank) is None:
            return Fault(rank, board.host(rank), state[2], "lost", why)
    return None


def ended(board: Board, world: int) -> Optional[Fault]:
    """After torchrun's stop: the first rank that did not say it was stopped, nor posted an error of
    its own, within MARK_WAIT: the process that ended, named with the step the board last shows."""
    deadline = time.monotonic() + MARK_WAIT
    while True:
        quiet = [rank for rank in range(world) if rank != board.rank
                 and board.get(f"stopped/{rank}") is None and board.error(rank) is None]
        if not quiet or time.monotonic() > deadline:
            break
        time.sleep(POLL)
    if not quiet:
        return None
    state = board.state(quiet[0])
    return Fault(quiet[0], board.host(quiet[0]), state[2] if state is not None else STEP_IMPORT, "lost", ENDED)
