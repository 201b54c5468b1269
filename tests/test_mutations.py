"""Mutants of the fixtures: `fix` never makes a file worse, every way of running the lint agrees,
no internal error appears, and every reported line is one that Python agrees exists.

Each fixture is mutated with a seeded random generator (the same mutants on every run): skip names
swapped, yield lines dropped or duplicated, a command unyielded, form feeds, \\x1c and U+2028 put
into comments and strings, line endings switched to \\r\\n or \\r. For every mutant:

(a) `skiplint fix` adds no finding of any code and changes only characters at its edits;
(b) the engine in this process (`-j 1`), `skiplint -j 2` and flake8 print the same findings
    (the subprocess runs take every mutant of one kind in a single run);
(c) no finding is SKP902 (internal error) and no exception escapes;
(d) every finding is on a line that exists as Python counts lines, at the start of a node of
    Python's own syntax tree (or at 1:1 for findings about the whole file).

The reproducers at the end pin the line breaks Python counts (CR only, form feeds, separators in
comments and strings, a lone continuation line) that once moved positions and noqa lookups.
"""

from __future__ import annotations

import ast
import collections
import difflib
import io
import os
import random
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import pytest

from skiplint import config, engine, fix, parallel
from skiplint.diagnostics import Diagnostic

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SEED = 20261123
#: Mutants of each kind (fixtures drawn at random, the same on every run), and how many of each
#: kind also go through the subprocess runs: the module runs in about a minute on one core.
PER_KIND = 40
THROUGH_SUBPROCESSES = 8


def fixture_texts() -> list[tuple[str, str]]:
    found = []
    for directory, subdirs, files in os.walk(FIXTURES):
        if ".skiplint-fixture-skip" in files:
            subdirs[:] = []
            continue
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = Path(directory, name)
                found.append((path.relative_to(FIXTURES).as_posix(), path.read_text(encoding="utf-8")))
    return sorted(found)


# -- mutations -------------------------------------------------------------------------------------

_SKIP_NAME = re.compile(r"""\b(?:stash|pop)\(\s*(["'])([A-Za-z_][\w.]*)\1""")
_DECLARED = re.compile(r"""(["'])([A-Za-z_]\w*)\1""")
_CONTROLS = ("\x0c", "\x1c", "\u2028")


def _lines(text: str) -> list[str]:
    return fix.split_lines(text)


def swap_names(text: str, rnd: random.Random) -> Optional[str]:
    """Two skip names used in commands trade places in one command."""
    found = list(_SKIP_NAME.finditer(text))
    names = sorted({m.group(2) for m in found})
    if not found or len(names) < 2:
        return None
    match = rnd.choice(found)
    other = rnd.choice([n for n in names if n != match.group(2)])
    return text[:match.start(2)] + other + text[match.end(2):]


def _yield_lines(text: str) -> list[int]:
    return [i for i, line in enumerate(_lines(text)) if re.match(r"\s*(\w+\s*=\s*)?yield\b", line)
            and not line.rstrip().endswith(("\\", "(", ",", "["))]


def drop_yield(text: str, rnd: random.Random) -> Optional[str]:
    lines, found = _lines(text), _yield_lines(text)
    if not found:
        return None
    del lines[rnd.choice(found)]
    return "".join(lines)


def duplicate_yield(text: str, rnd: random.Random) -> Optional[str]:
    lines, found = _lines(text), _yield_lines(text)
    if not found:
        return None
    at = rnd.choice(found)
    lines.insert(at, lines[at])
    return "".join(lines)


def unyield(text: str, rnd: random.Random) -> Optional[str]:
    found = list(re.finditer(r"\byield (?=(?:\w+\.)*(?:stash|pop)\()", text))
    if not found:
        return None
    match = rnd.choice(found)
    return text[:match.start()] + text[match.end():]


def control_in_comment(text: str, rnd: random.Random) -> Optional[str]:
    """A control character inside an existing comment (after its '#')."""
    comments = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments.append(token.start)
    except (tokenize.TokenError, SyntaxError):
        return None
    if not comments:
        return None
    row, col = rnd.choice(comments)
    lines = _lines(text)
    line = lines[row - 1]
    lines[row - 1] = line[:col + 1] + rnd.choice(_CONTROLS) + line[col + 1:]
    return "".join(lines)


def control_in_string(text: str, rnd: random.Random) -> Optional[str]:
    """A control character inside a string literal (a docstring or a skip name)."""
    strings = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.STRING and token.string[-1] in "'\"" and token.start[0] == token.end[0] \
                    and len(token.string) > 2 and token.string[0] in "'\"":
                strings.append(token.start)
    except (tokenize.TokenError, SyntaxError):
        return None
    if not strings:
        return None
    row, col = rnd.choice(strings)
    lines = _lines(text)
    line = lines[row - 1]
    lines[row - 1] = line[:col + 1] + rnd.choice(_CONTROLS) + line[col + 1:]
    return "".join(lines)


def form_feed_line(text: str, rnd: random.Random) -> Optional[str]:
    """A line holding only a form feed between two top-level statements."""
    lines = _lines(text)
    tops = [i for i, line in enumerate(lines) if i and re.match(r"(def|class|@|from|import)\b", line)]
    if not tops:
        return None
    at = rnd.choice(tops)
    lines.insert(at, "\x0c\n")
    return "".join(lines)


def _indented(text: str) -> list[int]:
    return [i for i, line in enumerate(_lines(text)) if re.match(r"[ \t]+[A-Za-z_]", line)]


def form_feed_indent(text: str, rnd: random.Random) -> Optional[str]:
    """A form feed before the indentation of a statement inside a block."""
    lines, found = _lines(text), _indented(text)
    if not found:
        return None
    at = rnd.choice(found)
    lines[at] = "\x0c" + lines[at]
    return "".join(lines)


def lone_continuation(text: str, rnd: random.Random) -> Optional[str]:
    """A line holding only a backslash, before a statement inside a block."""
    lines, found = _lines(text), _indented(text)
    if not found:
        return None
    lines.insert(rnd.choice(found), "\\\n")
    return "".join(lines)


def crlf(text: str, rnd: random.Random) -> Optional[str]:
    return text.replace("\n", "\r\n")


def cr_only(text: str, rnd: random.Random) -> Optional[str]:
    return text.replace("\n", "\r")


MUTATIONS: dict[str, Callable[[str, random.Random], Optional[str]]] = {
    "swap_names": swap_names, "drop_yield": drop_yield, "duplicate_yield": duplicate_yield,
    "unyield": unyield, "control_in_comment": control_in_comment, "control_in_string": control_in_string,
    "form_feed_line": form_feed_line, "crlf": crlf, "cr_only": cr_only,
    "form_feed_indent": form_feed_indent, "lone_continuation": lone_continuation,
}


@dataclass(frozen=True)
class Mutant:
    name: str
    text: str


def mutants(kind: str) -> list[Mutant]:
    """Up to PER_KIND mutants of one kind, from fixtures drawn at random; every other one gets a
    second, random mutation on top. The same on every run."""
    rnd = random.Random(f"{SEED}:{kind}")
    texts = fixture_texts()
    rnd.shuffle(texts)
    out, seen = [], set()
    for name, text in texts:
        if len(out) >= PER_KIND:
            break
        mutated = MUTATIONS[kind](text, rnd)
        if mutated is None:
            continue
        if len(out) % 2:
            extra = rnd.choice(["swap_names", "drop_yield", "duplicate_yield", "unyield"])
            mutated = MUTATIONS[extra](mutated, rnd) or mutated
        if mutated not in seen and _compiles(mutated):
            seen.add(mutated)
            out.append(Mutant(f"{kind}_{name.replace('/', '_')[:-3]}", mutated))
    return out


def _compiles(text: str) -> bool:
    try:
        compile(text, "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


# -- what Python says about lines and nodes ----------------------------------------------------------

def python_lines(text: str) -> int:
    """The number of lines as Python's tokenizer counts them."""
    return len(_lines(text))


def node_starts(text: str) -> set[tuple[int, int]]:
    """(line, column in characters) where a node of Python's syntax tree starts."""
    tree = ast.parse(text)
    lines = _lines(text)
    starts = set()
    for node in ast.walk(tree):
        line, col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
        if line is None or col is None:
            continue
        head = lines[line - 1].encode("utf-8", "surrogatepass")[:col]
        starts.add((line, len(head.decode("utf-8", "surrogatepass"))))
    return starts


def position_problems(text: str, diagnostics: tuple[Diagnostic, ...]) -> list[str]:
    count, starts = python_lines(text), node_starts(text)
    out = []
    for d in diagnostics:
        if not 1 <= d.line <= max(count, 1):
            out.append(f"{d.code} at line {d.line}, but the file has {count} lines")
        elif d.code == "SKP900":
            continue  # an unchecked file is reported where its parser stopped, not at a node
        elif (d.line, d.col) != (1, 0) and (d.line, d.col) not in starts \
                and not _lines(text)[d.line - 1][d.col:].startswith("@"):  # a decorator's line
            out.append(f"{d.code} at {d.line}:{d.col}, where no node of Python's tree starts")
    return out


# -- the properties --------------------------------------------------------------------------------

SETTINGS = config.Config()


def check(text: str, path: str) -> engine.FileResult:
    return parallel.check_source(text, path, SETTINGS)


def fix_problems(mutant: Mutant) -> list[str]:
    """What is wrong with `fix` on a mutant: (a)."""
    path = mutant.name + ".py"
    before = check(mutant.text, path)
    outcome = fix.fix_source(mutant.text, path, SETTINGS)
    if not outcome.changed:
        return [f"{path}: changed nothing but says it applied {outcome.applied}"] if outcome.applied else []
    problems = []
    # Every character outside the edits is kept: replaying the recorded edits gives the result, and
    # each edit only inserts (SKP106, SKP107) or replaces a module path (SKP401).
    text = mutant.text
    for change in outcome.edits:
        for edit in change:
            removed = text[edit.start:edit.end]
            if edit.start != edit.end and not re.fullmatch(r"[\w.\s\\]+", removed):
                problems.append(f"{path}: an edit removes {removed!r}")
        text = fix.splice(text, change)
    if text != outcome.fixed:
        problems.append(f"{path}: the recorded edits do not give the fixed text")
    if not any(d.code == "SKP401" for d in outcome.applied):
        matcher = difflib.SequenceMatcher(None, mutant.text, outcome.fixed, autojunk=False)
        for op, i1, i2, _, _ in matcher.get_opcodes():
            if op not in ("equal", "insert"):
                problems.append(f"{path}: {op} of {mutant.text[i1:i2]!r}")
    # No new finding of any code (the edits add no line, so lines compare as they are).
    if python_lines(outcome.fixed) != python_lines(mutant.text):
        problems.append(f"{path}: the fix changed the number of lines")
    after = check(outcome.fixed, path)
    if after.error is not None:
        problems.append(f"{path}: the fixed text cannot be checked: {after.error}")
    had = collections.Counter((d.code, d.line, d.message) for d in before.diagnostics)
    now = collections.Counter((d.code, d.line, d.message) for d in after.diagnostics)
    if now - had:
        problems.append(f"{path}: the fix introduced {sorted(now - had)}")
    if sum(now.values()) >= sum(had.values()):
        problems.append(f"{path}: the fix removed no finding")
    # Idempotent: nothing more to do on the fixed text.
    if fix.fix_source(outcome.fixed, path, SETTINGS).fixed != outcome.fixed:
        problems.append(f"{path}: a second fix changes the text again")
    return problems


KINDS = sorted(MUTATIONS)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_mutants_fix_and_lint(kind: str) -> None:
    problems: list[str] = []
    found = mutants(kind)
    assert found
    for mutant in found:
        result = check(mutant.text, mutant.name + ".py")  # (c): no exception escapes
        problems += [f"{mutant.name}: {d.message}" for d in result.diagnostics if d.code == "SKP902"]
        problems += [f"{mutant.name}: {p}" for p in position_problems(mutant.text, result.diagnostics)]
        problems += fix_problems(mutant)
    assert problems == []


_REPORTED = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>SKP\d{3}) (?P<message>.*)$")


def _parse_report(output: str) -> dict[str, set[tuple[int, int, str, str]]]:
    found: dict[str, set[tuple[int, int, str, str]]] = collections.defaultdict(set)
    for line in output.split("\n"):  # not splitlines(): a message may hold \x1c or U+2028
        match = _REPORTED.match(line.rstrip("\r"))
        if match:
            found[os.path.basename(match["path"])].add(
                (int(match["line"]), int(match["col"]), match["code"], match["message"]))
    return found


def _run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=300, encoding="utf-8", errors="backslashreplace")
    assert done.returncode in (0, 1, 2), done.stderr  # 2: a mutant libcst cannot parse (SKP900)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


@pytest.mark.slow
def test_mutants_read_the_same_with_j1_j2_and_flake8(tmp_path: Path) -> None:
    written = {}
    for kind in KINDS:
        for mutant in mutants(kind)[:THROUGH_SUBPROCESSES]:
            name = f"{mutant.name}.py"
            (tmp_path / name).write_bytes(mutant.text.encode("utf-8"))
            written[name] = mutant
    assert written
    tasks = [(str(tmp_path / name), SETTINGS) for name in sorted(written)]
    inprocess: dict[str, set[tuple[int, int, str, str]]] = collections.defaultdict(set)
    for result in parallel.check_all(tasks, jobs=1):
        for d in result.diagnostics:
            inprocess[os.path.basename(d.path)].add((d.line, d.col + 1, d.code, d.message[len(d.code) + 1:]))
    two = _parse_report(_run(["skiplint", "--isolated", "-j", "2", "."], tmp_path))
    flake8 = _parse_report(_run(["flake8", "--isolated", "--select", "SKP", "-j", "1", "."], tmp_path))
    problems = []
    for name in sorted(written):
        one = sorted(inprocess.get(name, set()))
        if one != sorted(two.get(name, set())):
            problems.append(f"{name}: -j 1 {one} -j 2 {sorted(two.get(name, set()))}")
        if one != sorted(flake8.get(name, set())):
            problems.append(f"{name}: -j 1 {one} flake8 {sorted(flake8.get(name, set()))}")
    assert problems == []


#: Mutations that change only the layout: the findings stay the same (lines shifted where a line
#: was added).
LAYOUT_ONLY = ("crlf", "cr_only", "control_in_comment", "form_feed_line")
_LINE_IN_MESSAGE = re.compile(r"\(line (\d+)\)")


def _findings(text: str, added_line: Optional[int]) -> list[tuple[int, int, str, str]]:
    def back(line: int) -> int:
        return line - 1 if added_line is not None and line > added_line else line
    return sorted((back(d.line), d.col, d.code,
                   _LINE_IN_MESSAGE.sub(lambda m: f"(line {back(int(m.group(1)))})", d.message))
                  for d in check(text, "m.py").diagnostics)


def _noqa_lines(text: str) -> list[str]:
    return [line.replace("\r", "") for line in _lines(text) if "noqa" in line.lower()]


@pytest.mark.slow
@pytest.mark.parametrize("kind", LAYOUT_ONLY)
def test_layout_only_mutants_keep_their_findings(kind: str) -> None:
    rnd = random.Random(f"{SEED}:layout:{kind}")
    problems, compared = [], 0
    for name, text in fixture_texts():
        mutated = MUTATIONS[kind](text, rnd)
        if mutated is None or not _compiles(mutated) or _noqa_lines(mutated) != _noqa_lines(text):
            continue  # a character inside a `# noqa` comment changes what it says, not the layout
        added = None
        if kind == "form_feed_line":
            added = next(i for i, (a, b) in enumerate(zip(_lines(text) + [""], _lines(mutated)), 1) if a != b)
        compared += 1
        if _findings(text, None) != _findings(mutated, added):
            problems.append(name)
    assert compared > 20
    assert problems == []


# -- line breaks as Python counts them, and the one defect left outside `fix` ---------------------

_CR_ONLY = ("from torchgpipe.skip import skippable, stash\r\r\r@skippable(stash=['a'])\rclass S:\r"
            "    def forward(self, x):\r        yield stash('b', x)\r        return x\r")


def test_cr_only_line_endings() -> None:
    assert [(d.line, d.col, d.code) for d in check(_CR_ONLY, "m.py").diagnostics] == \
        [(4, 18, "SKP103"), (7, 14, "SKP101")]


_NOQA = ("from torchgpipe.skip import skippable, stash\n{extra}\n@skippable(stash=[])\nclass S:\n"
         "    def forward(self, x):\n        yield stash('b', x)  # noqa: SKP101\n        return x\n")


def test_noqa_after_a_form_feed_line() -> None:
    assert check(_NOQA.format(extra="\x0c"), "m.py").diagnostics == ()


def test_noqa_after_a_file_separator_in_a_comment() -> None:
    assert check(_NOQA.format(extra="# a\x1cb"), "m.py").diagnostics == ()


def test_noqa_after_a_line_separator_in_a_string() -> None:
    assert check(_NOQA.format(extra="X = 'a\u2028b'"), "m.py").diagnostics == ()


def test_the_reproducers_hold_without_the_control_characters() -> None:
    # The same files with plain line breaks: what the tests above expect.
    assert [(d.line, d.col, d.code) for d in check(_CR_ONLY.replace("\r", "\n"), "m.py").diagnostics] == \
        [(4, 18, "SKP103"), (7, 14, "SKP101")]
    assert check(_NOQA.format(extra="# ab"), "m.py").diagnostics == ()


_LOSSY = ("from torchgpipe.skip import skippable, pop\n\n\n@skippable(pop=['p'])\nclass Head:\n"
          "    def forward(self, x):\n        x = 1\n\\\n        pop('p')\n\x0c        y = pop('p')\n"
          "        return x\n")


def test_positions_after_a_lone_continuation_line_and_a_form_feed() -> None:
    assert [(d.line, d.col, d.code) for d in check(_LOSSY, "m.py").diagnostics] == \
        [(9, 8, "SKP107"), (10, 13, "SKP107")]  # where ast puts the two calls
    assert position_problems(_LOSSY, check(_LOSSY, "m.py").diagnostics) == []


def test_fix_refuses_a_finding_whose_position_python_does_not_confirm() -> None:
    # While the positions above are wrong, `fix` finds no node there and leaves the file alone;
    # once they are right, it yields the first pop (yielding the second too would pop twice).
    outcome = fix.fix_source(_LOSSY, "m.py")
    if outcome.applied:
        assert outcome.fixed == _LOSSY.replace("        pop('p')", "        yield pop('p')")
    else:
        assert outcome.fixed == _LOSSY
        assert {why for _, why in outcome.left} == {"Python's parser puts no such node at the reported position"}
