"""The `skiplint` command: `check` (the default), `fix`, `layout`, `verify`, `port`, `rule` and `server`.

`skiplint [PATH ...]` is `skiplint check [PATH ...]`: a first argument that is not a command name
starts a check. The other commands live in their own modules, imported only when used; nothing
here imports libcst before a file needs the analyzer.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections import Counter
from typing import TYPE_CHECKING, Counter as CounterType, Mapping, Optional, Sequence

from skiplint import __version__, config, filenoqa, prefilter, rules, sources
from skiplint.session import Session
from skiplint.streams import OutputFailed, say as _say, write_stdout

if TYPE_CHECKING:
    from skiplint.engine import FileResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_UNCHECKED = 0, 1, 2

#: The report formats of `check` (skiplint.formats.FORMATS, named here so that --help costs no import).
FORMAT_NAMES = ("text", "json", "sarif", "github")
#: Where `--fix` moves SKP401's imports (skiplint.fix.TARGETS; the first is the default).
FIX_TARGETS = ("torchgpipe", "fairscale")

#: Commands run by another module's `main(argv) -> int`, given the rest of the command line as is.
DELEGATED: dict[str, str] = {
    "fix": "skiplint.fix:main",
    "layout": "skiplint.layout:main",
    "verify": "skiplint.runtime.cli:main",
    "port": "skiplint.port.command:main",
    "server": "skiplint.lsp:main",
}

#: Every command with its one-line description, in the order --help lists them.
COMMANDS: dict[str, str] = {
    "check": "check files and directories (the default command)",
    "fix": "rewrite the mechanical mistakes in place (SKP106, SKP107, SKP401)",
    "layout": "draw a composition's layers, partitions and skip arcs",
    "verify": "run a model for real and join the result with the static findings",
    "port": "port a model to torch.distributed.pipelining; --check proves the port equal to GPipe",
    "rule": "explain a rule: what it finds, why it fails at run time, an example and its fix",
    "server": "a language server for editors, over standard input and output (the lsp extra)",
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
               "configuration file; with --diff, as `skiplint fix --diff`: 0 nothing to change, 1 "
               "changes, 2 a file could not be fixed. Configuration: [tool.skiplint] in pyproject.toml, [skiplint] in "
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
    parser.add_argument("--fix", action="store_true",
                        help="first make the fixes of `skiplint fix` (SKP106, SKP107, SKP401) to "
                             "the selected findings, then report what is left")
    parser.add_argument("--diff", action="store_true",
                        help="print those fixes as a unified diff instead, and nothing else; "
                             "exit 1 when there are some")
    parser.add_argument("--target", choices=FIX_TARGETS, default=FIX_TARGETS[0],
                        help="with --fix or --diff: where SKP401 moves skip API imports "
                             "(default: torchgpipe)")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text report on standard output: auto (default) when it "
                             "is a terminal, unless NO_COLOR is set (FORCE_COLOR: always); never "
                             "in a file or another format")
    parser.add_argument("-q", "--quiet", action="count", default=0,
                        help="as flake8: -q prints only the names of files with findings, -qq "
                             "nothing (the exit status tells)")
    parser.add_argument("--version", action="version", version=f"skiplint {__version__}")
    return parser


def rule_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skiplint rule",
        description="Explain rules: what each finds, why it fails at run time, where it is "
                    "reported, a bad example and its fix (the text of docs/rules.md). With no "
                    "code, list every rule: its code, name and what it finds, one line each.",
        epilog="Exit status: 0 explained, 2 a code, prefix or name that matches no rule.")
    parser.add_argument("codes", nargs="*", metavar="CODE",
                        help="codes, prefixes or rule names, alone or separated by commas, e.g. "
                             "SKP101, SKP2, undeclared-stash or SKP101,SKP102")
    parser.add_argument("--all", action="store_true", help="explain every rule")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or json (a list of objects; every rule when no code "
                             "is given)")
    return parser


def _check_stdin(name: str, settings: config.Config, session: Session) -> tuple["FileResult", Optional[str]]:
    """The result for the source read from standard input, and its text (None: unreadable).
    The same guards and verdicts as a file of the same bytes (parallel.check_data): at most the
    size limit is read, an analyzer bug is SKP902."""
    from skiplint import parallel

    try:
        data = sources.read_stream(sys.stdin.buffer)
    except sources.SourceError as error:
        reason = str(error)
        return parallel.checked(name, settings, lambda: prefilter.unchecked(name, reason), session), None
    try:
        text: Optional[str] = sources.decode(data)
    except sources.SourceError:
        text = None  # check_data says why
    return parallel.check_data(data, name, settings, session), text


def use_color(choice: str, stream: object, environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether to colour a text report written to `stream`: --color always/never decides; with
    auto, a non-empty NO_COLOR turns it off, then a non-empty FORCE_COLOR on (no-color.org,
    force-color.org), then a terminal that is not TERM=dumb turns it on."""
    if choice != "auto":
        return choice == "always"
    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return environ.get("TERM") != "dumb" and _isatty(stream)


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def run_check(argv: Sequence[str], prog: str = "skiplint") -> int:
    args = check_parser().parse_args(list(argv))
    complaints = [f"skiplint: --{option.replace('_', '-')}: {config.unknown_code(code)}"
                  for option in ("select", "ignore", "extend_select") for code in getattr(args, option) or ()
                  if not config.known_code(code)]
    for line in complaints:
        _say(line)
    if complaints:
        return EXIT_UNCHECKED
    finder = config.Finder(explicit=args.config, isolated=args.isolated, overrides={
        "select": args.select, "ignore": args.ignore, "extend_select": args.extend_select,
        "exclude": args.exclude, "extend_exclude": args.extend_exclude})
    tasks = [] if finder.unusable else list(finder.discover(args.paths))  # "-" comes back as itself, in its place
    for problem in finder.problems:
        _say(str(problem))
    if finder.unusable:
        return EXIT_UNCHECKED
    if not tasks and not finder.fatal:
        # Not an error (a hook may run where there is nothing to check), but never a silent pass.
        _say(f"skiplint: no Python files to check in {' '.join(args.paths)}")

    from skiplint import formats, parallel

    def read_text(path: str) -> str:
        return sources.decode(sources.read_bytes(path))

    say = (lambda _line: None) if args.quiet else _say
    if (args.fix or args.diff) and "-" in [path for path, _ in tasks]:
        if len(tasks) > 1:
            _say("skiplint check: '-' (standard input) cannot be combined with other paths with --fix or --diff")
            return EXIT_UNCHECKED
        from skiplint import fix

        return fix.fix_stdin(args.stdin_display_name, finder, args.target, fix.FIXABLE, args.diff, say)

    where = [i for i, (path, _) in enumerate(tasks) if path == "-"]
    session = Session()  # this run's: its project index, parsed statements, project walk
    results = parallel.check_all([task for task in tasks if task[0] != "-"], args.jobs, settle=True, session=session)
    texts: dict[str, str] = {}
    if where:
        name = args.stdin_display_name or STDIN_NAME
        result, text = _check_stdin(name, finder.for_file(name), session)
        if text is not None:
            texts[name] = text
        results.insert(where[0], result)
    results = [filenoqa.honoured(r, lambda path: texts[path] if path in texts else read_text(path)) for r in results]
    terminal = (args.format == "text" and not args.output and not args.quiet and _isatty(sys.stdout))
    fixed = (0, 0)
    fix_status = EXIT_CLEAN  # --fix: 1 a file changed while it was fixed, 2 a fix could not be written
    fixable: CounterType[tuple[str, str, int, str]] = Counter()
    if args.fix or args.diff or terminal:
        from skiplint import fix

        # The files with a finding that `skiplint fix` may fix, fixed as `skiplint fix` fixes them.
        candidates = [task for task, result in zip(tasks, results)
                      if any(d.code in fix.FIXABLE for d in result.diagnostics)]
        if args.diff:  # as `skiplint fix --diff`, which also says why a file cannot be fixed
            candidates = [task for task, result in zip(tasks, results)
                          if task in candidates or result.error is not None]
            status, _ = fix.fix_tasks(candidates, args.target, fix.FIXABLE, False, say, fix.write_diff,
                                      roots=args.paths)
            return max(status, EXIT_UNCHECKED if finder.fatal else EXIT_CLEAN)
        if args.fix:
            _, outcomes = fix.fix_tasks(candidates, args.target, fix.FIXABLE, True, say, roots=args.paths)
            fix_status = max((outcome.unwritten_status for outcome in outcomes), default=EXIT_CLEAN)
            changed = [outcome for outcome in outcomes if outcome.changed]
            fixed = (sum(len(outcome.applied) for outcome in changed), len(changed))
            if changed or fix_status:  # what is left, with every file as it is now
                results = [filenoqa.honoured(r, read_text)
                           for r in parallel.check_all(tasks, args.jobs, settle=True, session=Session())]
        else:  # on a terminal: mark what `skiplint fix` would fix, as it would fix it
            _, outcomes = fix.fix_tasks(candidates, args.target, fix.FIXABLE, False, lambda _line: None,
                                        roots=args.paths)
            fixable = Counter(formats.fixable_key(d) for outcome in outcomes for d in outcome.applied)
    report = formats.Report(results, statistics=args.statistics, show_source=args.show_source,
                            show_url=args.show_url, terminal=terminal, fixable=fixable, fixed=fixed,
                            fix_command=" ".join([prog, "--fix"] + [shlex.quote(arg) for arg in argv
                                                                    if arg not in ("--fix", "--diff")]),
                            color=not args.output and args.format == "text"
                            and use_color(args.color, sys.stdout))
    for name, text in texts.items():
        report._lines[name] = sources.lines(text)  # --show-source: the text read, not a file of that name
    reporter = formats.FORMATS[args.format]
    if args.quiet:  # as flake8: -q and -qq replace the format
        reporter = formats.names if args.quiet == 1 else formats.nothing
    output = reporter(report)
    status = EXIT_FINDINGS if report.diagnostics and not args.exit_zero else EXIT_CLEAN
    if report.unchecked or finder.fatal:
        status = EXIT_UNCHECKED
    return max(status, fix_status, _emit(output, args.output))


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
        write_stdout(output)
    except (BrokenPipeError, OutputFailed) as error:
        return _refused(error, "report")
    return EXIT_CLEAN


def _refused(error: Exception, what: str) -> int:
    """Standard output refused the `what` ("report" or "output"): a reader gone early (`skiplint |
    head -1`) or a write that failed (`skiplint > /dev/full`) is one line and exit 2. Standard
    output then goes to the null device, so that Python's own flush at exit cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    if isinstance(error, BrokenPipeError):
        _say(f"skiplint: standard output was closed before the whole {what} was written")
    else:
        _say(f"skiplint: cannot write {'the report ' if what == 'report' else ''}to standard output: {error}")
    return EXIT_UNCHECKED


def rule_list() -> str:
    """`skiplint rule`: every rule on one line, its code, name and what it finds."""
    names = {code: rule.name + (" (opt-in)" if rule.opt_in else "") for code, rule in rules.RULES.items()}
    width = max(map(len, names.values()))
    return "".join(f"{code}  {names[code]:<{width}}  {rule.summary}\n" for code, rule in rules.RULES.items())


def run_rule(argv: Sequence[str]) -> int:
    from skiplint.rules import doc

    parser = rule_parser()
    args = parser.parse_args(list(argv))
    if not args.codes and not args.all and args.format == "text":
        return _emit(rule_list(), None)
    words = [word.strip() for arg in args.codes for word in arg.split(",") if word.strip()]
    by_name = {rule.name: code for code, rule in rules.RULES.items()}
    wanted = [by_name.get(word.lower(), word.upper()) for word in words]
    unknown = [word for word, code in zip(words, wanted) if not config.known_code(code)]
    if args.codes and not words:
        unknown = [",".join(args.codes)]
    if unknown:
        for word in unknown:
            _say(f"skiplint rule: {unknown_rule(word, by_name)}")
        return EXIT_UNCHECKED
    codes = [c for c in rules.RULES if args.all or not wanted or c.startswith(tuple(wanted))]
    if args.format == "json":
        output = json.dumps([doc.rule_json(code) for code in codes], indent=2) + "\n"
    else:
        output = "\n".join(doc.rule_text(code) for code in codes)
    return _emit(output, None)


def unknown_rule(word: str, by_name: dict[str, str]) -> str:
    """The complaint about a word of `skiplint rule` that is no code, prefix or rule name: a word
    that looks like a code gets the codes' words, a name the nearest rule name."""
    if word[:3].upper() == "SKP" or not any(c.isalpha() for c in word) or word.isalnum() and word[-1].isdigit():
        return config.unknown_code(word)
    lowered = word.lower().replace("_", "-")
    near = min(by_name, key=lambda name: (config.distance(lowered, name, swaps=True), name))
    hint = f"did you mean {near}?" if config.distance(lowered, near, swaps=True) <= 3 else "`skiplint rule` lists them"
    return f"unknown rule {word!r}: no rule has this name, code or prefix; {hint}"


def nearest_command(word: str) -> Optional[str]:
    """The command a bare word (letters only) was probably meant to be: one edit away (`chekc`,
    `lyaout`, `rules`), any case, or the start of only one command (`lay`); else None."""
    if not word.isalpha() or not word.isascii():
        return None
    lowered = word.lower()
    starts = [name for name in COMMANDS if len(lowered) >= 3 and name.startswith(lowered)]
    if len(starts) == 1:
        return starts[0]
    near = sorted((config.distance(lowered, name, swaps=True), name) for name in COMMANDS)
    if near[0][0] <= 1 and (len(near) == 1 or near[1][0] > near[0][0]):
        return near[0][1]
    return None


def _delegate(command: str, argv: Sequence[str]) -> int:
    if argv == [] and os.path.exists(command):
        _say(f"skiplint: running the {command} command; to check the path {command!r}, write "
             f"`skiplint check {command}` or `skiplint ./{command}`")
    module_name, _, func = DELEGATED[command].partition(":")
    module = __import__(module_name, fromlist=[func])
    return int(getattr(module, func)(list(argv)))


def _open_standard_streams() -> None:
    """Give a standard stream that the caller closed (`skiplint >&-`, `2>&-`) the null device:
    what would go there is lost quietly and the exit status still tells, while no file that the
    run opens can take that descriptor, and no warning meant for a closed standard error is
    printed into the report (print(file=None) writes to standard output)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            try:
                null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            except OSError:
                continue
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is not None:
                continue
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", errors="replace",
                                    closefd=False))


def main(argv: Optional[Sequence[str]] = None) -> int:
    _open_standard_streams()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help", "--version"):
        main_parser().parse_args(argv[:1])
        return EXIT_CLEAN  # pragma: no cover - argparse exits
    command = argv[0] if argv and argv[0] in COMMANDS else "check"
    rest = argv[1:] if argv and argv[0] in COMMANDS else argv
    if argv and command != argv[0]:
        near = nearest_command(argv[0])
        if near is not None and not os.path.lexists(argv[0]):
            _say(f"skiplint: {argv[0]!r} is neither a file nor a command; did you mean {near}?")
    try:
        if command in DELEGATED:
            status = _delegate(command, rest)
        elif command == "rule":
            status = run_rule(rest)
        else:
            status = run_check(rest, "skiplint check" if argv[:1] == ["check"] else "skiplint")
        sys.stdout.flush()  # here, not at exit, so that a reader gone early is seen here
        return status
    except (BrokenPipeError, OutputFailed) as error:  # `skiplint layout m.py | head -1`, `... > /dev/full`
        return _refused(error, "output")


if __name__ == "__main__":
    sys.exit(main())
