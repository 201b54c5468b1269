"""Fuzzing `skiplint fix` against a file system that fails and changes under it, and the reading
of source against Python's own: generators, their oracles, and a runner.

Each input is a small tree (fixable models, a file outside the tree, links) and a hostile plan:
a file-size limit (RLIMIT_FSIZE, a full disk as a process meets it), a file-system call that
fails at a random step (ENOSPC, EDQUOT, EIO from mkstemp, write, fsync, chmod or replace), or a
file saved, deleted or swapped for a link between the fix's read and its write. A child process
(`python -c DRIVER`) builds the tree, computes what `skiplint fix` makes of each file with nothing
hostile, runs the CLI in process under the plan and checks what it left: every file holds what
it held, its complete fix, or what was saved meanwhile, never a part of one; nothing outside the
tree changed; no temporary file is left; the mode is kept; each file not written is one line
naming it and the exit status says why (0 done, 1 changed while fixing, 2 could not be written or
fixed); no traceback, no "please report". The encodings generator writes a model behind a random
coding cookie, BOM and codec: the CLI reports SKP900 exactly where Python refuses the bytes (for
a file that names the API), standard input and flake8 say the same, and `fix` leaves such a file
alone, is a no-op the second time, and writes what `fix -` prints.

    python -m tests.fuzz.fixfs --count 2000 --start 0     # failing inputs are saved under fuzz-failures/
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional

REPO = Path(__file__).resolve().parents[2]
FIXABLE = sorted(p for code in ("skp106", "skp107", "skp401") for p in (REPO / "fixtures").glob(f"{code}_*.py"))
#: The limits of each child: wall-clock seconds (generous for a loaded machine) and address space.
WALL_S = 300
MEMORY_BYTES = 1 << 30

Spec = Dict[str, Any]

#: The steps of a write that the failing plan makes fail, and the errors it raises there.
STEPS = ("mkstemp", "write", "fsync", "chmod", "replace")
ERRORS = ("ENOSPC", "EDQUOT", "EIO", "EROFS")
#: What the changing plan does to a file between the fix's read and its write.
CHANGES = ("save", "truncate", "delete", "link", "same")


def _model(rng: random.Random) -> str:
    text = rng.choice(FIXABLE).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(lines))
        what = rng.randrange(4)
        if what == 0:
            lines[i] = lines[i].replace("\n", rng.choice(["\r\n", "\r"]))
        elif what == 1:
            lines.insert(i, "# " + "padding " * rng.randint(1, 400) + "\n")
        elif what == 2:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)] + "\n"  # a syntax error, now and then
        else:
            lines.insert(i, rng.choice(["# skiplint: noqa\n", "# flake8: noqa\n", "x = 1  # noqa\n", "\n"]))
    return "".join(lines)


def fix_on_a_hostile_file_system(rng: random.Random) -> Spec:
    files = {}
    for i in range(rng.randint(1, 5)):
        where = rng.choice(["", "pkg/", "pkg/deep/"])
        text = _model(rng)
        encoding = rng.choice(["utf-8", "utf-8", "latin-1"])
        if encoding == "latin-1":
            text = "# -*- coding: latin-1 -*-\n" + text.replace("# expect", "# caf\u00e9 expect", 1)
        files[f"{where}m{i}.py"] = text.encode(encoding, "replace").decode("latin-1")
    plan = rng.choice(["size", "fail", "change", "links", "mixed"])
    spec: Spec = {"files": files, "outside": _model(rng), "modes": {}, "links": {}, "plan": plan}
    for name in files:
        if rng.random() < 0.3:
            spec["modes"][name] = rng.choice([0o600, 0o640, 0o755, 0o444, 0o664])
    if plan in ("links", "mixed"):
        for j in range(rng.randint(1, 3)):
            target = rng.choice(["../outside/victim.py", "m0.py", "missing.py", "../outside", "pkg"])
            spec["links"][f"link{j}.py"] = target
    if plan in ("size", "mixed"):
        spec["fsize"] = rng.choice([0, 1, 512, 4096, 9000, 1 << 20])
    if plan in ("fail", "mixed"):
        spec["fail"] = {"step": rng.choice(STEPS), "error": rng.choice(ERRORS), "after": rng.randint(0, 3)}
    if plan in ("change", "mixed"):
        spec["change"] = {name: rng.choice(CHANGES) for name in files if rng.random() < 0.6}
    spec["argv"] = rng.choice([["fix", "--isolated", "tree"], ["check", "--fix", "--isolated", "-j", "1", "tree"],
                               ["fix", "--isolated", "tree/m0.py", "tree/pkg"]])
    return spec


#: Coding declarations, the codec the rest of the file is written in (None: as declared), where.
COOKIES = ["utf-8", "utf8", "latin-1", "cp1252", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-7",
           "cp037", "rot13", "hex", "punycode", "idna", "ascii", "koi8-r", "shift_jis", "euc-jp", "klingon",
           "UTF-16", "utf_16", "mbcs", "unicode-escape", "raw-unicode-escape", "uu"]
API = "from torchgpipe.skip import skippable, stash\nfrom torch import nn\n"
BODY = ('\n\n@skippable(stash="skip")\nclass Bare(nn.Module):\n    def forward(self, x):\n'
        '        stash("skip", x)  # caf\u00e9\n        yield stash("skip", x)\n        return x\n')


def encodings(rng: random.Random) -> Spec:
    cookie = rng.choice(COOKIES)
    line = rng.choice([f"# coding: {cookie}", f"# -*- coding: {cookie} -*-", f"# vim: set fileencoding={cookie} :"])
    first = rng.choice(["", "#!/usr/bin/env python\n"])
    text = first + line + rng.choice(["\n", "\r\n"]) + API + BODY + rng.choice(["", "x = 1\n", "x = 12\n"])
    how = rng.choice(["declared", "utf-8", "declared-bom", "odd"])
    try:
        data = text.encode(cookie if how.startswith("declared") else "utf-8", "replace")
    except (LookupError, UnicodeError):  # no such codec, or one without a "replace" (idna)
        data = text.encode("utf-8")
    if how == "declared-bom":
        data = b"\xef\xbb\xbf" + data
    elif how == "odd":
        data = data + rng.choice([b"", b"\n", b"#\n", b"\xe9\n", b"\xed\xa0\x80\n"])
    return {"model": data.decode("latin-1"), "plan": "encodings"}


GENERATORS: list[Callable[[random.Random], Spec]] = [fix_on_a_hostile_file_system, encodings]


def case(seed: int) -> tuple[str, Spec]:
    rng = random.Random(seed)
    generator = GENERATORS[seed % len(GENERATORS)]
    return generator.__name__, generator(rng)


#: The child: builds the tree in its working directory, runs the plan, prints one JSON list of
#: the problems it found.
DRIVER = r'''
import errno, json, os, resource, stat, sys, tempfile
from pathlib import Path
spec = json.load(open(sys.argv[1]))
problems = []
from skiplint import cli, config, fix, parallel, prefilter, sources
from tests import inprocess

def run(argv, stdin=None):
    status, out, err = inprocess._call(cli.main, argv, ".", stdin)
    err = err.decode("utf-8", "replace")
    if "Traceback" in err or "please report" in err or "internal error" in err:
        problems.append(f"{argv}: {err.strip().splitlines()[-1][:300]}")
    if status not in (0, 1, 2):
        problems.append(f"{argv}: exit {status}")
    return status, out, err

def tmp_left():
    return [str(p) for p in Path(".").rglob("*") if "skiplint-tmp" in p.name]

if spec["plan"] == "encodings":
    data = spec["model"].encode("latin-1")
    Path("model.py").write_bytes(data)
    try:
        compile(data, "model.py", "exec", dont_inherit=True)
        python = None
    except (SyntaxError, ValueError) as error:
        python = str(error)
    status, out, err = run(["--isolated", "-j", "1", "model.py"])
    found = out.decode().splitlines()
    unchecked = [line for line in found if " SKP900 " in line]
    named = prefilter.wanted(data, "model.py")
    if named and python is not None and not unchecked:
        problems.append(f"Python refuses it ({python}) and the CLI says {found or 'nothing'}")
    decoding = ("not valid", "bad encoding", "unknown encoding", "is not a text encoding", "contains NUL")
    if python is None and any(word in line for line in unchecked for word in decoding):
        problems.append(f"Python reads it and the CLI says {unchecked}")
    s_status, s_out, _ = run(["--isolated", "-", "--stdin-display-name", "model.py"], stdin=data)
    if (s_status, s_out.decode().splitlines()) != (status, found):
        problems.append(f"standard input says {s_out.decode().splitlines()} {s_status}, the path {found} {status}")
    try:
        flake8 = [l for l in inprocess.flake8(["--isolated", "-j", "1", "--select", "SKP9,E9", "model.py"], ".").stdout.splitlines()]
    except LookupError:  # flake8 itself cannot open a file whose codec is no text encoding
        flake8 = None
    if flake8 is not None and unchecked and unchecked[0].startswith("model.py:1:1: SKP900") and \
            not (flake8 == unchecked[:1] or any(" E9" in l for l in flake8)):
        problems.append(f"flake8 says {flake8}, the CLI {unchecked}")
    f_status, _, f_err = run(["fix", "--isolated", "model.py"])
    after = Path("model.py").read_bytes()
    if unchecked and after != data:
        problems.append("fix rewrote a file the CLI cannot check")
    if after != data:
        d_status, d_out, _ = run(["fix", "--isolated", "-"], stdin=data)
        if d_out != after:
            problems.append("fix - prints other bytes than fix writes")
        again = run(["fix", "--isolated", "model.py"])
        if Path("model.py").read_bytes() != after:
            problems.append("a second fix changed the file again")
    print(json.dumps(problems))
    sys.exit(0)

# -- fix on a hostile file system --
tree, outside = Path("tree"), Path("outside")
outside.mkdir()
victim = outside / "victim.py"
victim.write_text(spec["outside"], encoding="utf-8")
originals = {}
for name, text in spec["files"].items():
    path = tree / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("latin-1"))
    originals[name] = path.read_bytes()
for name, mode in spec["modes"].items():
    os.chmod(tree / name, mode)
for name, target in spec["links"].items():
    os.symlink(target, tree / name)
victim_bytes = victim.read_bytes()
modes = {name: stat.S_IMODE(os.stat(tree / name).st_mode) for name in spec["files"]}
expected = {}
for name, data in originals.items():
    outcome, fixed = fix.fix_bytes(data, str(tree / name), config.Config(), "torchgpipe", fix.FIXABLE)
    expected[name] = (fixed, outcome.error)

saved = {}
changed = spec.get("change", {})
limit = spec.get("fsize")
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
real_fix_bytes = fix.fix_bytes
def hostile_fix_bytes(data, path, *args, **kwargs):
    result = real_fix_bytes(data, path, *args, **kwargs)
    if limit is not None:  # the editor that saves meanwhile is another process: not under the limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    try:
        change(data, path)
    finally:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    return result
def change(data, path):
    name = os.path.relpath(path, "tree").replace(os.sep, "/")
    what = changed.get(name)
    if what == "save":
        saved[name] = data + b"# saved meanwhile\n"
        Path(path).write_bytes(saved[name])
    elif what == "truncate":
        saved[name] = b""
        Path(path).write_bytes(b"")
    elif what == "delete":
        os.unlink(path)
        saved[name] = None
    elif what == "link":
        os.unlink(path)
        os.symlink(os.path.abspath(victim), path)
        saved[name] = "link"
    elif what == "same":
        Path(path).write_bytes(data)  # saved again, the same bytes: still what was read
fix.fix_bytes = hostile_fix_bytes

failures = []
fail = spec.get("fail")
if fail:
    calls = [0]
    code = getattr(errno, fail["error"])
    def failing(real):
        def call(*args, **kwargs):
            calls[0] += 1
            if calls[0] > fail["after"]:
                failures.append(fail["step"])
                raise OSError(code, os.strerror(code))
            return real(*args, **kwargs)
        return call
    step = fail["step"]
    if step == "mkstemp":
        tempfile.mkstemp = failing(tempfile.mkstemp)
    elif step == "write":
        real_fdopen = os.fdopen
        class Refusing:
            def __init__(self, handle): self.handle = handle
            def __enter__(self): return self
            def __exit__(self, *exc): self.handle.close()
            def write(self, data): return failing(self.handle.write)(data)
            def __getattr__(self, name): return getattr(self.handle, name)
        os.fdopen = lambda *a, **k: Refusing(real_fdopen(*a, **k))
    elif step == "fsync":
        os.fsync = failing(os.fsync)
    elif step == "chmod":
        os.chmod = failing(os.chmod)
    else:
        os.replace = failing(os.replace)

if limit is not None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
try:
    status, out, err = run(spec["argv"])
finally:
    if limit is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    fix.fix_bytes = real_fix_bytes

said = err.splitlines()
if victim.read_bytes() != victim_bytes:
    problems.append("the file outside the tree was changed")
if tmp_left():
    problems.append(f"temporary files left: {tmp_left()}")
roots = spec["argv"][spec["argv"].index("--isolated") + 1:]
if roots[:2] == ["-j", "1"]:
    roots = roots[2:]
worst = 0
# A file that a link in the tree leads to is fixed through the link first, then read again, fixed:
# what it says (and the status) follow from that order, not from this file alone.
aliased = {os.path.normpath(os.path.join(os.path.dirname(link), target)).replace(os.sep, "/")
           for link, target in spec["links"].items()}
loose = False
for name, original in originals.items():
    path = tree / name
    if name in aliased:
        loose = True
    named = any(name == r[len("tree/"):] or r == "tree" or name.startswith(r[len("tree/"):] + "/") for r in roots)
    fixed, error = expected[name]
    shown = str(path)
    lines = [l for l in said if l.startswith(shown + ":")]
    if name in saved:
        now = saved[name]
        if now is None:
            if path.exists():
                problems.append(f"{name}: deleted meanwhile, and written again")
            if named and fixed != original and error is None and name not in aliased:
                if any("changed while fixing; run again" in l for l in lines):
                    worst = max(worst, 1)
                else:
                    problems.append(f"{name}: deleted meanwhile, and not said: {lines}")
            continue
        if now == "link":
            if not path.is_symlink():
                problems.append(f"{name}: swapped for a link meanwhile, and replaced by a file")
            if named and fixed != original and error is None and name not in aliased:
                if any("could not write the fix" in l for l in lines):
                    worst = 2
                elif any("changed while fixing; run again" in l for l in lines):
                    worst = max(worst, 1)
                elif not any("outside the paths given" in l for l in lines):
                    problems.append(f"{name}: swapped for a link to outside meanwhile, and not said: {lines}")
            continue
        if path.read_bytes() != now:
            problems.append(f"{name}: saved meanwhile, and the save was lost")
        if named and fixed != original and error is None and name not in aliased:
            # A write that fails before the change is seen says so instead (both leave the save).
            if any("could not write the fix" in l for l in lines):
                worst = 2
            elif any("changed while fixing; run again" in l for l in lines):
                worst = max(worst, 1)
            else:
                problems.append(f"{name}: changed meanwhile, and not said: {lines}")
        continue
    now = path.read_bytes()
    if now not in (original, fixed):
        problems.append(f"{name}: holds neither what it held nor its fix ({len(now)} bytes of {len(original)}/{len(fixed)})")
    if not named:
        if now != original:
            problems.append(f"{name}: not named, and written")
        continue
    if error is not None:
        worst = 2
        continue
    if fixed == original:
        continue
    if now == original:
        if not any("could not write the fix" in l for l in lines):
            problems.append(f"{name}: left unfixed without a reason: {lines}")
        worst = 2
    elif stat.S_IMODE(os.stat(path).st_mode) != modes[name]:
        problems.append(f"{name}: its mode changed")
    if limit is not None and now == fixed and len(fixed) > limit:
        problems.append(f"{name}: written past the file-size limit")
for name, target in spec["links"].items():
    if not os.path.islink(tree / name):
        problems.append(f"{name}: a link, replaced")
if spec["argv"][0] == "fix" and not loose and status != worst and not (worst == 0 and status == 2 and "tree/link" in err):
    if not (status == 2 and any("could not fix this file" in l for l in said)):
        problems.append(f"exit {status}, expected {worst}: {said[-3:]}")
print(json.dumps(problems))
'''


def check_case(name: str, spec: Spec, python: str = sys.executable) -> list[str]:
    """Everything wrong with one input, from a child that ran it."""
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))

    with tempfile.TemporaryDirectory(prefix="skiplint-fuzz-fix-") as root:
        Path(root, "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        # SKIPLINT_FUZZ_CHECKOUT: run another checkout's skiplint (to see that the oracles fail on
        # an older one); by default this one.
        checkout = os.environ.get("SKIPLINT_FUZZ_CHECKOUT", str(REPO))
        env = {**os.environ, "PYTHONPATH": checkout, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
        try:
            done = subprocess.run([python, "-c", DRIVER, "spec.json"], cwd=root, capture_output=True,
                                  timeout=WALL_S, preexec_fn=limit, env=env)
        except subprocess.TimeoutExpired:
            return [f"over {WALL_S} s"]
        finally:
            for directory, _, _ in os.walk(root):  # a plan may leave read-only files behind
                os.chmod(directory, 0o755)
    out = done.stdout.decode("utf-8", "replace").strip().splitlines()
    if done.returncode != 0 or not out:
        return [f"the child ended with {done.returncode}: {done.stderr.decode('utf-8', 'replace')[-400:]}"]
    try:
        problems: list[str] = json.loads(out[-1])
    except ValueError:
        return [f"the child printed {out[-1][:300]!r}"]
    return problems


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="how many inputs (default 200)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--save", default="fuzz-failures", help="where failing inputs are written")
    args = parser.parse_args(argv)
    failures = 0
    started = time.monotonic()
    for seed in range(args.start, args.start + args.count):
        name, spec = case(seed)
        problems = check_case(name, spec)
        if problems:
            failures += 1
            Path(args.save).mkdir(parents=True, exist_ok=True)
            Path(args.save, f"fix-{seed}-{name}.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
            print(f"seed {seed} ({name}): " + "; ".join(problems), flush=True)
    print(f"{args.count} inputs, {failures} failing, {time.monotonic() - started:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
