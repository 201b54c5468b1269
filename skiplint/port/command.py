"""`skiplint port FILE:FACTORY [--balance N,N,...] [--chunks N] [--schedule KIND] [-o SCRIPT] [--check]`.

Exit status: 0 the script was written (and, with --check, the port equals GPipe), 1 --check found
a difference (the tensor and how far), 2 the model cannot be ported as asked (one line: why).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from skiplint.port import SCHEDULES, CannotPort
from skiplint.runtime.options import is_file_target, split_target

EXIT_EQUAL, EXIT_DIFFERENT, EXIT_CANNOT = 0, 1, 2
#: Stages when neither --balance nor the factory's pipe gives a balance: two processes.
DEFAULT_STAGES = {"gpipe": 2, "1f1b": 2, "interleaved": 4}
#: Seconds the --check run under torchrun may take before it is stopped.
DEFAULT_TIMEOUT = 600.0


@dataclass(frozen=True)
class Settings:
    """How the model is ported: what the script and --check use."""

    target: str
    balance: tuple[int, ...]
    chunks: int
    schedule: str
    ranks: int
    #: The pipe library the reference runs on (torchgpipe, fairscale).
    library: str
    #: The factory's pipe's checkpoint mode, or None when it returned no pipe.
    checkpoint: Optional[str]
    #: Where each setting came from, for the script's header ("--balance", "the pipe", "even split").
    origin: tuple[tuple[str, str], ...] = ()


def _library(built: Any) -> str:
    from skiplint.runtime.backends import libraries_of

    if built.library in ("torchgpipe", "fairscale"):
        return str(built.library)
    found = libraries_of(type(layer) for layer in built.model.children())
    if len(found) > 1:
        raise CannotPort("the model mixes skippable layers of torchgpipe and fairscale; no GPipe runs it "
                         "to compare with")
    return next(iter(found)) if found else "torchgpipe"


def _verified(model: Any, library: str) -> None:
    """CannotPort when the library's verify_skippables rejects the model: its stashes and pops do
    not pair, so no pipe runs it (the port included)."""
    from skiplint.runtime import backends

    try:
        backends.load(library).verify_skippables(model)
    except TypeError as error:
        lines = [line[2:] for line in str(error).splitlines() if line.startswith("* ")]
        more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
        raise CannotPort(f"{library}'s verify_skippables rejects the model: {lines[0] if lines else error}{more}; "
                         "`skiplint check` says where") from None


def settle(target: str, balance: Optional[tuple[int, ...]], chunks: Optional[int], schedule: str,
           built: Any) -> Settings:
    """The settings of the port: given options first, then the factory's pipe's, then defaults;
    CannotPort when the model's structure or the schedule rules the port out (before any run)."""
    from skiplint.runtime import adapter
    from skiplint.runtime.building import even_balance
    from skiplint.runtime.errors import one_line

    layers = len(built.model)
    piped = f"the factory's {built.library} pipe"
    stages = min(DEFAULT_STAGES[schedule], layers)
    origin = (("balance", "--balance" if balance is not None else piped if built.balance is not None
               else f"an even split into {stages} stages"),
              ("chunks", "--chunks" if chunks is not None else piped if built.chunks is not None
               else "one micro-batch per stage, at least 2"))
    if balance is None:
        balance = tuple(built.balance) if built.balance is not None else even_balance(layers, stages)
    if chunks is None:
        chunks = int(built.chunks) if built.chunks is not None else max(2, len(balance))
    if chunks < 1:
        raise CannotPort(f"--chunks must be at least 1, not {chunks}")
    library = _library(built)
    _verified(built.model, library)
    try:
        adapter.plan(built.model, balance)
        if built.sample is not None:
            adapter.check_carried(built.model, balance, built.sample, chunks)
    except adapter.NoPlan as error:
        raise CannotPort(str(error)) from None
    except adapter.NotCarried as error:
        raise CannotPort(f"{error}: torch.distributed.pipelining carries only tensors between stages; stash a "
                         "tensor, or keep the stash and its pop in one stage (SKP501)") from None
    except Exception as error:
        raise CannotPort(f"the model fails on its sample: {one_line(error)}") from error
    stages = len(balance)
    ranks = stages // 2 if schedule == "interleaved" else stages  # interleaved: two stages per process
    if schedule == "1f1b" and chunks < stages:
        raise CannotPort(f"the 1f1b schedule needs at least as many micro-batches as stages: --chunks {stages} "
                         f"or more, not {chunks}")
    if schedule == "interleaved":
        if stages < 4 or stages % 2:
            raise CannotPort(f"the interleaved schedule runs two stages on each of at least two processes: give "
                             f"--balance an even number of stages, at least 4, not {stages}")
        rounds = max(1, chunks // ranks)
        if chunks % rounds:
            raise CannotPort(f"the interleaved schedule over {ranks} processes splits the micro-batches into "
                             f"{rounds} equal rounds: --chunks {chunks} does not divide into them")
    return Settings(target, tuple(balance), int(chunks), schedule, ranks, library, built.checkpoint, origin)


def blockers(target: str) -> list[str]:
    """What blocks a port, said before anything runs: the findings of the opt-in SKP5xx family
    (skiplint.rules.port) in the target's file, one `path:line:col: message` line each (noqa
    comments apply); [] for a module target, whose file is not named."""
    from skiplint import engine, rules

    where, _ = split_target(target)
    if not is_file_target(where):
        return []
    codes = tuple(code for code in rules.RULES if code.startswith("SKP5"))
    result = engine.check_file(where, engine.Selection(select=codes))
    return [f"{d.path}:{d.line}:{d.col + 1}: {d.message}" for d in result.diagnostics if d.code.startswith("SKP5")]


def _ints(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, not {value!r}") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiplint port",
        description="Port a skippable nn.Sequential (or the GPipe/Pipe a factory returns) to "
                    "torch.distributed.pipelining: write a torchrun script, and with --check prove the "
                    "port equal to the GPipe run (output, every gradient, the loss).",
        epilog="Exit status: 0 written (and equal); 1 --check found a difference; 2 cannot port. "
               "See docs/migration.md.")
    p.add_argument("target", metavar="FILE:FACTORY", help="the model: a file or module and the factory (or "
                   "object) in it that gives an nn.Sequential, a (model, sample) pair, or a GPipe/Pipe")
    p.add_argument("--balance", type=_ints, metavar="N,N,...", help="layers per stage (default: the pipe's, "
                   "else an even split into 2 stages, 4 for interleaved)")
    p.add_argument("--chunks", type=int, metavar="N", help="micro-batches per batch (default: the pipe's, "
                   "else one per stage, at least 2)")
    p.add_argument("--schedule", choices=tuple(SCHEDULES), default="gpipe",
                   help="the pipelining schedule (default: gpipe); interleaved runs two stages per process")
    p.add_argument("-o", "--output", metavar="SCRIPT", help="write the torchrun script here")
    p.add_argument("--check", action="store_true", help="run the port under torchrun on the CPU (gloo) and the "
                   "model under GPipe from the same weights and input; compare in float32 and float64")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"stop the --check run after this long (default: {DEFAULT_TIMEOUT:g})")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    if args.output is None and not args.check:
        print("skiplint port: nothing to do: give -o SCRIPT, --check, or both", file=sys.stderr)
        return EXIT_CANNOT
    if not args.timeout > 0:
        print(f"skiplint port: --timeout must be more than 0 seconds, not {args.timeout:g}", file=sys.stderr)
        return EXIT_CANNOT
    try:
        import torch  # noqa: F401
    except ImportError as error:
        print(f"skiplint port: torch is not installed ({error}); install it with: pip install 'skiplint[runtime]'",
              file=sys.stderr)
        return EXIT_CANNOT
    from skiplint.port import build, script

    try:
        found = blockers(args.target)
        if found:
            more = f" (and {len(found) - 1} more: skiplint check --select SKP5)" if len(found) > 1 else ""
            raise CannotPort(found[0] + more)
        built = build(args.target)
        settings = settle(args.target, args.balance, args.chunks, args.schedule, built)
        if args.output is not None:
            text = script.render(settings, os.path.abspath(args.output))
            try:
                with open(args.output, "w", encoding="utf-8") as handle:
                    handle.write(text)
            except OSError as error:
                print(f"skiplint port: cannot write {args.output}: {error.strerror or error}", file=sys.stderr)
                return EXIT_CANNOT
            print(f"wrote {args.output}: {len(settings.balance)} stages {list(settings.balance)} over "
                  f"{settings.ranks} processes, {settings.schedule}, {settings.chunks} micro-batches; run it with "
                  f"torchrun --nproc-per-node {settings.ranks} {args.output}")
        if args.check:
            from skiplint.port import check

            return check.run(settings, built, args.timeout)
    except CannotPort as error:
        print(f"skiplint port: cannot port {args.target}: {error}", file=sys.stderr)
        return EXIT_CANNOT
    return EXIT_EQUAL
