"""The differential oracle: generated skippable programs, run for real and checked statically.

Each program from oracle_programs.py is executed in a worker subprocess (its classes defined, its
Sequential built, its GPipe/Pipe constructed on CPU devices, which runs verify_skippables and
inspect_skip_layout; then forward+backward in training mode and a forward in eval mode) and
checked by skiplint in this process (default codes plus SKP901). The two verdicts are compared:

    agree-clean      skiplint reports nothing and every step runs
    agree-bug        skiplint reports something and some step fails
    false-positive   skiplint reports something and every step runs
    false-negative   skiplint reports nothing and some step fails
    abstained        skiplint reports only SKP901 (a fact it cannot know)
    analyzer-error   skiplint could not check the program (SKP900/SKP902), or it left a
                     composition or class unchecked with no finding to say why
                     (`silent_abstentions`)

A worker runs many programs; one that crashes or hangs loses only the program it was running
(recorded as a failure of stage 'crash' or 'timeout') and a fresh worker takes the rest.

KNOWN_GAPS lists the disagreements that are documented and expected, each keyed by a pattern over
the program's labels and naming the issue item that will close it.

    python benchmarks/oracle.py --n 1000 [--seed 0] [--jobs 2] [--show false-negative]
    python benchmarks/oracle.py --n 300 --planted profiled-skippable
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from oracle_programs import MISTAKES, Program, generate, generate_many  # noqa: E402

OUTCOMES = ("agree-clean", "agree-bug", "false-positive", "false-negative", "abstained", "analyzer-error")
#: Seconds one program may run in a worker (the first also pays for importing torch).
PROGRAM_TIMEOUT = 30.0
STARTUP_TIMEOUT = 120.0


@dataclass(frozen=True)
class KnownGap:
    """A documented disagreement: programs whose labels match `pattern` may show `outcome`."""

    pattern: tuple[tuple[str, str], ...]  # (label, fnmatch pattern)
    outcome: str
    issue: str
    why: str
    #: generate() arguments of programs that exercise the gap (the probes every check run adds).
    probe: tuple[tuple[str, Any], ...] = ()

    def matches(self, program: Program) -> bool:
        return all(fnmatch.fnmatchcase(str(getattr(program, key)), value) for key, value in self.pattern)

    @property
    def key(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.pattern) + f" -> {self.outcome}"


KNOWN_GAPS: tuple[KnownGap, ...] = ()


@dataclass(frozen=True)
class Result:
    program: Program
    static: str  # "bug" | "clean" | "abstain" | "error"
    codes: tuple[str, ...]
    messages: tuple[str, ...]
    runtime_ok: bool
    stage: str
    error: str
    outcome: str
    gap: Optional[KnownGap]

    @property
    def planted_rule_reported(self) -> bool:
        """Whether the rule that predicts the planted mistake is among the reported codes."""
        rule = planted_rule(self.program.planted)
        return bool(rule) and rule in self.codes


def planted_rule(planted: str) -> str:
    if planted == "children-crossing":
        return "SKP205"
    base = {"discarded-pop-cross": "discarded-pop", "mixed-namespaces-same-route": "mixed-namespaces"}.get(
        planted, planted)
    return MISTAKES[base][1] if base in MISTAKES else ""


# -- the static side -----------------------------------------------------------------------------

#: Findings that say why the analysis left something unchecked: a name computed at run time, an
#: isolate() naming a skip its class never declares, a class that is no skippable module (its
#: layers are no layers to check), the analysis failing.
EXPLAINING = frozenset({"SKP901", "SKP115", "SKP109", "SKP113", "SKP900", "SKP902"})


def unchecked_compositions(model: Any) -> list[tuple[str, str]]:
    """The compositions of a module's ModelFacts that skiplint's checks do not judge whole, each
    (name, why): children that cannot be listed, a layer that cannot be known, names whose
    namespace cannot be known. The analysis leaves none of them silent: a finding says why."""
    from skiplint.pipes import layer_text

    out: list[tuple[str, str]] = []
    for composition in model.compositions:
        if not composition.complete:
            out.append((composition.name, composition.unknown or "its children cannot be listed"))
        for layer in composition.layers:
            if layer.kind == "unknown":
                out.append((composition.name, f"layer {layer_text(layer)} cannot be known"))
            elif layer.unknown_names:
                out.append((composition.name, f"layer {layer_text(layer)} isolates names that cannot be known"))
            elif any(nested.kind == "unknown" for nested in layer.nested):
                out.append((composition.name, f"layer {layer_text(layer)} holds layers that cannot be known"))
    return out


def silent_abstentions(source: str, path: str, codes: Iterable[str]) -> list[str]:
    """What the analysis of one program left unchecked with no finding to say why (`codes`: the
    codes reported, SKP901 selected). Two invariants: every composition is checked whole or
    some finding explains it; every skippable class is specialized (each class a factory's call
    or a loop's iteration makes) or, generic, carries its SKP901."""
    from skiplint import checks, engine, skippables

    both = engine.analyze_models(source, path)
    if both is None:
        return []
    facts, models = both
    out = []
    if not EXPLAINING & set(codes):
        out += [f"composition {name}: {why}" for name, why in unchecked_compositions(models)]
    for cls in facts.skippables:
        if skippables.computed(cls) and not any(f.code == "SKP901" for f in checks.class_findings(cls)):
            line = cls.site.position[0] if cls.site is not None else 0
            out.append(f"class {cls.name} (line {line}): computed names with no SKP901")
    return out


def static_verdict(program: Program) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    from skiplint import engine

    result = engine.check_text(program.source, f"{program.ident}.py",
                               engine.Selection(extend_select=("SKP901",)))
    codes = tuple(sorted({d.code for d in result.diagnostics}))
    messages = tuple(f"{d.line}:{d.col} {d.message}" for d in result.diagnostics)
    if result.error is not None or "SKP902" in codes or "SKP900" in codes:
        return "error", codes, messages
    silent = silent_abstentions(program.source, f"{program.ident}.py", codes)
    if silent:  # an invariant of the analysis broken: counted as its error
        return "error", codes, messages + tuple(f"silent abstention: {why}" for why in silent)
    if set(codes) - {"SKP901"}:
        return "bug", codes, messages
    return ("abstain" if codes else "clean"), codes, messages


# -- the runtime side (the worker) -----------------------------------------------------------------

def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def run_program(ident: str, source: str, pipe_line: int) -> dict[str, Any]:
    """Define, construct, train one step, evaluate. Imports torch (worker side only)."""
    import torch

    filename = f"<oracle {ident}>"
    namespace: dict[str, Any] = {"__name__": f"oracle_{ident}"}
    torch.manual_seed(0)
    # A worker runs many programs on one thread: what a program's direct calls left in the thread's
    # default skip tracker must not reach the next one.
    for tracker in ("torchgpipe.skip.tracker", "fairscale.nn.pipe.skip.tracker"):
        try:
            sys.modules[tracker].thread_local.skip_tracker = None  # type: ignore[attr-defined]
        except (KeyError, AttributeError):
            pass
    stage = "define"
    try:
        code = compile(source, filename, "exec")
        try:
            exec(code, namespace)
        except BaseException as error:
            lines = [f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == filename]
            stage = "pipe" if lines and lines[-1] == pipe_line else "define"
            raise
        pipe = namespace["pipe"]
        x = torch.randn(4, 8, requires_grad=True)
        stage = "forward"
        output = pipe(x)
        stage = "backward"
        output.sum().backward()
        stage = "eval"
        pipe.eval()
        with torch.no_grad():
            pipe(x)
    except Exception as error:
        return {"ident": ident, "ok": False, "stage": stage, "error": _one_line(error)}
    return {"ident": ident, "ok": True, "stage": "", "error": ""}


def worker(path: str) -> None:
    import warnings

    import torch

    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    with open(path, encoding="utf-8") as handle:
        jobs = json.load(handle)
    for job in jobs:
        print(json.dumps(run_program(job["ident"], job["source"], job["pipe_line"])), flush=True)


def _reader(stream: Any, lines: "queue.Queue[Optional[str]]") -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def run_batch(programs: list[Program], timeout: float = PROGRAM_TIMEOUT) -> dict[str, dict[str, Any]]:
    """Runs the programs in worker subprocesses, one after another; a crash or hang costs one program."""
    results: dict[str, dict[str, Any]] = {}
    pending = list(programs)
    while pending:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
            json.dump([{"ident": p.ident, "source": p.source, "pipe_line": p.pipe_line} for p in pending], handle)
            path = handle.name
        process = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", path],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True).start()
        first = True
        try:
            while pending:
                current = pending[0]
                try:
                    line = lines.get(timeout=STARTUP_TIMEOUT if first else timeout)
                except queue.Empty:
                    results[current.ident] = {"ok": False, "stage": "timeout", "error": f"no result in {timeout:g} s"}
                    pending.pop(0)
                    break
                first = False
                if line is None:
                    process.wait()
                    results[current.ident] = {"ok": False, "stage": "crash",
                                              "error": f"worker exited with status {process.returncode}"}
                    pending.pop(0)
                    break
                record = json.loads(line)
                results[record["ident"]] = record
                pending = [p for p in pending if p.ident != record["ident"]]
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            os.unlink(path)
    return results


def run_all(programs: list[Program], jobs: int = 1) -> dict[str, dict[str, Any]]:
    shares = [programs[i::jobs] for i in range(max(1, jobs))]
    results: dict[str, dict[str, Any]] = {}
    threads = [threading.Thread(target=lambda share=share: results.update(run_batch(share))) for share in shares]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# -- the comparison ------------------------------------------------------------------------------

def outcome_of(static: str, runtime_ok: bool) -> str:
    if static == "error":
        return "analyzer-error"
    if static == "abstain":
        return "abstained"
    if static == "bug":
        return "false-positive" if runtime_ok else "agree-bug"
    return "agree-clean" if runtime_ok else "false-negative"


def known_gap(program: Program, outcome: str) -> Optional[KnownGap]:
    for gap in KNOWN_GAPS:
        if gap.outcome == outcome and gap.matches(program):
            return gap
    return None


def evaluate(programs: list[Program], jobs: int = 1) -> list[Result]:
    runtime: dict[str, dict[str, Any]] = {}
    runner = threading.Thread(target=lambda: runtime.update(run_all(programs, jobs)))
    runner.start()
    statics = {p.ident: static_verdict(p) for p in programs}
    runner.join()
    results = []
    for program in programs:
        static, codes, messages = statics[program.ident]
        record = runtime[program.ident]
        outcome = outcome_of(static, record["ok"])
        results.append(Result(program, static, codes, messages, record["ok"], record["stage"], record["error"],
                              outcome, known_gap(program, outcome)))
    return results


def unexplained(results: Iterable[Result]) -> list[Result]:
    """False positives, false negatives and analyzer errors that no known gap documents."""
    return [r for r in results
            if r.outcome in ("false-positive", "false-negative", "analyzer-error") and r.gap is None]


def stale_gaps(results: list[Result]) -> list[str]:
    """Known gaps that this run does not show: no program exercises them (every matching program
    abstained), or every matching program now agrees (the gap is closed: remove the entry)."""
    problems = []
    for gap in KNOWN_GAPS:
        matching = [r for r in results if gap.matches(r.program) and r.outcome != "abstained"]
        if not matching:
            problems.append(f"{gap.key}: no checked program of this run matches ({gap.issue})")
        elif not any(r.gap is gap for r in matching):
            problems.append(f"{gap.key}: all {len(matching)} matching programs now agree; remove the entry "
                            f"({gap.issue})")
    return problems


def probes(per_gap: int = 4) -> list[Program]:
    """Programs that exercise each known gap, so that a fixed budget always tests every entry."""
    programs = []
    for number, gap in enumerate(KNOWN_GAPS):
        arguments = dict(gap.probe)
        for i in range(per_gap):
            program = generate(900_000 + 1000 * number + i, **arguments)
            programs.append(Program(**{**program.__dict__, "ident": f"probe{number}.{i}"}))
    return programs


# -- the table -----------------------------------------------------------------------------------

_SHORT = {"agree-clean": "clean", "agree-bug": "bug", "false-positive": "FP", "false-negative": "FN",
          "abstained": "abst", "analyzer-error": "err"}


def _rows(results: list[Result], key: Any) -> list[str]:
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        groups[key(r)][r.outcome] += 1
        if r.planted_rule_reported:
            groups[key(r)]["rule"] += 1
    width = max([len(k) for k in groups] + [10])
    head = (f"  {'':{width}} " + " ".join(f"{_SHORT[o]:>6}" for o in OUTCOMES) + f" {'total':>6}"
            + f" {'rule':>6}")
    lines = [head]
    for name in sorted(groups):
        counts = groups[name]
        lines.append(f"  {name:{width}} " + " ".join(f"{counts[o]:>6}" for o in OUTCOMES)
                     + f" {sum(counts[o] for o in OUTCOMES):>6} {counts['rule']:>6}")
    return lines


def table(results: list[Result]) -> str:
    total = Counter(r.outcome for r in results)
    n = len(results)
    lines = [f"{n} programs"]
    for outcome in OUTCOMES:
        documented = sum(1 for r in results if r.outcome == outcome and r.gap is not None)
        extra = f" ({documented} documented known gaps)" if documented else ""
        lines.append(f"  {outcome:15} {total[outcome]:>6} {100 * total[outcome] / max(n, 1):6.1f}%{extra}")
    bugs = [r for r in results if not r.runtime_ok]
    flagged = [r for r in results if r.static == "bug"]
    if bugs:
        lines.append(f"  recall    (failing programs reported) {sum(1 for r in bugs if r.static == 'bug')}/{len(bugs)}")
    if flagged:
        lines.append(f"  precision (reports that fail)         {sum(1 for r in flagged if not r.runtime_ok)}/"
                     f"{len(flagged)}")
    lines.append("  (rule: programs where the rule that predicts the planted mistake is reported)")
    for title, key in (("per planted mistake", lambda r: r.program.planted),
                       ("per class style", lambda r: r.program.class_style),
                       ("per composition style", lambda r: r.program.composition),
                       ("per library", lambda r: r.program.library),
                       ("per import style", lambda r: r.program.imports),
                       ("per partition count", lambda r: str(r.program.partitions))):
        lines += ["", title] + _rows(results, key)
    return "\n".join(lines)


def describe(result: Result) -> str:
    p = result.program
    head = (f"== {p.ident} (seed {p.seed}) {result.outcome}: planted={p.planted} style={p.style} "
            f"library={p.library} imports={p.imports} partitions={p.partitions}")
    runtime = "runs clean" if result.runtime_ok else f"fails at {result.stage}: {result.error}"
    static = "; ".join(result.messages) or "nothing"
    return f"{head}\n   runtime: {runtime}\n   skiplint: {static}\n{p.source}"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="how many programs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2, help="worker subprocesses run side by side")
    parser.add_argument("--show", action="append", default=[], choices=OUTCOMES,
                        help="print every program with this outcome")
    parser.add_argument("--probes", action="store_true", help="add the programs that exercise each known gap")
    parser.add_argument("--planted", choices=sorted(MISTAKES),
                        help="plant this mistake in every program (e.g. profiled-skippable)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    start = time.perf_counter()
    if args.planted:
        programs = [generate(args.seed * 100_000 + i, args.planted) for i in range(args.n)]
    else:
        programs = generate_many(args.n, args.seed)
    programs += probes() if args.probes else []
    results = evaluate(programs, args.jobs)
    for result in results:
        if result.outcome in args.show:
            print(describe(result))
    print(table(results))
    problems = unexplained(results)
    stale = stale_gaps(results)
    print(f"\n{len(problems)} unexplained disagreement(s); {len(stale)} stale known gap(s); "
          f"{time.perf_counter() - start:.0f} s")
    for line in stale:
        print("  stale:", line)
    return 1 if problems or stale else 0


if __name__ == "__main__":
    sys.exit(main())
