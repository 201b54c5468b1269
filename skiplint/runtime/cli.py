"""`skiplint verify TARGET`: the runtime companion's command line."""

from __future__ import annotations

import argparse
import sys
import traceback
from typing import Optional, Sequence

from skiplint.runtime.errors import CannotRun
from skiplint.runtime.report import EXIT_NOT_RUN, Step, format_step

CHECKPOINTS = ("never", "except_last", "always")


def _ints(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.replace("x", ",").split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, not {value!r}") from None


def _list(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiplint verify",
        description="Run the real verify_skippables, inspect_skip_layout and Pipe on a model and join "
                    "what they raise with skiplint's static findings.",
        epilog="Exit status: 0 the run is clean and agrees with the static pass, 1 otherwise, "
               "2 the run could not happen. See docs/runtime.md.")
    p.add_argument("target", metavar="TARGET",
                   help="path/to/file.py:NAME or package.module:NAME; NAME is an nn.Sequential, or a callable "
                        "returning one or a (model, sample) pair")
    sample = p.add_mutually_exclusive_group()
    sample.add_argument("--sample", metavar="MODULE:FN", help="callable (or tensor) giving the sample input")
    sample.add_argument("--input-shape", type=_ints, metavar="N,C,...",
                        help="a random normal sample of this shape, e.g. 8,3,32,32")
    p.add_argument("--backend", choices=("auto", "torchgpipe", "fairscale", "pipelining"), default="auto",
                   help="auto: the library the model's skippable classes come from (default)")
    p.add_argument("--balance", type=_ints, metavar="N,N,...", help="layers per partition (default: even split "
                   "over the devices, 2 partitions on CPU)")
    p.add_argument("--chunks", type=int, default=2, help="micro-batches per mini-batch (default: 2)")
    p.add_argument("--checkpoint", action="append", choices=CHECKPOINTS, metavar="MODE",
                   help="never, except_last or always; repeat for several (default: all three)")
    p.add_argument("--devices", type=_list, metavar="DEV,DEV,...",
                   help="devices for the partitions (default: every CUDA device round-robin; CPU when none)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds the multi-process pipelining run may take (default: 120)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--verbose", action="store_true", help="show tracebacks of errors that stop the run")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    # -- torchrun: this process is one rank of a distributed verify (skiplint/runtime/distributed.py) --
    from skiplint.runtime import distributed
    if distributed.launched_by_torchrun():
        return distributed.main(args)
    # -- end torchrun --
    try:
        return _run(args)
    except BrokenPipeError:  # `skiplint verify ... | head`
        sys.stderr.close()
        return 1


def _run(args: argparse.Namespace) -> int:
    text = args.format == "text"

    def progress(step: Step) -> None:
        if text:
            print(format_step(step), flush=True)

    try:
        from skiplint.runtime.run import verify
    except ImportError as error:
        print(f"skiplint verify: torch is not installed ({error}); install it with: "
              "pip install 'skiplint[runtime]'", file=sys.stderr)
        return EXIT_NOT_RUN
    if text:
        print(f"skiplint verify {args.target}", flush=True)
    try:
        report = verify(args.target, sample=args.sample, input_shape=args.input_shape, backend=args.backend,
                        balance=args.balance, chunks=args.chunks, checkpoint=tuple(args.checkpoint or CHECKPOINTS),
                        devices=args.devices, timeout=args.timeout, progress=progress)
    except (CannotRun, ValueError) as error:
        if args.verbose:
            traceback.print_exc()
        print(f"skiplint verify: {error}", file=sys.stderr)
        return EXIT_NOT_RUN
    if report.reason is not None:
        if args.verbose and report.cause is not None:
            traceback.print_exception(report.cause)
        if not text:
            print(report.to_json())
        print(f"skiplint verify: {report.reason}", file=sys.stderr)
        return report.exit_code
    if text:
        print(report.summary_text())
    else:
        print(report.to_json())
    return report.exit_code
