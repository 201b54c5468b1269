"""What the skiplint plugin costs inside one flake8 run: its own CPU time against the process's.

    python benchmarks/plugin_share.py TREE [flake8 options ...]

Runs `flake8 --isolated --exit-zero -j 1 TREE` in this process (flake8 and skiplint must be
installed in this interpreter) with the plugin's `run` timed around each call, and prints the
process's CPU time, the plugin's part of it and the cycle collector's time. Wall-clock pairs of
whole flake8 runs over the torch package spread by 10% on a shared machine; this figure is the
plugin's own share, which such pairs cannot resolve below a few percent.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from typing import Any, Iterator


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    from flake8.main import cli

    from skiplint.flake8_plugin import SkiplintChecker

    plugin = [0.0, 0]
    collector = [0.0, 0.0]
    original = SkiplintChecker.run

    def timed_run(self: SkiplintChecker) -> Iterator[Any]:
        start = time.process_time()
        try:
            yield from original(self)
        finally:
            plugin[0] += time.process_time() - start
            plugin[1] += 1

    def on_collect(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collector[1] = time.process_time()
        else:
            collector[0] += time.process_time() - collector[1]

    SkiplintChecker.run = timed_run  # type: ignore[method-assign]
    gc.callbacks.append(on_collect)
    started, wall = time.process_time(), time.perf_counter()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        status = cli.main(["--isolated", "--exit-zero", "-j", "1", *argv])
    cpu, wall = time.process_time() - started, time.perf_counter() - wall
    gc.callbacks.remove(on_collect)
    print(f"flake8 -j 1 {' '.join(argv)}: {wall:.2f} s wall, {cpu:.2f} s CPU; "
          f"skiplint plugin {plugin[0]:.3f} s over {plugin[1]} files ({100 * plugin[0] / cpu:.2f}% of the CPU); "
          f"cycle collector {collector[0]:.2f} s")
    return status or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
