"""The steps that make the model: import, build (with the settings the run uses: the devices there
are, the partitions) and the balance's check."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional

import torch
from torch import nn

from skiplint.runtime import backends, join as joining, messages, target
from skiplint.runtime.errors import CannotRun
from skiplint.runtime.options import CHECKPOINTS, DEFAULT_CHUNKS
from skiplint.runtime.report import STEP_BUILD, STEP_IMPORT
from skiplint.runtime.state import RunState


def devices_here() -> list[str]:
    """The devices this torch can run a model on: the CPU, then each device of the accelerator."""
    found = ["cpu"]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and accelerator.is_available():
        kind = accelerator.current_accelerator().type
        found.extend(f"{kind}:{i}" for i in range(accelerator.device_count()))
    elif torch.cuda.is_available():
        found.extend(f"cuda:{i}" for i in range(torch.cuda.device_count()))
    return found


def check_devices(names: tuple[str, ...]) -> None:
    """--devices names only devices that exist here, before any of the model's code runs:
    CannotRun (a usage error) with the one line that names the devices there are."""
    shown = ",".join(names)
    here = devices_here()
    listed = f"the devices here are: {', '.join(here)}"
    for name in names:
        try:
            device = torch.device(name)
        except (RuntimeError, ValueError):
            raise CannotRun(f"--devices {shown}: {name!r} is not a device name; {listed}") from None
        if device.type == "cpu":
            continue
        if device.type == "meta":
            raise CannotRun(f"--devices {shown}: a meta tensor holds no data, so no model runs on '{name}'; "
                            f"{listed}")
        if _full(device) not in here:
            raise CannotRun(f"--devices {shown}: there is no {_full(device)} here; {listed}")


def default_partitions() -> int:
    """How many partitions a run without --balance or --devices splits the model into: one per
    GPU, and never fewer than two, so that skips cross a partition boundary (on one GPU or on the
    CPU both partitions share the device)."""
    return max(int(torch.cuda.device_count()), 2)


def _full(device: torch.device) -> str:
    return f"{device.type}:{device.index or 0}"


def even_balance(layers: int, partitions: int) -> tuple[int, ...]:
    partitions = max(1, min(partitions, layers))
    base, extra = divmod(layers, partitions)
    return tuple(base + (1 if i < extra else 0) for i in range(partitions))


def _here(name: str) -> bool:
    """Whether a device of this name exists here."""
    device = torch.device(name)
    return device.type == "cpu" or _full(device) in devices_here()


def _rejected_module(error: BaseException) -> tuple[Optional[str], Optional[nn.Sequential]]:
    """The skip library whose verify_skippables raised `error`, and the Sequential it rejected, read
    from that function's frame in the traceback ((None, None) when it was not raised there)."""
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        library = backends.library_of_module(str(frame.f_globals.get("__name__", "")))
        if frame.f_code.co_name == "verify_skippables" and library is not None:
            model = frame.f_locals.get("module")
            return library, model if isinstance(model, nn.Sequential) else None
        tb = tb.tb_next
    return None, None


def _wrapped_class(layer: nn.Module, lib: Optional[backends.SkipLibrary]) -> type:
    if lib is not None and isinstance(layer, lib.Skippable):
        return type(layer.module)
    return type(layer)


class BuildSteps(RunState):
    """import, build, the settings, and the check of the balance."""

    def _verify_failed(self, step: str, error: CannotRun, out: dict[str, str]) -> None:
        """The target's own code (a GPipe or Pipe built while it imports, or in its factory) ran
        verify_skippables and it rejected the model: that is the failure the static pass predicts,
        an observation of this step, and the run goes on to the static pass and the join.
        Any other error ends the run (re-raised)."""
        cause = error.__cause__
        if type(error) is not CannotRun or cause is None or not messages.is_verify_error(cause):
            raise error
        library, model = _rejected_module(cause)
        if library is not None and model is not None:
            self.model, self.lib = model, backends.load(library)
            for name, layer in model.named_children():
                self.reach.layers[name] = _wrapped_class(layer, self.lib).__name__
        found = self._observe(step, cause, None)
        if not found:
            raise error
        self.raw.extend(found)
        self.reach.verify_ran = True
        self.reach.performed("verify", step)
        self.rejected = step
        out["status"], out["detail"] = "failed", f"verify_skippables rejected the model: {len(found)} mismatch(es)"

    # -- the steps -------------------------------------------------------------------------
    def check_devices(self) -> None:
        if self.options.devices:
            check_devices(self.options.devices)

    def load(self) -> None:
        with self.steps.timed(STEP_IMPORT) as out:
            try:
                self.loaded = target.load(self.options.target)
            except CannotRun as error:
                self._verify_failed(STEP_IMPORT, error, out)
                return
            module = self.loaded[0]
            out["detail"] = target.shown_path(getattr(module, "__file__", None) or module.__name__)

    def build(self) -> None:
        with self.steps.timed(STEP_BUILD) as out:
            try:
                built = target.build(self.options.target, self.options.sample, self.options.input_shape,
                                     loaded=self.loaded)
            except CannotRun as error:
                self._verify_failed(STEP_BUILD, error, out)
                return
            self.model = built.model.cpu()
            self.sample = built.sample
            self.built = built
            libs = backends.libraries_of(type(layer) for layer in self.model.children())
            backend = self.options.backend
            if backend == "auto" and not libs and built.pipe is not None and built.pipe.library in backends.SKIP_ROOTS:
                libs = {built.pipe.library}
            if len(libs) > 1:
                raise CannotRun("the model mixes skippable layers of torchgpipe and fairscale; "
                                "each library's Pipe sees only its own")
            library = next(iter(libs)) if libs else None
            if backend == "auto":
                backend = library or "torchgpipe"
            elif backend in ("torchgpipe", "fairscale") and library is not None and library != backend:
                raise CannotRun(f"the model's skippable layers come from {library}; "
                                f"--backend {backend} would not see them")
            if backend == "pipelining":
                backends.require("torch.distributed.pipelining", "pipelining")
            self.lib = backends.load(library or (backend if backend != "pipelining" else "torchgpipe"))
            self.report.backend = backend
            for name, layer in self.model.named_children():
                self.reach.layers[name] = _wrapped_class(layer, self.lib).__name__
            self._settle(built)
            out["detail"] = (f"{len(self.model)} layers, "
                             f"{sum(isinstance(m, self.lib.Skippable) for m in self.model.children())} "
                             f"skippable, sample {tuple(self.sample.shape)}")

    def _settle(self, built: target.Built, tied: Optional[Any] = None, where: str = "") -> None:
        """The run's balance, chunks, checkpoint modes and devices: each option given wins; then
        the pipe the target gave (`built.pipe`) or, for a Sequential, the pipe the lint ties to it
        in the project (`tied`, a facts.Pipe found at `where`); then the defaults."""
        opts = self.options
        pipe = built.pipe
        layers = len(self.model)
        origin = f"the {pipe.library} pipe the target gave" if pipe is not None else f"the pipe at {where}"
        taken: list[str] = []
        balance = opts.balance
        chunks = opts.chunks
        checkpoints = opts.checkpoints
        source = pipe if pipe is not None else tied
        if source is not None:
            if balance is None and source.balance is not None:
                balance = tuple(source.balance)
                taken.append("balance")
            if chunks is None and source.chunks is not None:
                chunks = source.chunks
                taken.append("chunks")
            if checkpoints is None and source.checkpoint is not None and pipe is not None:
                checkpoints = (source.checkpoint,)
                taken.append("checkpoint")
        if balance is None:
            given = len(opts.devices) if opts.devices and len(opts.devices) > 1 else 0
            balance = even_balance(layers, given or default_partitions())
        if opts.devices:
            devices = [torch.device(d) for d in opts.devices]  # names checked by check_devices
            if len(devices) == 1:
                devices = devices * len(balance)
            elif len(devices) < len(balance):
                raise CannotRun(f"{len(balance)} partitions but only {len(devices)} devices "
                                f"({', '.join(opts.devices)}); give one device for every partition, "
                                "or a single device for all of them")
        elif pipe is not None and pipe.devices and len(pipe.devices) >= len(balance) \
                and all(_here(d) for d in pipe.devices):
            devices = [torch.device(d) for d in pipe.devices]
            taken.append("devices")
        elif torch.cuda.is_available():  # every CUDA device, round-robin
            devices = [torch.device("cuda", i % torch.cuda.device_count()) for i in range(len(balance))]
        else:
            devices = [torch.device("cpu")] * len(balance)
        notes = [f"{', '.join(taken)} from {origin}"] if taken else []
        if pipe is not None and "devices" not in taken and not opts.devices:
            wanted = ", ".join(pipe.devices or ()) or "none"
            notes.append(f"its devices ({wanted}) are not all here: the devices here are used")
        if built.pipe_failure:
            notes.append(f"its constructor raised {built.pipe_failure}")
        self.chunks, self.checkpoints = chunks or DEFAULT_CHUNKS, tuple(checkpoints or CHECKPOINTS)
        self.options = replace(opts, chunks=self.chunks, checkpoints=self.checkpoints)
        self.balance, self.devices = balance, devices[:len(balance)]
        self.report.balance = balance
        self.report.chunks = self.chunks
        self.report.checkpoints = self.checkpoints if self.report.backend != "pipelining" else ("n/a",)
        self.report.devices = tuple(str(d) for d in self.devices)
        self.report.settings = "; ".join(notes)

    def settle_tied(self) -> None:
        """After the static pass: a Sequential that the lint ties to a pipe of the project runs with
        that pipe's balance and chunks, where no option gives them."""
        built = getattr(self, "built", None)
        if built is None or built.pipe is not None or self.lib is None \
                or (self.given.balance is not None and self.given.chunks is not None):
            return
        tied = self.static_target.pipe(self.analysis)
        if tied is not None:
            self.options = self.given  # what was given, not what the build settled
            self._settle(built, tied[1], tied[0])

    def check_balance(self) -> None:
        """A --balance that does not cover the model is a usage error, unless the static pass
        reports this very balance for this model (SKP301): then the run reproduces that finding.
        The user's pipe's own balance is never a usage error: the run meets what that pipe meets."""
        total, count = sum(self.balance), len(self.model)
        if total == count or self.given.balance is None:
            return
        if any(f.code == joining.BALANCE and f.args.get("total") == str(total) and f.args.get("count") == str(count)
               for f in self.report.static):
            return
        shown = ",".join(map(str, self.balance))
        raise CannotRun(f"--balance {shown} sums to {total} but the model has {count} layers; "
                        f"give layers per partition that sum to {count}")
