"""The `skiplint` command: `check` (the default), `fix`, `layout`, `verify` and `rule`.

`skiplint [PATH ...]` is `skiplint check [PATH ...]`: a first argument that is not a command name
starts a check. The other commands live in their own modules, imported only when used; nothing
here imports libcst before a file needs the analyzer.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Optional, Sequence

from skiplint import __version__, config, rules

if TYPE_CHECKING:
    from skiplint.engine import FileResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNCHECKED = 0, 1, 2

#: The report formats of `check` (skiplint.formats.FORMATS, named here so that --help costs no import).
FORMAT_NAMES = ("text", "json", "sarif", "github")

#: Commands run by another module's `main(argv) -> int`, given the rest of the command line as is.
DELEGATED: dict[str, str] = {
    "fix": "skiplint.fix:main",
    "layout": "skiplint.layout:main",
    "verify": "skiplint.runtime.cli:main",
}

#: Every command with its one-line description, in the order --help lists them.
COMMANDS: dict[str, str] = {
    "check": "check files and directories (the default command)",
    "fix": "rewrite the mechanical mistakes in place (SKP106, SKP107, SKP401)",
    "layout": "draw a composition's layers, partitions and skip arcs",
    "verify": "run a model for real and join the result with the static findings",
    "rule": "explain a rule: what it finds, why it fails at run time, an example and its fix",
}

#: The name a file read from standard input gets when --stdin-display-name is not given (flake8's).
STDIN_NAME = "stdin"


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
        raise argparse.ArgumentTypeError("expected a number >= 0 (0: chosen from the files)")
    return jobs


def main_parser() -> argparse.ArgumentParser:
    """`skiplint --help`: the commands."""
    parser = argparse.ArgumentParser(
        prog="skiplint",
        usage="skiplint [-h] [--version] [COMMAND] [ARGS ...]",
        description="Check pipeline-parallel PyTorch models with skip connections "
                    "(@skippable, stash, pop, Namespace, GPipe/Pipe) without running them.",
        epilog="With no command, check runs: `skiplint src/` is `skiplint check src/`. To check a "
               "directory named like a command, name the command or the directory's path: "
               "`skiplint check fix` or `skiplint ./fix`. Each command has its own --help.",
    )
    parser.add_argument("--version", action="version", version=f"skiplint {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        commands.add_parser(name, help=summary, add_help=False)
    return parser


def check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skiplint check",
        description="Check pipeline-parallel PyTorch models with skip connections "
                    "(@skippable, stash, pop, Namespace, GPipe/Pipe) without running them. "
                    "`skiplint [PATH ...]` is the same command.",
        epilog="Exit status: 0 clean, 1 findings, 2 a file could not be checked, or a bad option or "
               "configuration file. Configuration: [tool.skiplint] in pyproject.toml, [skiplint] in "
               "setup.cfg or tox.ini, the nearest to each file wins; options given here override it.",
    )
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH",
                        help="files or directories to check, recursively (default: .); "
                             "- reads one file from standard input")
    parser.add_argument("--format", choices=FORMAT_NAMES, default="text",
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
                        help="comma-separated glob patterns of files and directories not to walk "
                             "into; replaces the built-in list (build, dist, .venv, ...)")
    parser.add_argument("--extend-exclude", type=_patterns, default=None, metavar="PATTERNS",
                        help="comma-separated glob patterns added to the built-in list")
    parser.add_argument("--config", metavar="FILE",
                        help="read the configuration from FILE only, for every file")
    parser.add_argument("--isolated", action="store_true",
                        help="ignore every configuration file")
    parser.add_argument("--stdin-display-name", metavar="NAME", default=None,
                        help="the name of the file read from standard input (PATH -): used in the "
                             "report and to find its configuration (default: stdin)")
    parser.add_argument("-j", "--jobs", type=_jobs, default=0, metavar="N",
                        help="check files in N processes (default: 0, chosen from the files: one "
                             "process for a few, every core once the work pays for starting them); "
                             "the output is the same for any N")
    parser.add_argument("--statistics", action="store_true",
                        help="count the findings of each code at the end of the report")
    parser.add_argument("--show-source", action="store_true",
                        help="show the source line of each finding")
    parser.add_argument("--show-url", action="store_true",
                        help="text format: follow each finding with the address of its rule's documentation")
    parser.add_argument("--exit-zero", action="store_true",
                        help="exit 0 even when there are findings (still 2 when a file "
                             "could not be checked)")
    parser.add_argument("--version", action="version", version=f"skiplint {__version__}")
    return parser


def rule_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skiplint rule",
        description="Explain rules: what each finds, why it fails at run time, where it is "
                    "reported, a bad example and its fix (the text of docs/rules.md).",
        epilog="Exit status: 0 explained, 2 a code or prefix that matches no rule.")
    parser.add_argument("codes", nargs="*", metavar="CODE",
                        help="codes or prefixes, e.g. SKP101 or SKP2")
    parser.add_argument("--all", action="store_true", help="every rule")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or json (a list of objects)")
    return parser


def _say(line: str) -> None:
    """One line on standard error; a closed standard error loses it quietly."""
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):
        pass


def bad_codes(args: argparse.Namespace) -> list[str]:
    """One line per code or prefix of --select/--ignore/--extend-select that matches no rule."""
    lines = []
    for option in ("select", "ignore", "extend_select"):
        for code in getattr(args, option) or ():
            if not config.known_code(code):
                lines.append(f"skiplint: --{option.replace('_', '-')}: {config.unknown_code(code)}")
    return lines


def finder_for(args: argparse.Namespace) -> config.Finder:
    """The configuration finder for a run, with the command line's options overriding files."""
    overrides = {
        "select": args.select, "ignore": args.ignore, "extend_select": args.extend_select,
        "exclude": args.exclude, "extend_exclude": args.extend_exclude,
    }
    return config.Finder(explicit=args.config, isolated=args.isolated, overrides=overrides)


def report_problems(finder: config.Finder) -> None:
    for problem in finder.problems:
        _say(str(problem))


def _check_stdin(name: str, settings: config.Config) -> tuple["FileResult", Optional[str]]:
    """The result for the source read from standard input, and its text (None: unreadable)."""
    from skiplint import engine, parallel, sources
    from skiplint.diagnostics import Diagnostic

    try:
        text = sources.decode(sys.stdin.buffer.read())
    except (sources.SourceError, OSError) as error:
        if isinstance(error, OSError):
            reason = f"cannot read standard input: {error.strerror or error}"
        else:
            reason = str(error)
        message = rules.RULES["SKP900"].format(reason=reason)
        diagnostics = (Diagnostic(name, 1, 0, "SKP900", message),) if settings.selected("SKP900") else ()
        return engine.FileResult(name, diagnostics, reason), None
    return parallel.check_source(text, name, settings), text


def _without_file_noqa(result: "FileResult", text: Optional[str] = None) -> "FileResult":
    """A file with `# flake8: noqa` or `# skiplint: noqa` on a line of its own is not checked."""
    if not result.diagnostics and result.error is None:
        return result
    from skiplint import engine, filenoqa, sources

    if text is None:
        try:
            text = sources.decode(sources.read_bytes(result.path))
        except sources.SourceError:
            return result
    if filenoqa.skips_file(text):
        return engine.FileResult(result.path, ())
    return result


def run_check(argv: Sequence[str]) -> int:
    args = check_parser().parse_args(list(argv))
    complaints = bad_codes(args)
    if complaints:
        for line in complaints:
            _say(line)
        return EXIT_UNCHECKED
    finder = finder_for(args)
    if finder.unusable:
        report_problems(finder)
        return EXIT_UNCHECKED
    tasks = list(finder.discover(args.paths))  # "-" comes back as itself, in its place
    report_problems(finder)
    if not tasks and not finder.fatal:
        # Not an error (a hook may run where there is nothing to check), but never a silent pass.
        _say(f"skiplint: no Python files to check in {' '.join(args.paths)}")

    from skiplint import formats, parallel

    where = [i for i, (path, _) in enumerate(tasks) if path == "-"]
    results = parallel.check_all([task for task in tasks if task[0] != "-"], args.jobs, settle=True)
    texts: dict[str, str] = {}
    if where:
        name = args.stdin_display_name or STDIN_NAME
        result, text = _check_stdin(name, finder.for_file(name))
        if text is not None:
            texts[name] = text
        results.insert(where[0], result)
    results = [_without_file_noqa(r, texts.get(r.path)) for r in results]
    report = formats.Report(results, statistics=args.statistics, show_source=args.show_source,
                            show_url=args.show_url)
    for name, text in texts.items():
        report._lines[name] = text.splitlines()  # --show-source: the text read, not a file of that name
    output = formats.FORMATS[args.format](report)
    status = EXIT_FINDINGS if report.diagnostics and not args.exit_zero else EXIT_CLEAN
    if report.unchecked or finder.fatal:
        status = EXIT_UNCHECKED
    return max(status, _emit(output, args.output))


def _emit(output: str, destination: Optional[str]) -> int:
    """Write the report; a file that cannot be written, or a closed pipe, is one line and exit 2."""
    if destination:
        try:
            with open(destination, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(output)
        except OSError as error:
            _say(f"skiplint: --output {destination}: cannot write the report: {error.strerror or error}")
            return EXIT_UNCHECKED
        return EXIT_CLEAN
    try:
        sys.stdout.write(output)
        sys.stdout.flush()
    except BrokenPipeError:  # `skiplint | head -1`: the reader left before the end of the report
        _silence_stdout()
        _say("skiplint: standard output was closed before the whole report was written")
        return EXIT_UNCHECKED
    return EXIT_CLEAN


def _silence_stdout() -> None:
    """Point standard output at the null device, so that Python's own flush at exit cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def run_rule(argv: Sequence[str]) -> int:
    from skiplint import ruledoc

    parser = rule_parser()
    args = parser.parse_args(list(argv))
    if not args.codes and not args.all:
        parser.error("name a code (e.g. SKP101) or give --all")
    wanted = [code.strip().upper() for code in args.codes]
    unknown = [word for word, code in zip(args.codes, wanted) if not config.known_code(code)]
    if unknown:
        for word in unknown:
            _say(f"skiplint rule: {config.unknown_code(word)}")
        return EXIT_UNCHECKED
    codes = [c for c in rules.RULES if args.all or c.startswith(tuple(wanted))]
    if args.format == "json":
        import json

        output = json.dumps([ruledoc.rule_json(code) for code in codes], indent=2) + "\n"
    else:
        output = "\n".join(ruledoc.rule_text(code) for code in codes)
    return _emit(output, None)


def _delegate(command: str, argv: Sequence[str]) -> int:
    if argv == [] and os.path.exists(command):
        _say(f"skiplint: running the {command} command; to check the path {command!r}, write "
             f"`skiplint check {command}` or `skiplint ./{command}`")
    module_name, _, func = DELEGATED[command].partition(":")
    module = __import__(module_name, fromlist=[func])
    return int(getattr(module, func)(list(argv)))


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help", "--version"):
        main_parser().parse_args(argv[:1])
        return EXIT_CLEAN  # pragma: no cover - argparse exits
    command = argv[0] if argv and argv[0] in COMMANDS else "check"
    rest = argv[1:] if argv and argv[0] in COMMANDS else argv
    if command in DELEGATED:
        return _delegate(command, rest)
    if command == "rule":
        return run_rule(rest)
    try:
        return run_check(rest)
    except BrokenPipeError:  # a closed pipe on standard error
        _silence_stdout()
        return EXIT_UNCHECKED


if __name__ == "__main__":
    sys.exit(main())
