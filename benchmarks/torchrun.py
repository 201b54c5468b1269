"""torchrun against one process: the same `pipelining` verify of the U-Net fixture, both ways.

    python benchmarks/torchrun.py [--pairs 5] [--nproc 2] [--target fixtures/runtime/unet.py:build]

A: `python -m skiplint verify TARGET --backend pipelining` (the parent starts its own stage
processes). B: `python -m torch.distributed.run --standalone --nproc-per-node N -m skiplint verify
TARGET`. Each is a whole command, timed with time.perf_counter; the runs alternate A B A B ... so
that a change in the machine's load falls on both, and the figure is the median of the per-pair
ratios B/A. Both must exit 0 with one JSON report, or the pair is reported and the script exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def _timed(command: list[str]) -> tuple[float, int, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    env.setdefault("OMP_NUM_THREADS", "1")
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode == 0:
        json.loads(proc.stdout)
    return seconds, proc.returncode, proc.stderr[-2000:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--target", default="fixtures/runtime/unet.py:build")
    args = parser.parse_args()
    verify = ["-m", "skiplint", "verify", args.target, "--format", "json"]
    single = [sys.executable, *verify, "--backend", "pipelining"]
    launched = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(args.nproc),
                *verify]
    ratios = []
    print(f"{'pair':>4} {'one process (s)':>16} {'torchrun (s)':>13} {'ratio':>6}")
    for pair in range(1, args.pairs + 1):
        a, a_code, a_err = _timed(single)
        b, b_code, b_err = _timed(launched)
        if a_code or b_code:
            print(f"pair {pair}: exit {a_code} (one process), {b_code} (torchrun)\n{a_err}\n{b_err}", file=sys.stderr)
            return 1
        ratios.append(b / a)
        print(f"{pair:>4} {a:>16.2f} {b:>13.2f} {b / a:>6.2f}", flush=True)
    print(f"median ratio torchrun / one process over {args.pairs} pairs: {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
