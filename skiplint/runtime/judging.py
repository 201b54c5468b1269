"""The steps that judge: the static pass over the model's files (what is the target's, what ran)
and the join of its findings with the run's failures."""

from __future__ import annotations

import importlib.util
import inspect
import os
from dataclasses import replace
from typing import Any, Optional

from skiplint.runtime import join as joining, static as static_pass, target
from skiplint.runtime.building import _wrapped_class
from skiplint.runtime.options import is_file_target as options_is_file
from skiplint.runtime.report import STEP_IMPORT, STEP_STATIC, Observation, StaticFinding
from skiplint.runtime.state import RunState

_LIBRARY_MODULES = ("torch", "torchgpipe", "fairscale")


def _key(finding: StaticFinding) -> tuple[str, int, int, str]:
    return finding.path, finding.line, finding.col, finding.code


class JoinSteps(RunState):
    """The static pass and the join."""

    def static(self) -> None:
        """The lint over the model's source files, once each; the findings of the classes and
        compositions the target builds are joined, the others listed apart."""
        with self.steps.timed(STEP_STATIC) as out:
            self.static_ran = True
            files = self._source_files()
            self.analysis = static_pass.analyse(files)
            self.static_target = self._static_target()
            self.report.static, self.report.elsewhere = self.static_target.split(self.analysis)
            if self.rejected == STEP_IMPORT:
                self._import_ran()
            apart = f", {len(self.report.elsewhere)} not part of this target" if self.report.elsewhere else ""
            out["detail"] = f"{len(files)} file(s), {len(self.report.static)} finding(s){apart}"

    def _import_ran(self) -> None:
        """Importing the target's module built a pipe that rejected its model: what ran is that
        composition, so its findings are joined (the import's failure confirms them), and the
        target's own findings of compositions that never ran are not exercised."""
        ran = replace(self.static_target, factory="")
        ran_findings, _ = ran.split(self.analysis)
        ran_keys = {_key(f) for f in ran_findings}
        own = self.report.static
        self.unrun = {_key(f) for f in own if _key(f) not in ran_keys
                      and all(o.kind == "composition" for o in f.owners) and f.owners}
        mine = {_key(f) for f in own}
        self.report.static = own + [f for f in ran_findings if _key(f) not in mine]
        joined = {_key(f) for f in self.report.static}
        self.report.elsewhere = [f for f in self.report.elsewhere if _key(f) not in joined]

    def _static_target(self) -> static_pass.Target:
        """The target as the static pass tells its findings apart: its file and factory, and the
        classes and children of the model it built (when one was built or rejected)."""
        source = self._target_file()
        path = target.shown_path(os.path.abspath(source)) if source else None
        factory = target.split_target(self.options.target)[1]
        model = getattr(self, "model", None)
        if model is None:
            return static_pass.Target(path, factory)
        classes = frozenset(_wrapped_class(module, self.lib).__name__ for module in model.modules())
        children = [(name, _wrapped_class(layer, self.lib).__name__,
                     self.lib is not None and isinstance(layer, self.lib.Skippable))
                    for name, layer in model.named_children()]
        return static_pass.Target(path, factory, classes, children)

    def _target_file(self) -> Optional[str]:
        """The file of the target's module, also when it did not import."""
        built = getattr(self, "built", None)
        if built is not None:
            return built.source_file  # type: ignore[no-any-return, unused-ignore]
        where, _ = target.split_target(self.options.target)
        if options_is_file(where):
            return where
        try:
            spec = importlib.util.find_spec(where)
        except (ImportError, ValueError):
            return None
        return spec.origin if spec is not None and spec.has_location else None

    def _source_files(self) -> list[str]:
        files = set()
        source = self._target_file()
        if source:
            files.add(os.path.abspath(source))
        built = getattr(self, "built", None)
        objects: list[Any] = [built.origin] if built is not None else []
        model = getattr(self, "model", None)
        if model is not None:
            objects.extend(_wrapped_class(layer, self.lib) for layer in model.children())
        for obj in objects:
            module = getattr(obj, "__module__", None) or ""
            if module.split(".")[0] in _LIBRARY_MODULES:
                continue
            try:
                path = inspect.getsourcefile(obj)
            except TypeError:
                continue
            if path and os.path.isfile(path):
                files.add(os.path.abspath(path))
        return sorted(files)

    def _join(self) -> None:
        """The observations joined with the static findings, into the report. A failed step that no
        observation comes from is a failure of its own (missed unless a static finding predicts it):
        a Pipe result that differs, a stage that failed."""
        explained = {o.step for o in self.raw}
        self.raw.extend(Observation(None, step.name, None, None, None, step.detail or "failed")
                        for step in self.report.steps if step.status == "failed" and step.name not in explained)
        observations, static = joining.join(self.raw, self.report.static, self.reach)
        # A finding of a composition that never ran (its build came after the failed import).
        never = "its composition never ran: importing the module failed first"
        self.report.observations = observations
        self.report.static = [replace(s, verdict="not exercised", step="", note=never)
                              if s.verdict != "confirmed" and _key(s) in self.unrun else s for s in static]

    def finish(self) -> None:
        with self.steps.timed("join") as out:
            if self.report.runtime_routes is not None:  # the static pass's own analysis, no file again
                self.report.static_routes, self.report.static_routes_note = self.static_target.routes(
                    self.analysis, self.balance)
            self._join()
            observations, static = self.report.observations, self.report.static
            confirmed = sum(s.verdict == "confirmed" for s in static)
            missed = sum(not o.predicted for o in observations)
            out["detail"] = (f"{confirmed}/{len(static)} static finding(s) confirmed, "
                             f"{missed}/{len(observations)} runtime failure(s) missed")
            if missed or confirmed < len(static) or not self.report.routes_agree:
                out["status"] = "failed"
