"""How the pre-commit hook should run skiplint: `pre-commit run` on a 30-file commit, four ways.

    python benchmarks/hook_jobs.py [--rounds N]

A throw-away git repository gets 30 files of the bundled fixtures, staged as a commit would stage
them, and four local hooks that differ only in how skiplint is started:

- `parallel, every core`: require_serial false, `skiplint` (each of pre-commit's batches starts
  a process pool on every core);
- `parallel, -j1`: require_serial false, `skiplint -j1` (the hook as shipped);
- `serial, every core`: require_serial true, `skiplint` (one process, one pool);
- `serial, -j1`: require_serial true, `skiplint -j1` (one process, no pool).

Rounds are interleaved (one run of each per round, in rotating order) and the medians printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SKIPLINT = str(Path(sys.executable).with_name("skiplint"))

VARIANTS = {
    "parallel, every core": ("false", ""),
    "parallel, -j1": ("false", " -j1"),
    "serial, every core": ("true", ""),
    "serial, -j1": ("true", " -j1"),
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--files", type=int, default=30)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="skiplint-hook-"))
    try:
        sources = sorted(p for p in (REPO / "fixtures").glob("*.py"))[:args.files]
        for i, source in enumerate(sources):
            shutil.copy(source, work / f"m{i:02d}_{source.name}")
        env = {**os.environ, "PRE_COMMIT_HOME": str(work / ".pre-commit-home")}
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
        subprocess.run(["git", "add", "."], cwd=work, check=True)
        files = [p.name for p in sorted(work.glob("*.py"))]
        configs = {}
        for name, (serial, extra) in VARIANTS.items():
            config = work / f".hook-{len(configs)}.yaml"
            config.write_text(
                "repos:\n  - repo: local\n    hooks:\n      - id: skiplint\n        name: skiplint\n"
                f"        entry: {SKIPLINT} --isolated{extra}\n        language: system\n"
                f"        types_or: [python, pyi]\n        require_serial: {serial}\n", encoding="utf-8")
            configs[name] = config
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        names = list(VARIANTS)
        for round_ in range(args.rounds):
            order = names[round_ % len(names):] + names[:round_ % len(names)]
            for name in order:
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "pre_commit", "run", "-c", str(configs[name]),
                                       "--files", *files], cwd=work, env=env, capture_output=True, text=True)
                times[name].append(time.perf_counter() - start)
                if done.returncode not in (0, 1):
                    print(done.stdout, done.stderr, file=sys.stderr)
                    return 2
        print(f"{len(files)} files, {args.rounds} interleaved rounds, {os.cpu_count()} CPUs")
        for name in names:
            values = times[name]
            print(f"{name:24} median {statistics.median(values):.3f} s  (min {min(values):.3f}, max {max(values):.3f})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
