"""The `skiplint` command: `skiplint [PATH ...]` checks; subcommands add the other tools."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from skiplint import __version__, engine, rules

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNCHECKED = 0, 1, 2


def _codes(value: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in value.replace(" ", ",").split(",") if c.strip())


def check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skiplint",
        description="Check pipeline-parallel PyTorch models with skip connections "
                    "(@skippable, stash, pop, Namespace, GPipe/Pipe) without running them.",
        epilog="Exit status: 0 clean, 1 findings, 2 a file could not be checked. "
               "Other commands: skiplint layout, skiplint verify (see their --help).",
    )
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                        help="files or directories to check, recursively (default: .)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="output format (default: text, as flake8 prints)")
    parser.add_argument("--select", type=_codes, default=(), metavar="CODES",
                        help="comma-separated codes or prefixes to report (default: all but opt-in)")
    parser.add_argument("--ignore", type=_codes, default=(), metavar="CODES",
                        help="comma-separated codes or prefixes not to report")
    parser.add_argument("--extend-select", type=_codes, default=(), metavar="CODES",
                        help="codes to add to the selection, e.g. the opt-in "
                             + ", ".join(sorted(rules.OPT_IN)))
    parser.add_argument("--version", action="version", version=f"skiplint {__version__}")
    return parser


def run_check(args: argparse.Namespace) -> int:
    selection = engine.Selection(args.select, args.ignore, args.extend_select)
    results = engine.check_paths(args.paths, selection)
    diagnostics = [d for result in results for d in result.diagnostics]
    if args.format == "json":
        payload = [
            {"path": d.path, "line": d.line, "column": d.col + 1, "code": d.code,
             "name": rules.RULES[d.code].name, "message": d.message}
            for d in diagnostics
        ]
        print(json.dumps(payload, indent=2))
    else:
        for d in diagnostics:
            print(f"{d.path}:{d.line}:{d.col + 1}: {d.message}")
    if any(result.error is not None for result in results):
        return EXIT_UNCHECKED
    return EXIT_FINDINGS if diagnostics else EXIT_CLEAN


#: Subcommands, each `main(argv) -> int` in its own module, imported only when used.
SUBCOMMANDS: dict[str, str] = {
    "layout": "skiplint.layout:main",
    "verify": "skiplint.runtime.cli:main",
    "fix": "skiplint.fix:main",
}


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in SUBCOMMANDS:
        module_name, _, func = SUBCOMMANDS[argv[0]].partition(":")
        module = __import__(module_name, fromlist=[func])
        return int(getattr(module, func)(argv[1:]))
    if argv and argv[0] == "check":
        argv = argv[1:]
    args = check_parser().parse_args(argv)
    try:
        return run_check(args)
    except BrokenPipeError:  # `skiplint | head`
        return EXIT_FINDINGS


if __name__ == "__main__":
    sys.exit(main())
