"""The `skiplint` command: `skiplint [PATH ...]` checks; subcommands add the other tools."""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from skiplint import __version__, config, formats, parallel, rules

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNCHECKED = 0, 1, 2


def _codes(value: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in value.replace(" ", ",").split(",") if c.strip())


def _patterns(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if jobs < 0:
        raise argparse.ArgumentTypeError("expected a number >= 0 (0: every core)")
    return jobs


def check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skiplint",
        description="Check pipeline-parallel PyTorch models with skip connections "
                    "(@skippable, stash, pop, Namespace, GPipe/Pipe) without running them.",
        epilog="Exit status: 0 clean, 1 findings, 2 a file could not be checked. "
               "Configuration: [tool.skiplint] in pyproject.toml, [skiplint] in setup.cfg or "
               "tox.ini, the nearest to each file wins; options given here override it. "
               "Other commands: skiplint fix, skiplint layout, skiplint verify (see their --help).",
    )
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                        help="files or directories to check, recursively (default: .)")
    parser.add_argument("--format", choices=tuple(formats.FORMATS), default="text",
                        help="output format: text as flake8 prints it (default), json "
                             "(docs/json-schema.json), sarif (SARIF 2.1.0 for code scanning), "
                             "github (workflow annotations)")
    parser.add_argument("--output", "-o", metavar="FILE",
                        help="write the report to FILE instead of standard output")
    parser.add_argument("--select", type=_codes, default=None, metavar="CODES",
                        help="comma-separated codes or prefixes to report (default: all but opt-in)")
    parser.add_argument("--ignore", type=_codes, default=None, metavar="CODES",
                        help="comma-separated codes or prefixes not to report")
    parser.add_argument("--extend-select", type=_codes, default=None, metavar="CODES",
                        help="codes to add to the selection, e.g. the opt-in "
                             + ", ".join(sorted(rules.OPT_IN)))
    parser.add_argument("--exclude", type=_patterns, default=None, metavar="PATTERNS",
                        help="comma-separated glob patterns of files and directories to skip")
    parser.add_argument("--config", metavar="FILE",
                        help="read the configuration from FILE only, for every file")
    parser.add_argument("--isolated", action="store_true",
                        help="ignore every configuration file")
    parser.add_argument("-j", "--jobs", type=_jobs, default=0, metavar="N",
                        help="check files in N processes (default: 0, every core); "
                             "the output is the same for any N")
    parser.add_argument("--statistics", action="store_true",
                        help="count the findings of each code at the end of the report")
    parser.add_argument("--show-source", action="store_true",
                        help="show the source line of each finding")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when there are findings (still 2 when a file "
                             "could not be checked)")
    parser.add_argument("--version", action="version", version=f"skiplint {__version__}")
    return parser


def finder_for(args: argparse.Namespace) -> config.Finder:
    """The configuration finder for a run, with the command line's options overriding files."""
    overrides = {
        "select": args.select, "ignore": args.ignore, "extend_select": args.extend_select,
        "exclude": args.exclude,
    }
    return config.Finder(explicit=args.config, isolated=args.isolated, overrides=overrides)


def report_problems(finder: config.Finder) -> None:
    for problem in finder.problems:
        print(problem, file=sys.stderr)


def run_check(args: argparse.Namespace) -> int:
    finder = finder_for(args)
    tasks = list(finder.discover(args.paths))
    report_problems(finder)
    results = parallel.check_all(tasks, args.jobs)
    report = formats.Report(results, statistics=args.statistics, show_source=args.show_source)
    output = formats.FORMATS[args.format](report)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(output)
    else:
        sys.stdout.write(output)
        sys.stdout.flush()
    if report.unchecked:
        return EXIT_UNCHECKED
    return EXIT_FINDINGS if report.diagnostics and not args.exit_zero else EXIT_CLEAN


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
