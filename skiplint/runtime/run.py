"""The run itself: import, build, static pass, verify_skippables, layout, plain reference, pipe per
checkpoint mode, join. Imports torch; runs in the supervised child process (skiplint.runtime.supervise),
or in the caller's process with skiplint.runtime.verify(..., isolate=False). The steps live in
skiplint.runtime.building, .running and .judging; `Runner` runs them in order."""

from __future__ import annotations

from skiplint.runtime.building import BuildSteps
from skiplint.runtime.errors import CannotRun, is_stop, stop_cause
from skiplint.runtime.judging import JoinSteps
from skiplint.runtime.report import STEP_IMPORT, Report
from skiplint.runtime.running import RunSteps
from skiplint.runtime.state import _failure_text


class Runner(BuildSteps, RunSteps, JoinSteps):
    """One run of `skiplint verify`: every step, in order, into one Report."""

    def _steps(self) -> None:
        self.check_devices()
        self.load()
        if self.rejected is None:
            self.build()
        if self.rejected is not None:  # no model to run: what the target's own pipe said is joined
            self.static()
            self.finish()
            return
        self.static()
        self.settle_tied()
        self.check_balance()
        if self.report.backend == "pipelining":
            from skiplint.runtime import pipelining
            self.verify()
            self.split()
            reference = self.plain()
            if reference is None or not self.verified or not self.balanced:
                self.steps.add(f"pipelining ScheduleGPipe ({len(self.balance)} processes)", "skipped", 0.0,
                               "an earlier step failed")
            else:
                pipelining.distributed(self, reference)
        else:
            self.verify()
            self.layout()
            reference = self.plain()
            for mode in self.checkpoints:
                if reference is None or not self.verified or not self.balanced:
                    self.steps.add(f"Pipe forward+backward [{mode}]", "skipped", 0.0,
                                   "an earlier step failed")
                    continue
                self.pipe(mode, reference)
        self.finish()

    def run(self) -> Report:
        try:
            self._steps()
        except CannotRun as error:
            self.report.reason = str(error)
            self.report.cause = error.__cause__ or error
            if self.raw and self.static_ran:  # what earlier steps found is kept, joined
                self._join()
        except BrokenPipeError:
            raise
        except Exception as error:  # a failure outside what the steps expect still ends in one line
            step = self.steps.current or STEP_IMPORT
            self.report.reason = f"unexpected error during {step}: {_failure_text(error, every_line=True)}"
            self.report.cause = error
        except BaseException as error:
            if not is_stop(error):
                raise
            self.report.reason = f"the model's code {stop_cause(error)} during {self.steps.current or STEP_IMPORT}"
            self.report.cause = error
        return self.report
