"""What git ignores in a walked directory, read from the ignore files themselves: git is never run.

Running git inside a checked tree runs that tree's configuration (`core.fsmonitor`, any command a
`.git/config` names), and a tree is data to skiplint, never code. So the rules are read as git
reads them, from the same files, with the same precedence (gitignore(5)):

- the global excludes file (`core.excludesFile` of the user's or the repository's configuration,
  by default `$XDG_CONFIG_HOME/git/ignore`), then the repository's `info/exclude`, then each
  `.gitignore` from the repository's top down to the file's own directory; within one file the
  last matching pattern wins, and a deeper file wins over a shallower one;
- a directory holding `.git` starts a repository of its own: only its own rules apply inside it,
  whether the walk started above it or in it;
- what git tracks is not known without running it: a tracked file that a pattern matches is
  ignored when its directory is walked (as ruff and black do); named on the command line, it is
  checked.

Patterns are matched in time about linear in the pattern and the path, whatever the stars (below).
"""

from __future__ import annotations

import os
import re
from typing import Callable, Optional

from skiplint import sources

# Token kinds of a compiled pattern.
_LITERAL, _ONE, _SET, _STAR, _DIRS, _ALL = range(6)
_Token = tuple[int, object]


class Pattern:
    """One line of an ignore file, compiled."""

    __slots__ = ("tokens", "negated", "directory_only", "basename", "text", "parts")

    def __init__(self, tokens: list[_Token], negated: bool, directory_only: bool, basename: bool,
                 text: str) -> None:
        self.tokens = tokens
        self.negated = negated
        self.directory_only = directory_only
        self.basename = basename
        self.text = text
        self.parts = _compile(tokens)

    def matches(self, relative: str, is_dir: bool) -> bool:
        """`relative` is the path from the ignore file's directory, with `/` between parts."""
        if self.directory_only and not is_dir:
            return False
        if self.basename:
            name = self.parts[0]
            return name is not None and name.matches(relative.rsplit("/", 1)[-1])
        return _names_match(self.parts, relative.split("/"))


#: The character classes git's patterns may name inside brackets (`[[:digit:]]`).
_CLASSES: dict[str, Callable[[str], bool]] = {
    "alnum": str.isalnum, "alpha": str.isalpha, "blank": lambda c: c in " \t",
    "cntrl": lambda c: ord(c) < 32 or ord(c) == 127, "digit": lambda c: "0" <= c <= "9",
    "graph": lambda c: c.isprintable() and not c.isspace(), "lower": str.islower,
    "print": str.isprintable, "punct": lambda c: c.isprintable() and not c.isalnum() and not c.isspace(),
    "space": str.isspace, "upper": str.isupper, "xdigit": lambda c: c in "0123456789abcdefABCDEF",
}


def _bracket(text: str, start: int) -> Optional[tuple[Callable[[str], bool], int]]:
    """The character set `[...]` opening at `start`, and the index after it; None when it is
    unclosed or names an unknown class (then the `[` is an ordinary character)."""
    i = start + 1
    negated = i < len(text) and text[i] in "!^"
    if negated:
        i += 1
    ranges: list[tuple[str, str]] = []
    classes: list[Callable[[str], bool]] = []
    first = True
    while i < len(text):
        char = text[i]
        if char == "]" and not first:
            break
        first = False
        if text.startswith("[:", i):
            end = text.find(":]", i + 2)
            if end < 0 or text[i + 2:end] not in _CLASSES:
                return None
            classes.append(_CLASSES[text[i + 2:end]])
            i = end + 2
            continue
        if char == "\\" and i + 1 < len(text):
            i += 1
            char = text[i]
        if i + 2 < len(text) and text[i + 1] == "-" and text[i + 2] != "]":
            high = text[i + 2]
            if high == "\\" and i + 3 < len(text):
                high = text[i + 3]
                i += 1
            ranges.append((char, high))
            i += 3
            continue
        ranges.append((char, char))
        i += 1
    else:
        return None
    chosen, named = tuple(ranges), tuple(classes)

    def member(c: str) -> bool:
        inside = any(lo <= c <= hi for lo, hi in chosen) or any(test(c) for test in named)
        return c != "/" and inside != negated

    return member, i + 1


def _tokens(body: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "*":
            j = i
            while j < len(body) and body[j] == "*":
                j += 1
            double = j - i >= 2
            at_start = i == 0 or body[i - 1] == "/"
            if double and at_start and j < len(body) and body[j] == "/":
                tokens.append((_DIRS, None))  # `**/`: zero or more whole directories
                i = j + 1
                continue
            if double and at_start and j == len(body) and i > 0:
                tokens.append((_ALL, None))  # `/**`: everything inside
                i = j
                continue
            tokens.append((_STAR, None))
            i = j
        elif char == "?":
            tokens.append((_ONE, None))
            i += 1
        elif char == "[":
            found = _bracket(body, i)
            if found is None:
                tokens.append((_LITERAL, "["))
                i += 1
            else:
                tokens.append((_SET, found[0]))
                i = found[1]
        elif char == "\\" and i + 1 < len(body):
            tokens.append((_LITERAL, body[i + 1]))
            i += 2
        else:
            tokens.append((_LITERAL, char))
            i += 1
    return tokens


# -- matching, in time linear in the pattern and the path ------------------------------------------
# git's `*`, `?` and `[...]` never match `/`, so a pattern is compiled into names (each a run of
# segments between its stars) and gaps (`**/`: any number of whole names), and both levels are
# matched as a glob of one kind of star is: each segment (or run of names) at its leftmost place
# after the previous one. That is exact for one kind of star (a later place never leaves more
# room) and tries each place once: no backtracking.

_Segment = tuple[_Token, ...]
#: A `**/` between names: zero or more whole names.
_GAP = None


class _Name:
    """One name of a pattern: segments separated by stars (a single segment: no star)."""

    __slots__ = ("segments", "literals", "searches", "starred", "minimum")

    def __init__(self, tokens: list[_Token]) -> None:
        segments: list[list[_Token]] = [[]]
        for token in tokens:
            if token[0] == _STAR:
                segments.append([])
            else:
                segments[-1].append(token)
        self.segments: tuple[_Segment, ...] = tuple(tuple(segment) for segment in segments)
        #: Each segment as a string when it is all literal characters, else None.
        self.literals: tuple[Optional[str], ...] = tuple(
            "".join(str(data) for _, data in segment) if all(kind == _LITERAL for kind, _ in segment) else None
            for segment in self.segments)
        #: Each segment that is not all literal as a regular expression of fixed width (a set
        #: read as any character, then checked): it finds candidates in C, with nothing to retry.
        self.searches = tuple(
            None if literal is not None else re.compile("".join(
                re.escape(str(data)) if kind == _LITERAL else "[^/]" for kind, data in segment), re.DOTALL)
            for literal, segment in zip(self.literals, self.segments))
        self.starred = len(self.segments) > 1
        self.minimum = sum(map(len, self.segments))

    def _at(self, index: int, name: str, at: int) -> bool:
        """Whether segment `index` matches `name` at offset `at` (it fits: checked by the caller;
        `?` matches any character, as a name holds no `/`)."""
        literal = self.literals[index]
        if literal is not None:
            return name.startswith(literal, at)
        for offset, (kind, data) in enumerate(self.segments[index]):
            char = name[at + offset]
            if kind == _LITERAL:
                if char != data:
                    return False
            elif kind == _SET:
                if not data(char):  # type: ignore[operator]
                    return False
        return True

    def _find(self, index: int, name: str, start: int, end: int) -> int:
        """The leftmost offset >= start where segment `index` matches and ends by `end`, or -1."""
        literal = self.literals[index]
        if literal is not None:
            return name.find(literal, start, end)
        search = self.searches[index]
        assert search is not None
        found = search.search(name, start, end)
        while found is not None:
            if self._at(index, name, found.start()):
                return found.start()
            found = search.search(name, found.start() + 1, end)
        return -1

    def matches(self, name: str) -> bool:
        if not self.starred:
            return len(name) == self.minimum and self._at(0, name, 0)
        if len(name) < self.minimum:
            return False
        last = len(self.segments) - 1
        end = len(name) - len(self.segments[last])
        if not self._at(0, name, 0) or not self._at(last, name, end):
            return False
        at = len(self.segments[0])
        for index in range(1, last):
            found = self._find(index, name, at, end)
            if found < 0:
                return False
            at = found + len(self.segments[index])
        return True


_Part = Optional[_Name]


def _compile(tokens: list[_Token]) -> tuple[_Part, ...]:
    """The names and gaps of a pattern's tokens: `/` separates names, `**/` is a gap, a final
    `/**` is one name of anything and a gap (everything inside, not the directory itself)."""
    parts: list[_Part] = []
    current: list[_Token] = []
    closed = False
    for token in tokens:
        if token == (_LITERAL, "/"):
            parts.append(_Name(current))
            current, closed = [], False
        elif token[0] == _DIRS:
            parts.append(_GAP)
            current, closed = [], True
        elif token[0] == _ALL:
            parts.extend((_Name([(_STAR, None)]), _GAP))
            current, closed = [], True
        else:
            current.append(token)
            closed = False
    if current or not closed:
        parts.append(_Name(current))
    return tuple(parts)


def _names_match(parts: tuple[_Part, ...], names: list[str]) -> bool:
    """Whether the pattern's names and gaps match all of `names`, each run of names between two
    gaps at its leftmost place."""
    runs: list[list[_Name]] = [[]]
    for part in parts:
        if part is _GAP:
            runs.append([])
        else:
            runs[-1].append(part)
    if len(runs) == 1:
        return len(runs[0]) == len(names) and all(p.matches(n) for p, n in zip(runs[0], names))
    first, last = runs[0], runs[-1]
    if len(first) + len(last) > len(names):
        return False
    end = len(names) - len(last)
    if not all(p.matches(n) for p, n in zip(first, names)) or \
            not all(p.matches(n) for p, n in zip(last, names[end:])):
        return False
    at = len(first)
    for run in runs[1:-1]:
        for start in range(at, end - len(run) + 1):
            if all(p.matches(n) for p, n in zip(run, names[start:])):
                at = start + len(run)
                break
        else:
            return False
    return True


_TRAILING_SPACES = re.compile(r"(?<!\\)( +)$")


def parse(text: str) -> list[Pattern]:
    """The patterns of one ignore file, in order (gitignore(5))."""
    patterns = []
    for line in text.lstrip("\ufeff").split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if not line or line.startswith("#"):
            continue
        line = _TRAILING_SPACES.sub("", line)
        negated = line.startswith("!")
        body = line[1:] if negated else line
        directory_only = body.endswith("/")
        body = body.rstrip("/") if directory_only else body
        if not body:
            continue
        basename = "/" not in body
        body = body[1:] if body.startswith("/") else body
        patterns.append(Pattern(_tokens(body), negated, directory_only, basename, line))
    return patterns


def _read(path: str) -> Optional[str]:
    """A small text file as git reads it, or None when it is missing, unreadable or not a file."""
    try:
        return sources.read_bytes(path).decode("utf-8", "surrogateescape")
    except sources.SourceError:
        return None


_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9.-]+)\s*(\"[^\"]*\")?\s*\]")
_EXCLUDES_KEY = re.compile(r"^\s*excludesfile\s*=\s*(.*)$", re.IGNORECASE)


def _configured_excludes(config: str) -> Optional[str]:
    """`core.excludesFile` of one git configuration file's text (the last one set), or None."""
    found = None
    section = ""
    for line in config.splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1).lower() + (header.group(2) or "")
            line = line[header.end():]
        if section != "core":
            continue
        value = _EXCLUDES_KEY.match(line)
        if value:
            raw = value.group(1).strip()
            if raw.startswith('"'):
                raw = raw[1:].split('"', 1)[0]
            else:
                raw = re.split(r"\s[#;]", raw, maxsplit=1)[0].strip()
            found = raw or None
    return found


def _git_directory(root: str) -> Optional[str]:
    """The repository's git directory (`.git`, or where a `.git` file's `gitdir:` points), with
    a linked work tree's common directory followed, since `info/exclude` lives there."""
    dot_git = os.path.join(root, ".git")
    if not os.path.isdir(dot_git):
        text = _read(dot_git)
        if text is None or not text.startswith("gitdir:"):
            return None
        dot_git = os.path.join(root, text[len("gitdir:"):].strip())
    common = _read(os.path.join(dot_git, "commondir"))
    return os.path.normpath(os.path.join(dot_git, common.strip())) if common else dot_git


def _global_excludes(git_directory: Optional[str]) -> list[Pattern]:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    configs = [os.path.join(xdg, "git", "config"), os.path.join(home, ".gitconfig")]
    chosen = None
    for config in configs + ([os.path.join(git_directory, "config")] if git_directory else []):
        text = _read(config)
        chosen = (_configured_excludes(text) if text is not None else None) or chosen
    if chosen is None:
        chosen = os.path.join(xdg, "git", "ignore")
    text = _read(os.path.expanduser(chosen))
    return parse(text) if text is not None else []


def _below(path: str, directory: str) -> str:
    """`path` relative to `directory`, which holds it (both absolute and normal), `/`-separated."""
    relative = path[len(directory) + (0 if directory.endswith(os.sep) else 1):]
    return relative.replace(os.sep, "/") if os.sep != "/" else relative


class Rules:
    """What git would ignore in a walk from the directory `top`.

    `ignored(path, is_dir)` answers for the entries the walk meets under `top`. The ignore files
    are read once each, when the walk first reaches their directory. When `top` itself, or a
    directory between its repository's top and it, is ignored, the walk was asked for on
    purpose and nothing in that repository is ignored (nested repositories keep their rules).
    """

    def __init__(self, top: str) -> None:
        self._roots: dict[str, Optional[str]] = {}
        self._files: dict[str, list[Pattern]] = {}
        self._bases: dict[str, list[Pattern]] = {}
        self._off: set[str] = set()
        top = os.path.abspath(top)
        root = self._root(top)
        if root is not None:
            ancestor = top
            while ancestor != root:
                if self._decide(ancestor, True, root):
                    self._off.add(root)
                    break
                ancestor = os.path.dirname(ancestor)

    def _root(self, directory: str) -> Optional[str]:
        """The top of the repository that `directory` is in, or None."""
        chain = []
        found: Optional[str] = None
        current = directory
        while True:
            if current in self._roots:
                found = self._roots[current]
                break
            chain.append(current)
            if os.path.lexists(os.path.join(current, ".git")):
                found = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for each in chain:
            self._roots[each] = found
        return found

    def _patterns(self, directory: str) -> list[Pattern]:
        if directory not in self._files:
            text = _read(os.path.join(directory, ".gitignore"))
            self._files[directory] = parse(text) if text is not None else []
        return self._files[directory]

    def _base(self, root: str) -> list[Pattern]:
        """The patterns below every .gitignore of the repository: global excludes, then
        info/exclude (both relative to the repository's top)."""
        if root not in self._bases:
            git_directory = _git_directory(root)
            exclude = _read(os.path.join(git_directory, "info", "exclude")) if git_directory else None
            self._bases[root] = _global_excludes(git_directory) + (parse(exclude) if exclude else [])
        return self._bases[root]

    def _decide(self, path: str, is_dir: bool, root: str) -> bool:
        level = os.path.dirname(path)
        while True:  # the deepest .gitignore first
            relative = _below(path, level)
            for pattern in reversed(self._patterns(level)):
                if pattern.matches(relative, is_dir):
                    return not pattern.negated
            if level == root:
                break
            level = os.path.dirname(level)
        relative = _below(path, root)
        for pattern in reversed(self._base(root)):
            if pattern.matches(relative, is_dir):
                return not pattern.negated
        return False

    def ignored(self, path: str, is_dir: bool) -> bool:
        path = os.path.abspath(path)
        root = self._root(os.path.dirname(path))
        if root is None or root in self._off:
            return False
        return self._decide(path, is_dir, root)
