"""What `skiplint verify` found: steps, runtime failures, static findings and routes, joined.

Plain frozen data and two renderers (text, json); no torch.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Optional

from skiplint.diagnostics import shown, without_code
from skiplint.findings import Owner
from skiplint.rules import RULES

StepStatus = Literal["ok", "failed", "skipped", "error"]
#: A static finding after the run.
Verdict = Literal["confirmed", "not reproduced", "not exercised"]

#: 0 verified clean; 1 findings confirmed or failures missed; 2 could not verify (usage, import,
#: crash, timeout).
EXIT_CLEAN, EXIT_DISAGREE, EXIT_NOT_RUN = 0, 1, 2
#: The run's first steps, as their lines name them.
STEP_IMPORT, STEP_BUILD, STEP_STATIC = "import", "build", "static analysis"


@dataclass(frozen=True)
class Step:
    """One step of the run, as the progress line shows it."""

    name: str
    status: StepStatus
    seconds: float = 0.0
    detail: str = ""


@dataclass(frozen=True)
class Observation:
    """A failure the run met, mapped to its code; `predicted` says whether a static finding said so."""

    #: None for a failure that is no known skip failure (a failed step is never left unexplained).
    code: Optional[str]
    #: The step that met it, as the step line names it.
    step: str
    #: Child name of the failing layer in the Sequential, when known.
    layer: Optional[str]
    #: Class name of that layer (the wrapped module's class for skippables).
    cls: Optional[str]
    name: Optional[str]
    #: The library's own message.
    message: str
    predicted: bool = False


@dataclass(frozen=True)
class LayerRef:
    """A direct child of the Sequential, typed: its position, its name in named_children() and its
    class (for a skippable layer, the class it wraps)."""

    index: int
    key: str
    cls: str


@dataclass(frozen=True)
class StaticFinding:
    """A diagnostic of the static pass, with the subject it is about, and its verdict after the run."""

    path: str
    line: int
    col: int
    code: str
    message: str
    cls: Optional[str] = None
    #: The child of the composition the finding is about (SKP2xx), when the static pass knows it.
    layer: Optional[LayerRef] = None
    name: Optional[str] = None
    verdict: Verdict = "not exercised"
    note: str = ""
    #: The step of the run that exercised the finding: the one whose failure confirmed it, or the
    #: one that ran without it ("not reproduced"); "" when none did ("not exercised").
    step: str = ""
    #: The rule's arguments (name -> text), as the message was rendered from them: what the join
    #: and the run read, never the message.
    args: dict[str, str] = field(default_factory=dict)
    #: What the finding belongs to: its class, or the compositions it was found in with the
    #: module-level functions that return each (how verify tells its target's findings apart).
    owners: tuple[Owner, ...] = ()
    #: Line and 0-based column just after the reported node, as the lint has them (0: not known).
    end_line: int = 0
    end_col: int = 0


@dataclass(frozen=True)
class Route:
    """One skip's way through the partitions: stashed by layer `src` in partition `src_partition`."""

    name: str
    src_layer: str
    dst_layer: str
    src_partition: int
    dst_partition: int

    def __str__(self) -> str:
        return (f"'{self.name}': layer {self.src_layer} (partition {self.src_partition}) -> "
                f"layer {self.dst_layer} (partition {self.dst_partition})")


@dataclass(frozen=True)
class Crossing:
    """A value that crosses a stage boundary (pipelining backend): a stage's output to the next stage,
    or a skip carried from the stage that stashes it to the one that pops it."""

    value: str
    src_partition: int
    dst_partition: int
    #: The skip it carries, or None for the main activation.
    skip: Optional[str] = None


@dataclass(frozen=True)
class Comparison:
    """Pipe output and gradients against the plain Sequential, for one checkpoint mode."""

    mode: str
    output_max_abs: float
    grad_max_abs: float
    ok: bool


@dataclass
class Report:
    target: str
    backend: str = ""
    balance: tuple[int, ...] = ()
    chunks: int = 1
    checkpoints: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    steps: list[Step] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    static: list[StaticFinding] = field(default_factory=list)
    #: Static findings of the source files that belong to no class or composition the target
    #: builds: listed apart, neither joined nor counted in the verdict.
    elsewhere: list[StaticFinding] = field(default_factory=list)
    runtime_routes: Optional[list[Route]] = None
    static_routes: Optional[list[Route]] = None
    #: Why the static routes could not be compared, when they could not.
    static_routes_note: str = ""
    crossings: Optional[list[Crossing]] = None
    comparisons: list[Comparison] = field(default_factory=list)
    tolerances: dict[str, float] = field(default_factory=dict)
    #: Where the settings above come from, when not all from the options and defaults (the
    #: user's pipe), in one line.
    settings: str = ""
    #: Set when the run could not happen (exit status 2): the reason in one line.
    reason: Optional[str] = None
    #: The exception behind `reason`, when the run happened in this process (not serialised).
    cause: Optional[BaseException] = field(default=None, repr=False, compare=False)
    #: The traceback behind `reason`, as text, for --verbose (not serialised).
    traceback: str = field(default="", repr=False, compare=False)

    @property
    def routes_agree(self) -> bool:
        if self.runtime_routes is not None and self.crossings is not None:
            # Every skip that the layout says crosses partitions is one the stages carry so.
            carried = {(x.skip, x.src_partition, x.dst_partition) for x in self.crossings if x.skip}
            layout = {(r.name, r.src_partition, r.dst_partition) for r in self.runtime_routes
                      if r.src_partition != r.dst_partition}
            if carried != layout:
                return False
        if self.runtime_routes is None or self.static_routes is None:
            return True
        return sorted(map(str, self.runtime_routes)) == sorted(map(str, self.static_routes))

    @property
    def clean(self) -> bool:
        return (not self.observations and not self.static
                and all(s.status in ("ok", "skipped") for s in self.steps)
                and all(c.ok for c in self.comparisons) and self.routes_agree)

    @property
    def exit_code(self) -> int:
        if self.reason is not None:
            return EXIT_NOT_RUN
        return EXIT_CLEAN if self.clean else EXIT_DISAGREE

    # -- rendering ------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field but `cause` and `traceback`, as plain JSON values; `from_dict` reads it back."""
        payload = asdict(replace(self, cause=None))
        del payload["cause"], payload["traceback"]
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> "Report":
        data = {f.name: payload[f.name] for f in fields(cls) if f.name in payload}
        for key in ("balance", "checkpoints", "devices"):
            data[key] = tuple(data.get(key) or ())
        data["steps"] = [Step(**s) for s in data.get("steps") or ()]
        data["observations"] = [Observation(**o) for o in data.get("observations") or ()]
        data["static"] = [_static_finding(s) for s in data.get("static") or ()]
        data["elsewhere"] = [_static_finding(s) for s in data.get("elsewhere") or ()]
        data["comparisons"] = [Comparison(**c) for c in data.get("comparisons") or ()]
        for key, kind in (("runtime_routes", Route), ("static_routes", Route), ("crossings", Crossing)):
            if data.get(key) is not None:
                data[key] = [kind(**item) for item in data[key]]
        return cls(**data)

    def to_json(self) -> str:
        payload = self.to_dict()
        payload["exit_code"] = self.exit_code
        payload["routes_agree"] = self.routes_agree
        for item in payload["observations"]:
            rule = RULES.get(item["code"]) if item["code"] is not None else None
            item["rule"] = rule.name if rule is not None else None
        payload["static"] = [static_json(s) for s in self.static]
        payload["elsewhere"] = [static_json(s) for s in self.elsewhere]
        return json.dumps(payload, indent=2)

    def to_text(self) -> str:
        lines = [f"skiplint verify {self.target}"]
        lines.extend(format_step(step) for step in self.steps)
        return "\n".join(lines + [self.summary_text()])

    def summary_text(self) -> str:
        """Everything after the step lines (which a live run shows as they end)."""
        lines: list[str] = []
        if self.backend:
            lines += ["", f"backend {self.backend}, balance {list(self.balance)}, chunks {self.chunks}, "
                          f"checkpoint {', '.join(self.checkpoints)}, devices {', '.join(self.devices)}"]
            if self.settings:
                lines.append(f"settings: {self.settings}")
        if self.comparisons:
            lines += ["", "compared with the plain Sequential (output and every gradient; "
                          + ", ".join(f"{k} {v:g}" for k, v in self.tolerances.items()) + "):"]
            lines.extend(f"  {c.mode:<12} output max |diff| {c.output_max_abs:.2e}, gradient max |diff| "
                         f"{c.grad_max_abs:.2e}  {'ok' if c.ok else 'MISMATCH'}" for c in self.comparisons)
        if self.runtime_routes is not None:
            lines += ["", "skip routes (runtime SkipLayout):" + ("" if self.runtime_routes else " none")]
            lines.extend(f"  {r}" for r in self.runtime_routes)
            if self.static_routes is not None:
                lines.append("  static route table: " + ("agrees" if self.routes_agree else "DIFFERS"))
                if not self.routes_agree:
                    lines.extend(f"    static  {r}" for r in self.static_routes)
            elif self.static_routes_note:
                lines.append(f"  static route table: {self.static_routes_note}")
        if self.crossings is not None:
            lines += ["", "values crossing stages (carried by the stage adapter):"]
            for x in self.crossings:
                what = f"skip '{x.skip}'" if x.skip else "activation"
                lines.append(f"  {x.value}: partition {x.src_partition} -> {x.dst_partition} ({what})")
        if self.static or self.observations:
            lines.append("")
        for s in self.static:
            note = f" ({s.note})" if s.note else ""
            step = {"confirmed": f" by {s.step}", "not reproduced": f": {s.step} ran without it"}.get(
                s.verdict, "") if s.step else ""
            lines += [f"{s.path}:{s.line}:{s.col + 1}: {s.message}", f"  static finding {s.verdict}{step}{note}"]
        for o in self.observations:
            where = f"layer '{o.layer}'" if o.layer is not None else "the pipe"
            if o.cls:
                where += f" ({o.cls})"
            what = o.code or "a failure that is no known skip failure"
            lines += [f"{what} at run time in {o.step}, {where}: {o.message}",
                      f"  {'predicted by the static pass' if o.predicted else 'MISSED by the static pass'}"]
        if self.elsewhere:
            lines += ["", f"not part of this target ({len(self.elsewhere)} static finding(s) of its files, "
                          "not joined; they change neither the verdict nor the exit status):"]
            lines.extend(f"  {s.path}:{s.line}:{s.col + 1}: {s.message}" for s in self.elsewhere)
        lines.append("")
        if self.reason is not None:
            lines.append(f"could not verify: {self.reason}")
        elif self.clean:
            lines.append("clean: the run passed and agrees with the static pass")
        else:
            confirmed = sum(s.verdict == "confirmed" for s in self.static)
            missed = sum(not o.predicted for o in self.observations)
            lines.append(f"{len(self.static)} static finding(s), {confirmed} confirmed; "
                         f"{len(self.observations)} runtime failure(s), {missed} missed by the static pass")
        return "\n".join(lines)


def _static_finding(payload: dict[str, Any]) -> StaticFinding:
    """A StaticFinding from its JSON (a report written before `args` and `owners` reads too)."""
    data = dict(payload)
    data["args"] = dict(data.get("args") or {})
    data["owners"] = tuple(Owner(o["kind"], o["name"], o.get("line", 0), tuple(o.get("factories") or ()))
                           for o in data.get("owners") or ())
    if isinstance(data.get("layer"), dict):
        data["layer"] = LayerRef(**data["layer"])
    return StaticFinding(**data)


def static_json(finding: StaticFinding) -> dict[str, Any]:
    """A static finding as verify's JSON gives it: first the lint's own fields (path, 1-based line
    and column, end, code, the rule's name, message), then what the join adds."""
    end_line, end_col = (finding.end_line, finding.end_col) if finding.end_line else (finding.line, finding.col)
    return {
        "path": finding.path, "line": finding.line, "column": finding.col + 1,
        "end_line": end_line, "end_column": end_col + 1, "code": finding.code,
        "name": RULES[finding.code].name if finding.code in RULES else None,
        "message": shown(without_code(finding.code, finding.message)),
        "verdict": finding.verdict, "note": finding.note, "step": finding.step,
        "skip": finding.name, "cls": finding.cls,
        "layer": asdict(finding.layer) if finding.layer is not None else None,
        "args": dict(finding.args), "owners": [asdict(owner) for owner in finding.owners],
    }


def format_step(step: Step) -> str:
    mark = {"ok": "ok", "failed": "FAILED", "skipped": "skipped", "error": "ERROR"}[step.status]
    detail = f"  {step.detail}" if step.detail else ""
    return f"  {step.name:<40} {mark:<8} {step.seconds:7.3f}s{detail}"
