"""`skiplint verify TARGET`: the runtime companion's command line.

Exit status: 0 verified clean, 1 findings confirmed or failures missed, 2 could not verify (a usage
error, a target that does not import, a crash or a hang of the model's code). With `--format json`
stdout is exactly one JSON document, whatever happens."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from skiplint.runtime.options import CHECKPOINTS, DEFAULT_CHUNKS, DEFAULT_TIMEOUT
from skiplint.runtime.report import EXIT_NOT_RUN, Report, Step, format_step

#: Ctrl-C: the conventional status of a process ended by SIGINT.
EXIT_INTERRUPTED = 130


def _ints(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.replace("x", ",").split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, not {value!r}") from None


def _list(value: str) -> tuple[str, ...]:
    """Comma-separated names, an empty one kept (options.check says what is wrong with it)."""
    return tuple(v.strip() for v in value.split(","))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiplint verify",
        description="Run the real verify_skippables, inspect_skip_layout and Pipe on a model and join "
                    "what they raise with skiplint's static findings. The model runs in a child "
                    "process: its exits, crashes and hangs are reported, never mistaken for a result.",
        epilog="Exit status: 0 verified clean; 1 static findings confirmed or runtime failures missed; "
               "2 could not verify (usage error, import error, crash, timeout). See docs/runtime.md.")
    p.add_argument("target", metavar="TARGET",
                   help="path/to/file.py:NAME or package.module:NAME; NAME is an nn.Sequential, or a callable "
                        "returning one or a (model, sample) pair")
    sample = p.add_mutually_exclusive_group()
    sample.add_argument("--sample", metavar="MODULE:FN", help="callable (or tensor) giving the sample input")
    sample.add_argument("--input-shape", type=_ints, metavar="N,C,...",
                        help="a random normal sample of this shape, e.g. 8,3,32,32")
    p.add_argument("--backend", choices=("auto", "torchgpipe", "fairscale", "pipelining"), default="auto",
                   help="auto: the library the model's skippable classes come from (default)")
    p.add_argument("--balance", type=_ints, metavar="N,N,...", help="layers per partition (default: the pipe's, "
                   "else an even split over the devices, 2 partitions on CPU)")
    p.add_argument("--chunks", type=int, default=None,
                   help=f"micro-batches per mini-batch (default: the pipe's, else {DEFAULT_CHUNKS})")
    p.add_argument("--checkpoint", action="append", choices=CHECKPOINTS, metavar="MODE",
                   help="never, except_last or always; repeat for several (default: the pipe's, else all three)")
    p.add_argument("--devices", type=_list, metavar="DEV,DEV,...",
                   help="devices for the partitions, or one device for all of them (default: every CUDA "
                        "device round-robin; CPU when none)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"seconds each step may take before the run is stopped (default: {DEFAULT_TIMEOUT:g})")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: each step as it ends, then the summary (default); json: one JSON document")
    p.add_argument("--verbose", action="store_true", help="show the traceback behind an error that stops the run")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    from skiplint.runtime import distributed
    if distributed.launched_by_torchrun():  # this process is one rank of a distributed verify
        if args.chunks is None:
            args.chunks = DEFAULT_CHUNKS
        return distributed.main(args)
    try:
        return _run(args)
    except BrokenPipeError:  # `skiplint verify ... | head`
        sys.stderr.close()
        return 1


def _run(args: argparse.Namespace) -> int:
    from skiplint.runtime import verify

    text = args.format == "text"

    def progress(step: Step) -> None:
        if text:
            print(format_step(step), flush=True)

    if text:
        print(f"skiplint verify {args.target}", flush=True)
    try:
        report = verify(args.target, sample=args.sample, input_shape=args.input_shape, backend=args.backend,
                        balance=args.balance, chunks=args.chunks,
                        checkpoint=tuple(args.checkpoint) if args.checkpoint else None,
                        devices=args.devices, timeout=args.timeout, progress=progress, verbose=args.verbose)
    except ValueError as error:
        report = Report(args.target, reason=str(error))
    except KeyboardInterrupt:
        print("skiplint verify: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    if report.reason is None:
        print(report.summary_text() if text else report.to_json(), flush=True)
        return report.exit_code
    # A run that could not verify: one line on stderr, the JSON document on stdout.
    if args.verbose and report.traceback:
        sys.stderr.write(report.traceback)
    if not text:
        print(report.to_json(), flush=True)
    elif report.observations or report.static:  # what the steps before found, joined
        print(report.summary_text(), flush=True)
    print(f"skiplint verify: {report.reason}", file=sys.stderr, flush=True)
    return EXIT_NOT_RUN
