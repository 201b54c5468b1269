"""`skiplint server`: latency from didChange to publishDiagnostics, memory over many edits, start-up.

    python benchmarks/server.py [--pairs 40] [--edits 1000] [--json OUT] [--markdown]

A real client (pygls', tests/lsp_harness.py) drives `python -m skiplint server` over stdio, as an
editor does. Latency: the time from sending a didChange to receiving the publishDiagnostics of that
version, on the bundled U-Net fixture (fixtures/compositions/unet.py) and on a generated 1,000-line
model module (each edit changes a comment, so every analysis is a real one, of a text never seen).
Each edit follows a pause longer than the debounce, as a person's edits do: the debounce only
holds back edits typed faster than it (tests/test_server.py's rapid edits). It is paired with the
in-process analysis of the same text (skiplint.lsp.features.check: the stdin door's engine, as
the server calls it, in this warm process), A B A B ...; the target is the median of the pair
ratios. Memory: the server's resident set after 10 edits and after 1,000 (debounce 0, so that
they go fast). Start-up: from starting the process to the answer to `initialize`, wall time and the
server's CPU time.

Needs the lsp extra in the interpreter that runs it (benchmarks/run.py runs it in its own
environment, with the checkout installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests"))  # the client; skiplint itself is the installed one

import generate  # noqa: E402  (benchmarks/generate.py)

#: The limits of issue 31, item 6.
LATENCY_MS, RATIO, MEMORY_RATIO, START_S = 150.0, 1.2, 1.5, 1.0
#: The pause after each publication before the next edit (longer than the 50 ms debounce).
PAUSE_S = 0.2
UNET = REPO / "fixtures" / "compositions" / "unet.py"


def model_module(lines: int = 1000, seed: int = 0) -> str:
    """A realistic model module of about `lines` lines: the generator's layers (skippable ones,
    plain ones, relays), compositions of them, pipes, and a few deliberate mistakes."""
    rng = random.Random(seed)
    parts = [generate._header(rng, "torchgpipe.skip", "from torchgpipe import GPipe")]
    count = 0
    while sum(part.count("\n") for part in parts) < lines - 40:
        parts.append(generate._plain_module(rng, f"Block{count}"))
        parts.append(generate._stash_class(rng, f"Down{count}", f"skip{count}"))
        parts.append(generate._pop_class(rng, f"Up{count}", f"skip{count}"))
        if count % 4 == 3:
            parts.append(generate._buggy_class(rng, f"Broken{count}", f"bad{count}"))
        count += 1
    layers = ", ".join(f"Down{i}(), Block{i}()" for i in range(count)) + ", " + \
        ", ".join(f"Up{i}()" for i in reversed(range(count)))
    parts.append(f'''

def build() -> nn.Sequential:
    return nn.Sequential({layers})


model = build()
pipe = GPipe(model, balance=[{count}, {count}, {count}], chunks=4)
half = GPipe(model, balance=[{count}, {count}], chunks=2)
''')
    return "".join(parts)


def _rss_mb(pid: int) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _cpu_s(pid: int) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


async def _session(root: Path, settings: Optional[dict[str, Any]] = None) -> Any:
    from lsp_harness import Session

    return await Session(root, settings=settings).start()


async def latency(name: str, text: str, pairs: int, root: Path) -> dict[str, Any]:
    """Interleaved pairs: the server's didChange -> publishDiagnostics, then the in-process analysis
    of the same text. Two warm-up edits first."""
    from skiplint import config
    from skiplint.lsp import features

    path = root / name
    path.write_text(text, encoding="utf-8")
    settings = config.Finder().for_file(str(path))
    session = await _session(root)
    server_s: list[float] = []
    inline_s: list[float] = []
    ratios: list[float] = []
    findings = 0
    inline_cpu = 0.0
    server_cpu: list[Optional[float]] = []
    try:
        address = session.open(path, text)
        await session.diagnostics(address, version=1)
        for n in range(2, pairs + 4):
            edited = f"{text}# edit {n}\n"
            await asyncio.sleep(PAUSE_S)
            if n == 4:
                server_cpu.append(_cpu_s(session.process.pid))
            started = time.perf_counter()
            session.change(address, edited, n)
            published = await session.diagnostics(address, version=n)
            served = time.perf_counter() - started
            started, cpu = time.perf_counter(), time.process_time()
            result = features.check(edited, str(path), settings)
            inline = time.perf_counter() - started
            if n >= 4:
                inline_cpu += time.process_time() - cpu
            assert len(result.diagnostics) == len(published.diagnostics), name
            findings = len(result.diagnostics)
            if n >= 4:  # after two warm-up edits
                server_s.append(served)
                inline_s.append(inline)
                ratios.append(served / inline)
        server_cpu.append(_cpu_s(session.process.pid))
    finally:
        await session.stop()
    median = statistics.median(server_s) * 1000
    first, last = server_cpu[0], server_cpu[-1]
    cpu_ms = None if first is None or last is None else (last - first) / len(ratios) * 1000
    return {"target": f"didChange -> publishDiagnostics, {name} ({text.count(chr(10))} lines, {findings} findings)",
            "server_ms": median, "inline_ms": statistics.median(inline_s) * 1000,
            "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "pairs": len(ratios), "holds": median < LATENCY_MS and statistics.median(ratios) <= RATIO,
            "server_cpu_ms": cpu_ms, "inline_cpu_ms": inline_cpu / len(ratios) * 1000}


async def memory(text: str, edits: int, root: Path) -> dict[str, Any]:
    """The server's resident set after 10 edits and after `edits` (each a new text)."""
    path = root / "memory_unet.py"
    path.write_text(text, encoding="utf-8")
    session = await _session(root, {"debounce": 0})
    marks: dict[int, Optional[float]] = {}
    try:
        address = session.open(path, text)
        await session.diagnostics(address, version=1)
        for n in range(2, edits + 2):
            session.change(address, f"{text}# edit {n} {'x' * (n % 97)}\n", n)
            await session.diagnostics(address, version=n)
            if n - 1 in (10, edits):
                marks[n - 1] = _rss_mb(session.process.pid)
    finally:
        await session.stop()
    early, late = marks.get(10), marks.get(edits)
    ratio = late / early if early and late else None
    return {"target": f"server memory after {edits:,} edits / after 10 (U-Net fixture)", "after_10_mb": early,
            f"after_{edits}_mb": late, "late_mb": late, "edits": edits, "ratio": ratio,
            "holds": None if ratio is None else ratio <= MEMORY_RATIO}


async def startup(root: Path, runs: int = 5) -> dict[str, Any]:
    """From starting `skiplint server` to the answer to initialize (the best and the median)."""
    walls, cpus = [], []
    for _ in range(runs):
        started = time.perf_counter()
        session = await _session(root)
        walls.append(time.perf_counter() - started)
        cpu = _cpu_s(session.process.pid)
        if cpu is not None:
            cpus.append(cpu)
        await session.stop()
    return {"target": "start: process started -> initialize answered", "wall_s": statistics.median(walls),
            "wall_best_s": min(walls), "cpu_s": statistics.median(cpus) if cpus else None, "runs": runs,
            "holds": statistics.median(walls) < START_S}


async def measure(pairs: int, edits: int) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        unet = UNET.read_text(encoding="utf-8")
        rows = [await startup(root),
                await latency("unet.py", unet, pairs, root),
                await latency("model_1000_lines.py", model_module(), pairs, root),
                await memory(unet, edits, root)]
    return rows


def render(rows: Sequence[dict[str, Any]]) -> str:
    """The rows for docs/performance.md."""
    def holds(row: dict[str, Any]) -> str:
        return {True: "yes", False: "**no**", None: "not measured"}[row["holds"]]

    start, *latencies, mem = rows
    lines = ["| target | server (median) | in-process analysis (median) | median server / in-process (min-max) "
             "| CPU time per edit, server / in-process | pairs | limit | holds |",
             "|---|---|---|---|---|---|---|---|"]
    for row in latencies:
        cpu = "" if row["server_cpu_ms"] is None else f"{row['server_cpu_ms']:.1f} / {row['inline_cpu_ms']:.1f} ms"
        lines.append(f"| {row['target']} | {row['server_ms']:.1f} ms | {row['inline_ms']:.1f} ms "
                     f"| {row['ratio']:.3f}x ({row['ratio_min']:.3f}-{row['ratio_max']:.3f}) | {cpu} | {row['pairs']} "
                     f"| < {LATENCY_MS:g} ms and <= {RATIO:g}x | {holds(row)} |")
    late = "n/a" if mem["late_mb"] is None else f"{mem['late_mb']:.1f} MB"
    early = "n/a" if mem["after_10_mb"] is None else f"{mem['after_10_mb']:.1f} MB"
    ratio = "n/a" if mem["ratio"] is None else f"{mem['ratio']:.3f}x"
    lines.append(f"| {mem['target']} | {late} | after 10: {early} | {ratio} | | | <= {MEMORY_RATIO:g}x | {holds(mem)} |")
    cpu = "" if start["cpu_s"] is None else f"{start['cpu_s']:.2f} s"
    lines.append(f"| {start['target']} | {start['wall_s']:.2f} s (best of {start['runs']}: "
                 f"{start['wall_best_s']:.2f} s) | | | {cpu} | | < {START_S:g} s | {holds(start)} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40, help="interleaved pairs per latency target (default 40)")
    parser.add_argument("--edits", type=int, default=1000, help="edits for the memory target (default 1000)")
    parser.add_argument("--json", metavar="OUT", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    rows = asyncio.run(measure(args.pairs, args.edits))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=2)
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
