"""Project configuration: `[tool.skiplint]` in pyproject.toml, `[skiplint]` in setup.cfg or tox.ini.

Each checked file takes the configuration nearest to it: the first directory, from the file's own
upwards, holding one of those sections. Within one directory pyproject.toml is read first, then
setup.cfg, then tox.ini; only the first section found counts. Unknown keys and bad values become
one-line `Problem`s and are otherwise ignored: a configuration mistake never stops a run, except
a configuration file that cannot be read, which the CLI reports with exit status 2.

Nothing here imports libcst: the CLI reads its configuration before it knows whether any file
needs the analyzer.
"""

from __future__ import annotations

import configparser
import dataclasses
import functools
import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional

from skiplint import prefilter, sources


def _toml() -> Any:
    """The TOML reader (tomllib, or tomli before Python 3.11), or None without one; imported only
    when a TOML file names skiplint (the flake8 plugin imports this module for every run)."""
    try:  # Python 3.11+
        import tomllib
        return tomllib
    except ImportError:  # pragma: no cover - exercised on Python < 3.11 only
        try:
            import tomli
            return tomli
        except ImportError:
            return None


#: Where configuration is looked for in each directory, in this order, with the section's name.
CONFIG_FILES: tuple[tuple[str, str], ...] = (
    ("pyproject.toml", "tool.skiplint"),
    ("setup.cfg", "skiplint"),
    ("tox.ini", "skiplint"),
)

#: Every key a configuration section may hold, with a one-line description (docs/configuration.md).
KEYS: dict[str, str] = {
    "select": "codes or prefixes to report (default: every code except the opt-in ones)",
    "ignore": "codes or prefixes not to report",
    "extend-select": "codes or prefixes added to the selection, e.g. the opt-in codes",
    "exclude": "glob patterns of files and directories not to walk into; replaces the built-in list",
    "extend-exclude": "glob patterns of files and directories not to walk into, added to the built-in list",
    "per-file-ignores": "glob pattern -> codes not to report in the files it matches",
    "api-aliases": "a project's re-export of the API -> the API name it stands for",
    "max-unroll": "how many iterations of a constant-range loop the composition analysis unrolls",
}

#: Unknown codes of one configuration section reported one by one, each with the nearest known
#: code; past these, one line counts the rest (a generated list of 20,000 codes is one mistake).
SHOWN_UNKNOWN_CODES = 5

_CODE = re.compile(r"^SKP[0-9]{0,3}$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: The built-in `exclude` list: glob patterns matched against names (flake8's rule for patterns
#: without a slash).
DEFAULT_EXCLUDE: tuple[str, ...] = tuple(sorted(sources.DEFAULT_EXCLUDE)) + ("*.egg",)


#: skiplint/rules/codes.txt: the rules' codes, opt-in ones marked (see code_table).
_CODE_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules", "codes.txt")


@functools.lru_cache(maxsize=1)
def code_table() -> tuple[tuple[str, ...], frozenset[str]]:
    """Every rule's code in the order of `skiplint.rules.RULES`, and the opt-in ones, read from a
    table written from the rules (a test keeps the two equal), so that the flake8 plugin does not
    import every rule module. Without the table (a damaged installation), from the rules."""
    try:
        with open(_CODE_TABLE, encoding="utf-8") as handle:
            rows = [line.split() for line in handle if line.strip() and not line.startswith("#")]
    except OSError:
        from skiplint import rules

        return tuple(rules.RULES), rules.OPT_IN
    return tuple(row[0] for row in rows), frozenset(row[0] for row in rows if row[1:] == ["opt-in"])


def known_code(code: str) -> bool:
    """A code, or a prefix of one, of the rule table (upper case)."""
    return bool(_CODE.match(code)) and any(known.startswith(code) for known in code_table()[0])


def distance(a: str, b: str, swaps: bool = False) -> int:
    """Edits from `a` to `b`: insertions, deletions, substitutions and, with `swaps`, swaps of
    neighbours (the optimal string alignment distance)."""
    rows = [list(range(len(b) + 1))] + [[i] + [0] * len(b) for i in range(1, len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if swaps and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


#: Letters typed for the digits they look like.
_LOOKALIKES = str.maketrans({"O": "0", "I": "1", "L": "1", "S": "5", "B": "8"})


@functools.lru_cache(maxsize=1)
def _known_and_prefixes() -> tuple[str, ...]:
    codes = code_table()[0]
    return tuple(sorted(set(codes) | {k[:n] for k in codes for n in range(3, 6)}))


def nearest_code(word: str) -> Optional[str]:
    """The known code or prefix the user most likely meant, or None when none is close."""
    code = word.strip().upper()
    head, tail = code[:3], code[3:]
    candidate = head + tail.translate(_LOOKALIKES)
    if known_code(candidate):
        return candidate
    known = _known_and_prefixes()
    best = min(known, key=lambda k: (distance(candidate, k), -len(os.path.commonprefix((k, candidate))),
                                     abs(len(k) - len(candidate)), k))
    return best if distance(candidate, best) <= 2 and best.startswith("SKP") and code[:1] == "S" else None


def unknown_code(word: str) -> str:
    """The one-line complaint about a code or prefix that matches no rule, with the nearest known code."""
    near = nearest_code(word)
    if near is not None:
        return f"unknown code {word!r}: no rule has this code or prefix; did you mean {near}?"
    return f"unknown code {word!r}: no rule has this code or prefix; skiplint's codes are SKPnnn " \
           f"(`skiplint rule` lists them)"


@dataclass(frozen=True)
class Problem:
    """A configuration mistake, reported as one line and otherwise ignored."""

    path: str
    key: str
    message: str
    #: The file itself could not be read: the run's exit status is 2 (a config file named with
    #: --config that cannot be used stops the run before any file is checked).
    fatal: bool = False

    def __str__(self) -> str:
        path = self.path
        if os.path.isabs(path):
            relative = os.path.relpath(path)
            path = path if relative.startswith(os.pardir) else relative
        where = f"{path}: {self.key}" if self.key else path
        return f"skiplint: {where}: {self.message}"


@dataclass(frozen=True)
class Config:
    """The settings one file is checked with. Picklable: -j workers receive it with each file."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    #: None: the built-in list (DEFAULT_EXCLUDE); a tuple replaces it, as flake8's exclude does.
    exclude: Optional[tuple[str, ...]] = None
    extend_exclude: tuple[str, ...] = ()
    #: (glob pattern, codes) pairs.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: (project name, API name) pairs, e.g. ("mypkg.layers.skippable", "torchgpipe.skip.skippable").
    api_aliases: tuple[tuple[str, str], ...] = ()
    #: Loop unrolling limit for the composition analysis; None: the analyzer's default.
    max_unroll: Optional[int] = None
    #: The file the settings come from (None: built-in defaults) and the directory that relative
    #: patterns in it are relative to.
    source: Optional[str] = None
    root: str = "."

    def selected(self, code: str) -> bool:
        from skiplint import rules  # not for the flake8 plugin, which selects through flake8

        return rules.selected(code, self.select, self.ignore, self.extend_select)

    def ignored_in(self, path: str) -> tuple[str, ...]:
        """Codes per-file-ignores switches off for this file."""
        return tuple(code for pattern, ignored in self.per_file_ignores if _matches(pattern, path, self.root)
                     for code in ignored)

    def excludes(self, path: str) -> bool:
        """Whether walking a directory skips `path` (a file or a directory below it)."""
        if self.exclude is None and os.path.basename(path) in sources.DEFAULT_EXCLUDE:
            return True
        patterns = (DEFAULT_EXCLUDE if self.exclude is None else self.exclude) + self.extend_exclude
        return any(_matches(pattern, path, self.root) for pattern in patterns)

    def excludes_named(self, path: str) -> bool:
        """For a path named on the command line (as pre-commit names every file): excluded when it
        or a directory above it, up to the configuration's directory, matches a pattern the project
        or the command line wrote. The built-in list and .gitignore never apply to a named path."""
        patterns = (self.exclude or ()) + self.extend_exclude  # not the built-in list
        if not patterns:
            return False
        current = os.path.abspath(path)
        stop = os.path.abspath(self.root) if self.source is not None else os.path.abspath(os.curdir)
        while True:
            if any(_matches(pattern, current, self.root) for pattern in patterns):
                return True
            parent = os.path.dirname(current)
            if current == stop or parent == current or not parent.startswith(stop):
                return False
            current = parent

    def replace(self, **changes: Any) -> "Config":
        return dataclasses.replace(self, **changes)


def _matches(pattern: str, path: str, root: str) -> bool:
    """flake8's rule: a pattern without a slash matches the basename, one with a slash the path
    relative to the configuration's directory (and so an absolute path)."""
    path = os.path.abspath(path)
    stripped = pattern.rstrip("/")
    if "/" not in stripped:
        return fnmatch.fnmatch(os.path.basename(path), stripped)
    full = os.path.normpath(os.path.join(os.path.abspath(root), stripped))
    return fnmatch.fnmatch(path, full) or fnmatch.fnmatch(path, full + os.sep + "*")


# -- reading values --------------------------------------------------------------------------------

class _Reader:
    """Turns one section's raw values into Config fields, collecting problems."""

    def __init__(self, path: str, section: str) -> None:
        self.path = path
        self.section = section
        self.problems: list[Problem] = []
        #: Unknown codes seen in this section (each reported once), and those past
        #: SHOWN_UNKNOWN_CODES, counted and summarised in one line.
        self.unknown: set[str] = set()
        self.unlisted: list[str] = []

    def problem(self, key: str, message: str) -> None:
        self.problems.append(Problem(self.path, f"[{self.section}] {key}", message))

    def words(self, key: str, value: Any, separators: str = r"[,\s]+") -> list[str]:
        if isinstance(value, str):
            return [w for w in re.split(separators, value) if w]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return [w.strip() for w in value if w.strip()]
        self.problem(key, f"expected a string or a list of strings, got {_shown(value)}")
        return []

    def codes(self, key: str, value: Any) -> tuple[str, ...]:
        out: list[str] = []
        for word in self.words(key, value):
            code = word.upper()
            if known_code(code):
                out.append(code)
            elif code not in self.unknown:
                self.unknown.add(code)
                if len(self.unknown) <= SHOWN_UNKNOWN_CODES:
                    self.problem(key, unknown_code(word))
                else:
                    self.unlisted.append(word)
        return tuple(out)

    def summary(self) -> None:
        """One line for the unknown codes past SHOWN_UNKNOWN_CODES."""
        if self.unlisted:
            shown = ", ".join(repr(word) for word in self.unlisted[:3])
            more = ", ..." if len(self.unlisted) > 3 else ""
            self.problems.append(Problem(self.path, f"[{self.section}]",
                                         f"{len(self.unlisted):,} more unknown codes ({shown}{more}); "
                                         f"no rule has these codes or prefixes"))

    def patterns(self, key: str, value: Any) -> tuple[str, ...]:
        return tuple(self.words(key, value, r"[,\n]+\s*|\s*\n\s*"))

    def per_file_ignores(self, key: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
        pairs: list[tuple[str, Any]] = []
        if isinstance(value, dict):
            pairs = list(value.items())
        elif isinstance(value, (str, list, tuple)):
            text = value if isinstance(value, str) else "\n".join(str(v) for v in value)
            parsed = _flake8_mapping(text)
            if parsed is None:
                self.problem(key, "expected 'PATTERN:CODES' entries, e.g. 'tests/*.py:SKP116'")
                return ()
            pairs = list(parsed)
        else:
            self.problem(key, f"expected a table of pattern = codes, got {_shown(value)}")
            return ()
        out = []
        for pattern, codes in pairs:
            found = self.codes(f"{key} {pattern!r}", codes)
            if found:
                out.append((str(pattern), found))
        return tuple(out)

    def api_aliases(self, key: str, value: Any) -> tuple[tuple[str, str], ...]:
        pairs: list[tuple[Any, Any]] = []
        if isinstance(value, dict):
            pairs = list(value.items())
        elif isinstance(value, (str, list, tuple)):
            entries = self.words(key, value, r"[,\n]+")
            for entry in entries:
                alias, sep, target = entry.partition("=")
                if not sep:
                    self.problem(key, f"expected 'ALIAS = API_NAME', got {entry.strip()!r}")
                    continue
                pairs.append((alias.strip(), target.strip()))
        else:
            self.problem(key, f"expected a table of alias = API name, got {_shown(value)}")
            return ()
        out = []
        for alias, target in pairs:
            if not (isinstance(alias, str) and _DOTTED.match(alias)):
                self.problem(key, f"{alias!r} is not a dotted name")
            elif not (isinstance(target, str) and prefilter.alias_entries(alias, target)):
                self.problem(key, f"{alias!r}: {target!r} is not a name of the skip API "
                                  f"(e.g. 'torchgpipe.skip.skippable' or 'torchgpipe.skip')")
            else:
                out.append((alias, target))
        return tuple(out)

    def max_unroll(self, key: str, value: Any) -> Optional[int]:
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        self.problem(key, f"expected a whole number >= 0, got {_shown(value)}")
        return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _flake8_mapping(text: str) -> Optional[list[tuple[str, list[str]]]]:
    """flake8's `PATTERN:CODES` syntax: whitespace/comma separated, several patterns may share codes."""
    tokens = re.findall(r"[^\s,:]+|:", text)
    out: list[tuple[str, list[str]]] = []
    patterns: list[str] = []
    codes: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == ":":
            if not patterns:
                return None
            i += 1
            while i < len(tokens) and tokens[i] != ":" and re.match(r"^[A-Za-z]+[0-9]*$", tokens[i]) \
                    and not (i + 1 < len(tokens) and tokens[i + 1] == ":"):
                codes.append(tokens[i])
                i += 1
            out.extend((p, list(codes)) for p in patterns)
            patterns, codes = [], []
            continue
        patterns.append(token)
        i += 1
    if patterns:
        return None
    return out


def config_from_values(values: dict[str, Any], path: str, section: str,
                       root: str) -> tuple[Config, list[Problem]]:
    """A Config from a section's raw key/values (strings from INI files, typed values from TOML)."""
    reader = _Reader(path, section)
    fields: dict[str, Any] = {}
    handlers: dict[str, Callable[[str, Any], Any]] = {
        "select": reader.codes, "ignore": reader.codes, "extend-select": reader.codes,
        "exclude": reader.patterns, "extend-exclude": reader.patterns, "per-file-ignores": reader.per_file_ignores,
        "api-aliases": reader.api_aliases, "max-unroll": reader.max_unroll,
    }
    for raw_key, value in values.items():
        key = raw_key.strip().lower().replace("_", "-")
        handler = handlers.get(key)
        if handler is None:
            near = min(KEYS, key=lambda known: distance(key, known))
            hint = f"did you mean {near}? " if distance(key, near) <= 2 else ""
            reader.problem(raw_key, f"unknown key; {hint}(known: " + ", ".join(KEYS) + ")")
            continue
        result = handler(key, value)
        if result is not None:
            fields[key.replace("-", "_")] = result
    reader.summary()
    return Config(source=path, root=root, **fields), reader.problems


# -- finding the file ------------------------------------------------------------------------------

def read_section(path: str) -> tuple[Optional[dict[str, Any]], list[Problem]]:
    """The skiplint section of one configuration file: None when it has none (or is unreadable)."""
    try:
        data = sources.read_bytes(path)
    except sources.SourceError as error:
        return None, [Problem(path, "", f"cannot read: {error}", fatal=True)]
    if b"skiplint" not in data:
        return None, []
    if path.endswith(".toml"):  # pyproject.toml, or a TOML file named with --config
        toml = _toml()
        if toml is None:
            return None, [Problem(path, "", "[tool.skiplint] skipped: reading pyproject.toml needs "
                                            "Python 3.11+ or the tomli package")]
        try:
            document = toml.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            return None, [Problem(path, "", f"not valid TOML, ignored: {str(error).splitlines()[0]}")]
        section = document.get("tool", {}).get("skiplint") if isinstance(document.get("tool"), dict) else None
        if section is None:
            return None, []
        if not isinstance(section, dict):
            return None, [Problem(path, "[tool.skiplint]", "expected a table, ignored")]
        return section, []
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(data.decode("utf-8", errors="replace"), source=path)
    except configparser.Error as error:
        return None, [Problem(path, "", f"not a valid INI file, ignored: {str(error).splitlines()[0]}")]
    if not parser.has_section("skiplint"):
        return None, []
    return dict(parser.items("skiplint")), []


def load(path: str) -> tuple[Optional[Config], list[Problem]]:
    """The Config of one configuration file, or None when the file has no skiplint section."""
    section_name = "tool.skiplint" if path.endswith(".toml") else "skiplint"
    values, problems = read_section(path)
    if values is None:
        return None, problems
    config, more = config_from_values(values, path, section_name, os.path.dirname(os.path.abspath(path)))
    return config, problems + more


class Finder:
    """The configuration of each file: the nearest section, read once per file and directory."""

    def __init__(self, explicit: Optional[str] = None, isolated: bool = False,
                 overrides: Optional[dict[str, Any]] = None) -> None:
        self.problems: list[Problem] = []
        self._reported: set[Problem] = set()
        self._overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        self._by_dir: dict[str, Config] = {}
        self._fixed: Optional[Config] = None
        #: The file named with --config cannot be used (missing, unreadable, not valid TOML/INI).
        self.unusable = False
        if isolated:
            self._fixed = self._apply(Config())
        elif explicit is not None:
            config, problems = load(explicit)
            if config is None and problems:
                problems = [dataclasses.replace(p, fatal=True, message=p.message.replace(", ignored:", ":"))
                            for p in problems]
                self.unusable = True
            self._report(problems)
            if config is None and not problems:
                self._report([Problem(explicit, "", "has no skiplint section; using the defaults")])
            self._fixed = self._apply(config or Config())

    @property
    def fatal(self) -> bool:
        """A configuration file could not be read: the run's exit status is 2."""
        return any(problem.fatal for problem in self.problems)

    def _report(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            if problem not in self._reported:
                self._reported.add(problem)
                self.problems.append(problem)

    def _apply(self, config: Config) -> Config:
        return config.replace(**self._overrides) if self._overrides else config

    def for_directory(self, directory: str) -> Config:
        if self._fixed is not None:
            return self._fixed
        directory = os.path.abspath(directory)
        unresolved: list[str] = []  # walked upwards without recursion: a tree may be any depth
        config: Optional[Config] = None
        while True:
            cached = self._by_dir.get(directory)
            if cached is not None:
                config = cached
                break
            unresolved.append(directory)
            config = self._here(directory)
            if config is not None:
                break
            parent = os.path.dirname(directory)
            if parent == directory:
                config = self._apply(Config())
                break
            directory = parent
        for path in unresolved:
            self._by_dir[path] = config
        return config

    def for_file(self, path: str) -> Config:
        return self.for_directory(os.path.dirname(os.path.abspath(path)))

    def _here(self, directory: str) -> Optional[Config]:
        found: Optional[Config] = None
        for name, section in CONFIG_FILES:
            candidate = os.path.join(directory, name)
            if not os.path.isfile(candidate):
                continue
            if found is not None:
                values, _ = read_section(candidate)
                if values is not None:
                    self._report([Problem(candidate, f"[{section}]",
                                          f"ignored: {os.path.basename(found.source or '')} in the "
                                          f"same directory takes precedence")])
                continue
            config, problems = load(candidate)
            self._report(problems)
            if config is not None:
                found = self._apply(config)
        return found

    def discover(self, paths: Iterable[str]) -> Iterator[tuple[str, Config]]:
        """The files to check under `paths`, each with its Config, in a stable order. A walked
        directory skips the exclude patterns in force, virtual environments and what git ignores
        (skiplint.gitignore); a path named here is checked unless the project's or the command
        line's own exclude patterns match it."""
        seen: set[tuple[int, int]] = set()
        for path in paths:
            config = self.for_file(path)
            if not os.path.isdir(path):
                if not config.excludes_named(path):
                    yield path, config  # a missing or unreadable file is reported when it is read
            elif not config.excludes_named(path) or os.path.basename(os.path.abspath(path)) in ("", "."):
                yield from self._walk(path, seen)

    def _walk(self, top: str, seen: set[tuple[int, int]]) -> Iterator[tuple[str, Config]]:
        from skiplint import gitignore  # only walks need it, not the flake8 plugin's per-file lookup

        ignores = gitignore.Rules(top)

        def prune(path: str, name: str) -> bool:
            return (self.for_directory(os.path.dirname(path)).excludes(path) or sources.is_venv(path)
                    or ignores.ignored(path, True))

        def keep(path: str) -> bool:
            return not (self.for_directory(os.path.dirname(path)).excludes(path)
                        or ignores.ignored(path, False))

        for path in sources.walk(top, prune, seen, keep):
            yield path, self.for_file(path)
