"""Hostile inputs for skiplint, built from a seed: mutations of the fixtures and generated
programs, each a small tree of files (a model and the sibling module it imports).

`python -m tests.fuzz.generate --count 500` runs the long fuzz (see README, Development); the test
suite runs a fixed small budget (tests/fuzz/test_fuzz.py). Each input is linted in a subprocess by
`skiplint` and by `flake8` under a wall-clock limit and an address-space limit; the run must end
with exit status 0, 1 or 2, by itself (no signal), with nothing on stderr that is a traceback.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, Optional

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p for p in (REPO / "fixtures").rglob("*.py"))
API = "from torchgpipe.skip import skippable, stash, pop\nimport torch.nn as nn\n"
#: Each run's limits: CPU time (what a loop costs, whatever else the machine runs), wall-clock
#: time (a run that waits: a hang, a stopped worker; generous, so that a loaded machine is not
#: mistaken for one) and address space.
CPU_S = 20
WALL_S = 120
MEMORY_BYTES = 1 << 30

Tree = Dict[str, bytes]


def _fixture(rng: random.Random) -> str:
    return rng.choice(FIXTURES).read_text(encoding="utf-8")


def _deep(rng: random.Random) -> str:
    n = rng.choice([150, 199, 201, 1000, 5000])
    kind = rng.choice(["()", "[]", "{}", "-", "not ", "lambda: ", "1 if a else ", ".b", "[0]", "()", " + a"])
    if len(kind) == 2 and kind[0] in "([{" and kind != "()":
        return "x = " + kind[0] * n + kind[1] * n
    if kind == "()" and rng.random() < 0.5:
        return "x = " + "(" * n + ")" * n
    if kind in (".b", "[0]", "()"):
        return "x = a" + kind * n * 3
    return "x = " + kind * n + "1"


def mutate_fixture(rng: random.Random) -> Tree:
    text = _fixture(rng)
    lines = text.splitlines(keepends=True) or ["\n"]
    for _ in range(rng.randint(1, 4)):
        what = rng.randrange(8)
        i = rng.randrange(len(lines))
        if what == 0:
            lines[i] = lines[i].replace("\n", rng.choice(["\r", "\r\n", "\n\r"]))
        elif what == 1:
            j = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:j] + rng.choice("\x0c\x1c\x1d\x1e\u2028\u2029\x85\x1b\t\r\ufeff") + lines[i][j:]
        elif what == 2:
            del lines[i]
        elif what == 3:
            lines.insert(i, lines[i])
        elif what == 4:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif what == 5:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]  # a syntax error, often
        elif what == 6:
            lines.insert(i, _deep(rng) + "\n")
        else:
            lines = [line.replace('"', "'") if rng.random() < 0.3 else line for line in lines]
        if not lines:
            lines = ["\n"]
    return {"model.py": "".join(lines).encode("utf-8", "surrogatepass")}


def deep_sibling(rng: random.Random) -> Tree:
    blocks = "import torch.nn as nn\n\nclass Block(nn.Module):\n    table = " + _deep(rng).split("= ", 1)[1] + "\n"
    model = API + "from blocks import Block\n\nmodel = nn.Sequential(Block(), Block())\n"
    return {"blocks.py": blocks.encode(), "model.py": model.encode()}


def large_constants(rng: random.Random) -> Tree:
    body = rng.choice([
        "x = 10\nfor _ in range(9):\n    x = x ** 63\n",
        "s = 'ab'\nfor _ in range(40):\n    s = s + s\n",
        "s = [1]\nfor _ in range(40):\n    s = s + s\n",
        f"n = {'9' * rng.choice([4000, 4301, 20000])}\nm = str(n * n)\n",
        "b = [1, -10**12]\n",
        "names = ['a'] * 10**9\n",
    ])
    model = API + body + "\n@skippable(stash=['a'])\nclass S(nn.Module):\n    def forward(self, x):\n" \
        "        yield stash('a', x)\n        return x\n\nmodel = nn.Sequential(S(), S())\n"
    return {"model.py": model.encode()}


def syntax_error_after_long_line(rng: random.Random) -> Tree:
    first = rng.choice(["def f(:\n", "type A = int\n", "x = (\n", "match x:\n  case 1: pass\n", "print 'a'\n"])
    return {"model.py": (API + first + _deep(rng) + "\n").encode()}


def odd_file(rng: random.Random) -> Tree:
    unit = "@skippable(stash=['s{i}'])\nclass S{i}(nn.Module):\n    def forward(self, x):\n" \
           "        yield stash('s{i}', x)\n        return x\n"
    count = rng.choice([10, 1000, 5000])
    text = API + "".join(unit.format(i=i) for i in range(count))
    newline = rng.choice(["\n", "\r", "\r\n"])
    return {"model.py": text.replace("\n", newline).encode()}


def control_characters(rng: random.Random) -> Tree:
    name = "".join(rng.choice("ab\n\r\x00\x1b\udc80\u2028'\"\\") for _ in range(6))
    text = API + f"@skippable(stash=['a'])\nclass S(nn.Module):\n    def forward(self, x):\n" \
        f"        yield stash({name!r}, x)\n        return x\n"
    return {"model.py": text.encode("utf-8", "surrogatepass")}


#: Settings of a checked tree's git configuration that name a command; every one of them writes
#: TRAP_FILE when it runs, which no door may let happen.
TRAP_FILE = "sprung"
_TRAPS = ("core.fsmonitor", "core.pager", "core.editor", "core.sshCommand", "core.askPass",
          "diff.external", "credential.helper", "filter.trap.clean", "filter.trap.process",
          "uploadpack.packObjectsHook", "sequence.editor", "gpg.program")


def _setting(key: str, value: str) -> str:
    """`section.name` or `section.sub.name` = value, as a git configuration file writes it."""
    parts = key.split(".")
    header = parts[0] if len(parts) == 2 else '%s "%s"' % (parts[0], parts[1])
    return "[%s]\n\t%s = %s\n" % (header, parts[-1], value)


def git_config_trap(rng: random.Random) -> Tree:
    """A tree that carries its own repository whose configuration runs a command, reached
    directly, through an include, or in a nested repository, with ignore files to read."""
    command = rng.choice([f"touch {TRAP_FILE}", f"sh -c 'touch {TRAP_FILE}'", f"!touch {TRAP_FILE}"])
    keys = ["core.fsmonitor"] + rng.sample(_TRAPS[1:], rng.randint(0, 3))  # ls-files ran the first
    rng.shuffle(keys)
    settings = "".join(_setting(key, command) for key in keys)
    tree: Tree = {"model.py": (API + _fixture(rng)).encode(), "out/gen.py": API.encode(),
                  ".gitignore": rng.choice([b"out/\n", b"*.pyc\n!keep.py\n", b"[\n**/\n", b"\\\n"]),
                  ".gitattributes": b"* filter=trap\n"}
    top = rng.choice([".git", "inner/.git"])
    if top == "inner/.git":
        tree["inner/model.py"] = tree["model.py"]
    tree[f"{top}/HEAD"] = b"ref: refs/heads/main\n"
    tree[f"{top}/objects/info/packs"] = b""
    tree[f"{top}/refs/heads/.keep"] = b""
    if rng.random() < 0.5:
        tree[f"{top}/config"] = b"[include]\n\tpath = extra\n"
        tree[f"{top}/extra"] = settings.encode()
    else:
        tree[f"{top}/config"] = settings.encode()
    tree[f"{top}/info/exclude"] = b"gen_*.py\n"
    return tree
#: A model with two findings wherever its API import is seen: SKP103 and SKP101.
LAYER = ("import torch.nn as nn\n\n\n@{api}skippable(stash=['a'])\nclass Layer(nn.Module):\n"
         "    def forward(self, x):\n        yield {api}stash('b', x)  # café\n        return x\n")
#: Cookies, as written on a first or second line (None: no cookie), with the codec that writes the rest.
COOKIES = [(None, "utf-8"), ("# coding: utf-8", "utf-8"), ("# -*- coding: UTF_8 -*-", "utf-8"),
           ("# coding: utf8", "utf-8"), ("# coding: latin-1", "latin-1"), ("# vim: fileencoding=cp1252", "cp1252"),
           ("# coding: utf-7", "utf-7"), ("# coding: utf-16", "utf-16-le"), ("# coding: ascii", "ascii"),
           ("# coding: koi8-r", "koi8-r"), ("# coding: shift_jis", "shift_jis"), ("# coding: klingon", "utf-8")]
#: What may end a line, or stand in it, that str.splitlines and Python's tokenizer read differently.
BREAKS = ["\n", "\r\n", "\r", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def encoding_and_line_breaks(rng: random.Random) -> Tree:
    """A model behind a random cookie (or BOM), its letters hidden by UTF-7 where it can, with
    line ends and in-line breaks of every kind, bytes that are not UTF-8 in comments, and file
    noqa comments after code: every door must read it alike (the doors oracle)."""
    cookie, codec = rng.choice(COOKIES)
    head = "from torchgpipe.skip import skippable, stash\n" if rng.random() < 0.7 else "import torch\n"
    api = "" if head.startswith("from") else "torch.distributed.pipeline.sync.skip."
    lines = (head + LAYER.format(api=api)).split("\n")
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(lines))
        lines[i] += rng.choice(BREAKS[3:]) + rng.choice(["# flake8: noqa", "# skiplint: noqa", "# note", ""])
    text = "".join(line + rng.choice(BREAKS[:3] if rng.random() < 0.8 else BREAKS) for line in lines)
    if cookie is not None:
        text = cookie + rng.choice(["\n", "\r\n"]) + text
    data = text.encode(codec, "replace")
    if codec == "utf-7" and rng.random() < 0.7:
        data = data.replace(b"torch", b"+AHQ-orch")
    if codec == "utf-8" and rng.random() < 0.5:
        data = data.replace("café".encode(), rng.choice([b"caf\xe9", b"\xff\xfe", b"\xed\xa0\x80", b"\xc0\xaf"]))
    if cookie is None and rng.random() < 0.2:
        data = b"\xef\xbb\xbf" + data
    return {"model.py": data}


def standard_input(rng: random.Random) -> Tree:
    """What an editor pipes in: a fixture or a mutant, now and then past the size limit, binary,
    or cut in the middle of a character; the path and `skiplint -` must say the same (the doors
    oracle)."""
    data = mutate_fixture(rng)["model.py"]
    what = rng.randrange(6)
    if what == 0:
        data += b"# " + b"x" * (4 * 1024 * 1024 + rng.choice([-10, 1, 1000])) + b"\n"
    elif what == 1:
        data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4096)))
    elif what == 2:
        data = data + "é".encode()[:1]
    return {"model.py": data}


def _chain(rng: random.Random, names: list[str]) -> str:
    """`a.b.c` with blanks, continuations and comments between its parts and parentheses around a head."""
    grouped = rng.randint(0, len(names))
    out = "(" * (grouped > 0) + names[0]
    for index, name in enumerate(names[1:], 1):
        if index == grouped:
            out += ")"
        inside = [".", " . ", ".\\\n    ", "\n    .", "  # a comment\n    ."] if index < grouped else [".", " . ", ".\\\n    "]
        out += rng.choice(inside) + name
    return out + (")" if grouped == len(names) else "")


#: (import statement, local name, attributes from it to the skip module)
BINDINGS = [("import torch", "torch", ["distributed", "pipeline", "sync", "skip"]),
            ("import torch as T", "T", ["distributed", "_pipeline", "sync", "skip"]),
            ("import torch.distributed as D", "D", ["pipeline", "sync", "skip"]),
            ("from torch import distributed", "distributed", ["pipeline", "sync", "skip"]),
            ("from torch.distributed.pipeline.sync import skip", "skip", []),
            ("import torchgpipe", "torchgpipe", ["skip"]), ("import fairscale as fs", "fs", ["nn", "pipe", "skip"])]


def prefilter_spellings(rng: random.Random) -> Tree:
    """The API reached through an import in one of many forms and an attribute chain in one of
    many spellings: the prefilter must pass every file the analysis has findings in (the
    prefilter oracle)."""
    statement, local, parts = rng.choice(BINDINGS)
    form = rng.choice(["{}\n", "try:\n    {}\nexcept ImportError:\n    raise\n", "x = 1; {}\n", "\ufeff{}\n",
                       "if True:\n    {}\n", '"""Doc."""\n{}  # the API\n'])
    body = LAYER.replace("{api}skippable", _chain(rng, [local, *parts, "skippable"])).replace(
        "{api}stash", _chain(rng, [local, *parts, "stash"]))
    return {"model.py": (form.format(statement) + body).encode()}


def interrupted_parse(rng: random.Random) -> Tree:
    """A fixture, mutated, whose parse is interrupted at a random traced event (a trace function's
    KeyboardInterrupt or a SIGINT), as Ctrl-C in an editor's server or a pytest run would."""
    tree = mutate_fixture(rng)
    how, stage = rng.choice(["raise", "signal"]), rng.choice(["first", "later"])
    return {**tree, "interrupt.txt": f"{rng.random():.6f} {how} {stage}\n".encode()}


GENERATORS: list[Callable[[random.Random], Tree]] = [
    mutate_fixture, deep_sibling, large_constants, syntax_error_after_long_line, odd_file,
    control_characters, encoding_and_line_breaks, standard_input, prefilter_spellings, git_config_trap,
    interrupted_parse,
]


def _limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_S, CPU_S + 5))  # SIGXCPU at CPU_S, then SIGKILL


def run_one(tree: Tree, python: str = sys.executable) -> list[str]:
    """Lint the tree with skiplint and with flake8; the problems found (empty when all is well)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="skiplint-fuzz-") as root:
        for name, data in tree.items():
            Path(root, name).parent.mkdir(parents=True, exist_ok=True)
            Path(root, name).write_bytes(data)
        for tool in (["-m", "skiplint", "--isolated", "-j", "1", "."],
                     ["-m", "flake8", "--isolated", "-j", "1", "--select", "SKP", "."]):
            started = time.monotonic()
            try:
                done = subprocess.run([python, *tool], cwd=root, capture_output=True, timeout=WALL_S,
                                      preexec_fn=_limit, env={**os.environ, "PYTHONHASHSEED": "0"})
            except subprocess.TimeoutExpired:
                problems.append(f"{tool[1]}: over {WALL_S} s")
                continue
            seconds = time.monotonic() - started
            stderr = done.stderr.decode("utf-8", "replace")
            if done.returncode == -signal.SIGXCPU:
                problems.append(f"{tool[1]}: over {CPU_S} s of CPU time")
            elif done.returncode < 0:
                problems.append(f"{tool[1]}: killed by signal {-done.returncode} after {seconds:.1f} s")
            elif done.returncode not in (0, 1, 2) or (tool[1] == "flake8" and done.returncode == 2):
                problems.append(f"{tool[1]}: exit {done.returncode}: {stderr[-300:]}")
            if "failed during execution" in stderr or ("Traceback" in stderr and (
                    tool[1] == "skiplint" or _through_skiplint(stderr))):
                problems.append(f"{tool[1]}: {stderr.strip().splitlines()[-1][:300]}")
            for sprung in (Path(root, TRAP_FILE), Path(root, "inner", TRAP_FILE)):
                if sprung.exists():
                    sprung.unlink()
                    problems.append(f"{tool[1]}: ran a command from the tree's git configuration")
    return problems


def _positions(out: bytes) -> list[str]:
    """A report as `line:col: CODE` items: what every door must agree on (a message may say
    more where it knows more, as a file's size)."""
    found = []
    for line in out.decode("utf-8", "replace").splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4:
            found.append(f"{parts[1]}:{parts[2]}:{parts[3].split()[0] if parts[3].split() else ''}")
    return sorted(found)


def doors_agree(tree: Tree, python: str = sys.executable) -> list[str]:
    """The path (-j 1), standard input and flake8 read model.py alike: the same findings at the
    same places, and the same exit status for the two CLI doors; flake8 shows what Python cannot
    compile as its own E999, so it is compared where the CLI checked the file."""
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="skiplint-fuzz-") as root:
        for name, data in tree.items():
            Path(root, name).write_bytes(data)
        runs = {}
        for door, argv, stdin in (
                ("path", ["-m", "skiplint", "--isolated", "-j", "1", "model.py"], None),
                ("stdin", ["-m", "skiplint", "--isolated", "-", "--stdin-display-name", "model.py"], tree["model.py"]),
                ("flake8", ["-m", "flake8", "--isolated", "-j", "1", "--select", "SKP", "model.py"], None)):
            try:
                runs[door] = subprocess.run([python, *argv], cwd=root, input=stdin, capture_output=True,
                                            timeout=WALL_S, preexec_fn=_limit, env={**os.environ, "PYTHONHASHSEED": "0"})
            except subprocess.TimeoutExpired:
                problems.append(f"{door}: over {WALL_S} s")
        if problems:
            return problems
        path, stdin, flake8 = runs["path"], runs["stdin"], runs["flake8"]
        if (_positions(path.stdout), path.returncode) != (_positions(stdin.stdout), stdin.returncode):
            problems.append(f"path and stdin differ: {_positions(path.stdout)} {path.returncode} / "
                            f"{_positions(stdin.stdout)} {stdin.returncode}")
        # flake8 drops a file's whole report when one of its plugins raises: pyflakes' recursion
        # on a long chain of `not` (seed 10537) silences skiplint's findings there too.
        other_plugin_failed = re.search(rb'"(?!skiplint)[^"]*" failed during execution', flake8.stdout + flake8.stderr)
        if (b"SKP90" not in path.stdout and flake8.returncode in (0, 1) and not other_plugin_failed
                and _positions(path.stdout) != _positions(flake8.stdout)):
            problems.append(f"path and flake8 differ: {_positions(path.stdout)} / {_positions(flake8.stdout)}")
        for door, done in runs.items():
            stderr = done.stderr.decode("utf-8", "replace")
            if "Traceback" in stderr and (door != "flake8" or _through_skiplint(stderr)):
                problems.append(f"{door}: {stderr.strip().splitlines()[-1][:300]}")
    return problems


#: Run in a child: the prefilter's verdict on model.py and the analysis' findings all the same.
PREFILTER_ORACLE = """\
import sys
from skiplint import engine, prefilter, sources
data = open(sys.argv[1], "rb").read()
text = sources.decode(data)
if not prefilter.wanted(data, "model.py") or not prefilter.wanted(text, "model.py"):
    found = [d.code for d in engine.check_text(text, "model.py", prefiltered=True).diagnostics
             if d.code not in ("SKP900", "SKP902")]
    if found:
        print("skipped by the prefilter, with findings:", found)
"""


def prefilter_never_skips_findings(tree: Tree, python: str = sys.executable) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="skiplint-fuzz-") as root:
        for name, data in tree.items():
            Path(root, name).write_bytes(data)
        try:
            done = subprocess.run([python, "-c", PREFILTER_ORACLE, "model.py"], cwd=root, capture_output=True,
                                  timeout=WALL_S, preexec_fn=_limit)
        except subprocess.TimeoutExpired:
            return [f"prefilter oracle: over {WALL_S} s"]
    out = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
    return [f"prefilter oracle: {out.splitlines()[-1][:300]}"] if out or done.returncode else []


#: Run in a child: parse model.py with a KeyboardInterrupt at the N-th traced event (N in
#: interrupt.txt; signal.raise_signal when the file says so, as Ctrl-C does), then check that
#: libcst is whole for everyone else and that the next parse, in another thread, ends and is right.
INTERRUPT_ORACLE = """\
import hashlib, os, signal, sys, threading
import libcst as cst
from skiplint import parsing, sources
data = open("model.py", "rb").read()
def fresh():  # a new text object each time: the guard's scan remembers the last one it accepted
    return sources.decode(data)
fraction, how, stage = sys.argv[1:4] if len(sys.argv) > 1 else open("interrupt.txt").read().split()
def parse():
    try:
        return parsing.parse_module(fresh()).code
    except parsing.ParseFailure as failure:
        return "ParseFailure: " + str(failure)
counted = [0]
def count(frame, kind, arg):
    counted[0] += 1
    return count
if stage == "later":  # the first parse installs skiplint's hooks; count the events of a later one
    parse()
    sys.settrace(count)
    try:
        parse()
    finally:
        sys.settrace(None)
left = [1 + int(float(fraction) * (counted[0] or 3000))]
landed = []
def trace(frame, kind, arg):
    left[0] -= 1
    if left[0] == 0:
        landed.append(kind)
        if how == "signal":
            signal.raise_signal(signal.SIGINT)
        else:
            raise KeyboardInterrupt
    return trace
signal.signal(signal.SIGINT, signal.default_int_handler)
if how != "none":
    sys.settrace(trace)
    try:
        parse()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
try:
    cst.Name("")
    print("libcst left unvalidating: a hand-built node with an empty name was accepted")
except cst.CSTValidationError:
    pass
done = []
other = threading.Thread(target=lambda: done.append(parse()), daemon=True)
other.start()
other.join(timeout=60)
if not done:
    print("the parse after the interrupted one did not end")
else:
    sys.stderr.write("RESULT " + hashlib.sha256(done[0].encode("utf-8", "surrogatepass")).hexdigest() + "\\n")
if os.environ.get("SKIPLINT_FUZZ_VERBOSE"):
    sys.stderr.write(f"interrupt at {left[0]} more, landed {landed}, of {counted[0]} events\\n")
"""


def parse_survives_an_interrupt(tree: Tree, python: str = sys.executable) -> list[str]:
    """The parse after an interrupted one ends, gives what a parse in a process that was never
    interrupted gives, and libcst validates the nodes anyone else builds."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="skiplint-fuzz-") as root:
        for name, data in tree.items():
            Path(root, name).write_bytes(data)
        for argv in ([], ["0", "none", "first"]):
            try:
                runs.append(subprocess.run([python, "-c", INTERRUPT_ORACLE, *argv], cwd=root, capture_output=True,
                                           timeout=WALL_S, preexec_fn=_limit))
            except subprocess.TimeoutExpired:
                return [f"interrupt oracle: over {WALL_S} s"]
    problems = []
    results = []
    for done in runs:
        out = done.stdout.decode("utf-8", "replace").strip()
        if out or done.returncode:
            problems.append(f"interrupt oracle: {(out or done.stderr.decode('utf-8', 'replace')).splitlines()[-1][:300]}")
        results.append([line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.startswith("RESULT ")])
    if not problems and results[0] != results[1]:
        problems.append("interrupt oracle: the parse after the interrupted one differs from an uninterrupted one")
    return problems


#: Checks beyond "ends cleanly" for the inputs of some generators.
ORACLES: Dict[str, list[Callable[[Tree, str], list[str]]]] = {
    "encoding_and_line_breaks": [doors_agree],
    "standard_input": [doors_agree],
    "prefilter_spellings": [prefilter_never_skips_findings, doors_agree],
    "interrupted_parse": [parse_survives_an_interrupt],
}


def check_case(name: str, tree: Tree, python: str = sys.executable) -> list[str]:
    """Everything wrong with one input: run_one's checks and its generator's oracles."""
    problems = run_one(tree, python)
    for oracle in ORACLES.get(name, ()):
        problems.extend(oracle(tree, python))
    return problems


def _through_skiplint(traceback: str) -> bool:
    """Whether a traceback passes through skiplint's code (its frames by module path, not by a
    folder named skiplint/, which a clone or a tox environment may be). flake8 itself can die before
    any plugin runs (CPython 3.12's ast.parse raises RecursionError on a long enough expression, 3.9
    and 3.10 ValueError on a NUL byte): those crashes are flake8's, not the plugin's."""
    from tests.frames import plugin_frames

    return bool(plugin_frames(traceback))


def case(seed: int) -> tuple[str, Tree]:
    rng = random.Random(seed)
    generator = GENERATORS[seed % len(GENERATORS)]
    return generator.__name__, generator(rng)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="how many inputs (default 200)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--save", default="fuzz-failures", help="where failing trees are written")
    args = parser.parse_args(argv)
    failures = 0
    for seed in range(args.start, args.start + args.count):
        name, tree = case(seed)
        problems = check_case(name, tree)
        if problems:
            failures += 1
            where = Path(args.save, f"{seed}-{name}")
            where.mkdir(parents=True, exist_ok=True)
            for file, data in tree.items():
                (where / file).write_bytes(data)
            print(f"seed {seed} ({name}): " + "; ".join(problems), flush=True)
    print(f"{args.count} inputs, {failures} failing", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
