"""The run itself: import, build, static pass, verify_skippables, layout, plain reference, pipe per
checkpoint mode, join. Imports torch; runs in the supervised child process (skiplint.runtime.child),
or in the caller's process with skiplint.runtime.verify(..., isolate=False)."""

from __future__ import annotations

import copy
import importlib.util
import inspect
import math
import os
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional

import torch
from torch import nn

from skiplint.runtime import backends, join as joining, messages, static as static_pass, target
from skiplint.runtime.errors import CannotRun, Stopped, is_stop, one_line, stop_cause, whole
from skiplint.runtime.options import CHECKPOINTS, Options, is_file_target as options_is_file
from skiplint.runtime.report import Comparison, Observation, Report, Route, Step
from skiplint.runtime.result import RunResult

__all__ = ["CHECKPOINTS", "Options", "Runner", "RunResult", "TOLERANCES"]

#: Pipe against plain Sequential: outputs, then every gradient (parameters and the input).
TOLERANCES = {"output rtol": 1e-5, "output atol": 1e-6, "gradient rtol": 1e-4, "gradient atol": 1e-5}
_LIBRARY_MODULES = ("torch", "torchgpipe", "fairscale")
STEP_IMPORT, STEP_BUILD, STEP_STATIC = "import", "build", "static analysis"


class _Steps:
    """Times each step, records it and shows it as soon as it ends; `begin` hears of each start."""

    def __init__(self, report: Report, progress: Optional[Callable[[Step], None]],
                 begin: Optional[Callable[[str], None]] = None) -> None:
        self.report = report
        self.progress = progress
        self.begin = begin
        #: The step running now, or the last one that ran.
        self.current = ""

    def add(self, name: str, status: str, seconds: float, detail: str = "") -> None:
        step = Step(name, status, round(seconds, 4), detail)  # type: ignore[arg-type]
        self.report.steps.append(step)
        if self.progress is not None:
            self.progress(step)

    @contextmanager
    def timed(self, name: str) -> Iterator[dict[str, str]]:
        """Runs a step; the body sets out['status'] / out['detail']; CannotRun ends the run, and so
        does a sys.exit or KeyboardInterrupt of the model's code, named with the step."""
        out = {"status": "ok", "detail": ""}
        self.current = name
        if self.begin is not None:
            self.begin(name)
        start = time.perf_counter()
        try:
            yield out
        except Stopped as error:
            self.add(name, "error", time.perf_counter() - start, str(error))
            raise Stopped(f"{error} during {name}") from error.__cause__
        except CannotRun as error:
            self.add(name, "error", time.perf_counter() - start, str(error))
            raise
        except torch.cuda.OutOfMemoryError:
            self.add(name, "error", time.perf_counter() - start, "CUDA out of memory")
            raise CannotRun(f"CUDA out of memory in step '{name}': use more --chunks, a smaller sample "
                            "or more --devices") from None
        except BaseException as error:
            if not is_stop(error):
                raise
            reason = f"the model's code {stop_cause(error)} during {name}"
            self.add(name, "error", time.perf_counter() - start, reason)
            raise CannotRun(reason) from error
        self.add(name, out["status"], time.perf_counter() - start, out["detail"])


def _raised_at(error: BaseException) -> str:
    """Where an exception was raised: the innermost frame, as `package/module.py:LINE`."""
    tb = error.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
            break
    else:
        path = target.shown_path(path)
    return f"{path}:{tb.tb_lineno}"


def _failure_text(error: BaseException, every_line: bool = False) -> str:
    """A failure: its type and message (its first line, or every line), and where it was raised
    when it says nothing."""
    text = whole(error) if every_line else one_line(error)
    if text == type(error).__name__:
        where = _raised_at(error)
        if where:
            text += f" (raised at {where})"
    return text


def _rejected_module(error: BaseException) -> tuple[Optional[str], Optional[nn.Sequential]]:
    """The skip library whose verify_skippables raised `error`, and the Sequential it rejected, read
    from that function's frame in the traceback ((None, None) when it was not raised there)."""
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        module = str(frame.f_globals.get("__name__", ""))
        if frame.f_code.co_name == "verify_skippables":
            for library, root in backends.SKIP_ROOTS.items():
                if module == root or module.startswith(root + "."):
                    model = frame.f_locals.get("module")
                    return library, model if isinstance(model, nn.Sequential) else None
        tb = tb.tb_next
    return None, None


class _Escaped(Exception):
    """A sys.exit or KeyboardInterrupt in a layer's forward, carried as an Exception through the
    pipe's worker threads (which let BaseExceptions kill the thread and hang the pipe)."""

    def __init__(self, layer: str, stop: BaseException) -> None:
        super().__init__(f"layer '{layer}' {stop_cause(stop)}")
        self.layer = layer
        self.stop = stop


def _wrapped_class(layer: nn.Module, lib: Optional[backends.SkipLibrary]) -> type:
    if lib is not None and isinstance(layer, lib.Skippable):
        return type(layer.module)
    return type(layer)


def _default_devices(partitions: int) -> list[torch.device]:
    if torch.cuda.is_available():
        count = torch.cuda.device_count()
        return [torch.device("cuda", i % count) for i in range(partitions)]
    return [torch.device("cpu")] * partitions


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
        full = f"{device.type}:{device.index if device.index is not None else 0}"
        if full not in here:
            raise CannotRun(f"--devices {shown}: there is no {full} here; {listed}")


def default_partitions() -> int:
    """How many partitions a run without --balance or --devices splits the model into: one per
    GPU, and never fewer than two, so that skips cross a partition boundary (on one GPU or on the
    CPU both partitions share the device)."""
    return max(int(torch.cuda.device_count()), 2)


def _even_balance(layers: int, partitions: int) -> tuple[int, ...]:
    partitions = max(1, min(partitions, layers))
    base, extra = divmod(layers, partitions)
    return tuple(base + (1 if i < extra else 0) for i in range(partitions))


def _loss(output: Any, weights: list[torch.Tensor]) -> torch.Tensor:
    outputs = output if isinstance(output, tuple) else (output,)
    return sum(((o.float().cpu() * w).sum() for o, w in zip(outputs, weights)), torch.zeros(()))


def _weights(output: Any) -> list[torch.Tensor]:
    outputs = output if isinstance(output, tuple) else (output,)
    bad = next((o for o in outputs if not isinstance(o, torch.Tensor)), None)
    if bad is not None:
        raise CannotRun(f"the model's output is a {type(bad).__name__}, not a tensor or a tuple of tensors")
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(o.shape, generator=gen) for o in outputs]


def _backward(loss: Any) -> None:
    loss.backward()


def _pairs(a: Any, b: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    a_t = a if isinstance(a, tuple) else (a,)
    b_t = b if isinstance(b, tuple) else (b,)
    return [(x.detach().float().cpu(), y.detach().float().cpu()) for x, y in zip(a_t, b_t)]


def _max_diff(a: Any, b: Any) -> float:
    """The largest absolute difference; equal values (NaN with NaN, inf with inf) differ by 0."""
    worst = 0.0
    for x, y in _pairs(a, b):
        if x.shape != y.shape:
            return math.inf
        if x.numel():
            same = (x == y) | (torch.isnan(x) & torch.isnan(y))
            diff = torch.where(same, torch.zeros_like(x), (x - y).abs())
            worst = max(worst, float(torch.nan_to_num(diff, nan=math.inf).max()))
    return worst


def _close(a: Any, b: Any, rtol: float, atol: float) -> bool:
    """Elementwise close, NaN equal to NaN: a deterministic model's NaN is the same NaN in a pipe."""
    a_t = a if isinstance(a, tuple) else (a,)
    b_t = b if isinstance(b, tuple) else (b,)
    return len(a_t) == len(b_t) and all(
        x.shape == y.shape and torch.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True) for x, y in _pairs(a, b))


class Runner:
    #: The model and its sample, once built (or the model a verify_skippables of the target's own rejected).
    model: nn.Sequential
    sample: torch.Tensor

    def __init__(self, options: Options, progress: Optional[Callable[[Step], None]] = None,
                 begin: Optional[Callable[[str], None]] = None) -> None:
        self.options = options
        self.report = Report(options.target, tolerances=dict(TOLERANCES))
        self.steps = _Steps(self.report, progress, begin)
        self.reach = joining.Reach()
        self.raw: list[Observation] = []
        self.lib: Optional[backends.SkipLibrary] = None
        self.verified = False
        self.balanced = False
        #: The step (import or build) in which the target's own code ran verify_skippables (a
        #: module-level GPipe(...)) and it rejected the model; None when it did not.
        self.rejected: Optional[str] = None
        #: The static pass (once the static step ran) and the target as it tells findings apart.
        self.analysis = static_pass.Analysis()
        self.static_target = static_pass.Target(None, "")

    # -- helpers --------------------------------------------------------------------------
    def _observe(self, step: str, error: BaseException, layer: Optional[str]) -> list[Observation]:
        """Failures of a step read from the library's message; [] when the error is not one of them."""
        module: Any = dict(self.model.named_children()).get(layer) if layer is not None else None
        poppable: frozenset[str] = frozenset()
        if module is not None and self.lib is not None and isinstance(module, self.lib.Skippable):
            poppable = frozenset(module.poppable_names)
        found = []
        unpopped = self._unpopped()
        for failure in messages.parse_forward(error, poppable):
            at = failure.layer if failure.layer is not None else layer
            if at is None and failure.code == joining.UNPOPPED:
                # verify_skippables names no layer for a stash never popped: the first stashing layer.
                at = next((child for child, name in unpopped if name == failure.name), None)
                unpopped = [item for item in unpopped if item[0] != at or item[1] != failure.name]
            cls = self.reach.layers.get(at) if at is not None else None
            found.append(Observation(failure.code, step, at, cls, failure.name, failure.message))
        return found

    def _unpopped(self) -> list[tuple[str, str]]:
        """(first stashing child, name) of each (namespace, name) that no later layer pops."""
        if self.lib is None:
            return []
        open_: dict[Any, str] = {}
        for child, layer in self.model.named_children():
            if not isinstance(layer, self.lib.Skippable):
                continue
            for ns, name in layer.stashable():
                if name not in layer.poppable_names:
                    open_.setdefault((ns, name), child)
            for ns, name in layer.poppable():
                if name not in layer.stashable_names:
                    open_.pop((ns, name), None)
        return [(child, key[1]) for key, child in open_.items()]

    def _fresh_tracker(self) -> Any:
        assert self.lib is not None
        return self.lib.use_skip_tracker(self.lib.SkipTracker())

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
                backends.require_pipelining()
            self.lib = backends.load(library or (backend if backend != "pipelining" else "torchgpipe"))
            self.report.backend = backend
            for name, layer in self.model.named_children():
                self.reach.layers[name] = _wrapped_class(layer, self.lib).__name__
            layers = len(self.model)
            opts = self.options
            if opts.balance is not None:
                balance = tuple(opts.balance)
            else:
                given = len(opts.devices) if opts.devices and len(opts.devices) > 1 else 0
                balance = _even_balance(layers, given or default_partitions())
            if opts.devices:
                devices = [torch.device(d) for d in opts.devices]  # names checked by check_devices
                if len(devices) == 1:
                    devices = devices * len(balance)
                elif len(devices) < len(balance):
                    raise CannotRun(f"{len(balance)} partitions but only {len(devices)} devices "
                                    f"({', '.join(opts.devices)}); give one device for every partition, "
                                    "or a single device for all of them")
            else:
                devices = _default_devices(len(balance))
            self.balance, self.devices = balance, devices[:len(balance)]
            self.report.balance = balance
            self.report.chunks = opts.chunks
            self.report.checkpoints = tuple(opts.checkpoints) if backend != "pipelining" else ("n/a",)
            self.report.devices = tuple(str(d) for d in self.devices)
            out["detail"] = (f"{layers} layers, {sum(isinstance(m, self.lib.Skippable) for m in self.model.children())} "
                             f"skippable, sample {tuple(self.sample.shape)}")

    def check_balance(self) -> None:
        """A --balance that does not cover the model is a usage error, unless the static pass
        reports this very balance for this model (SKP301): then the run reproduces that finding."""
        total, count = sum(self.balance), len(self.model)
        if total == count:
            return
        for finding in self.report.static:
            if finding.code == joining.BALANCE:
                if finding.args.get("total") == str(total) and finding.args.get("count") == str(count):
                    return
        shown = ",".join(map(str, self.balance))
        raise CannotRun(f"--balance {shown} sums to {total} but the model has {count} layers; "
                        f"give layers per partition that sum to {count}")

    def verify(self) -> None:
        assert self.lib is not None
        with self.steps.timed("verify_skippables") as out:
            self.reach.verify_ran = True
            try:
                self.lib.verify_skippables(self.model)
                self.verified = True
            except TypeError as error:
                self.verified = False
                found = self._observe("verify_skippables", error, None)
                if not found:
                    raise CannotRun(f"verify_skippables raised {whole(error)}") from error
                self.raw.extend(found)
                out["status"], out["detail"] = "failed", f"{len(found)} mismatch(es)"

    def split(self) -> None:
        """The pipelining backend's partitioning: the stage plan at the balance (skiplint.runtime.adapter)."""
        from skiplint.runtime import pipelining

        assert self.lib is not None
        with self.steps.timed(pipelining.STEP_SPLIT) as out:
            if not self.verified:
                out["status"], out["detail"] = "skipped", "verify_skippables failed"
                return
            self.reach.layout_ran = True
            done = pipelining.split(self.model, self.lib, self.balance)
            self.raw.extend(done.observations)
            self.balanced = done.balanced
            if done.crossings is not None:
                self.report.crossings, self.report.runtime_routes = done.crossings, done.routes
            if not done.balanced:
                out["status"] = "failed"
            out["detail"] = done.detail

    def layout(self) -> None:
        assert self.lib is not None
        with self.steps.timed("inspect_skip_layout") as out:
            self.reach.layout_ran = True
            self.balanced = False
            try:
                partitions, _, _ = self.lib.split_module(copy.deepcopy(self.model), list(self.balance),
                                                         [torch.device("cpu")] * len(self.balance))
            except self.lib.BalanceError as error:
                found = [f for f in messages.parse_forward(error) if f.code == joining.BALANCE]
                if found:
                    self.raw.append(Observation(found[0].code, "inspect_skip_layout", None, None, None,
                                                found[0].message))
                    out["status"], out["detail"] = "failed", "balance does not fit the model"
                    return
                raise CannotRun(f"bad --balance: {error}") from None
            self.balanced = True
            if not self.verified:
                out["status"], out["detail"] = "skipped", "verify_skippables failed"
                return
            layout = self.lib.inspect_skip_layout(partitions)
            self.report.runtime_routes = self._routes(layout)
            crossing = sum(r.src_partition != r.dst_partition for r in self.report.runtime_routes)
            out["detail"] = (f"balance {list(self.balance)}: {len(self.report.runtime_routes)} skip(s), "
                             f"{crossing} crossing partitions")

    def _routes(self, layout: Any) -> list[Route]:
        assert self.lib is not None
        stashed_at: dict[Any, str] = {}
        routes = []
        for name, layer in self.model.named_children():
            if not isinstance(layer, self.lib.Skippable):
                continue
            for key in layer.stashable():
                stashed_at[key] = name
            for key in layer.poppable():
                src_j, dst_j = layout.by_ns_name[key]
                routes.append(Route(key[1], stashed_at[key], name, src_j, dst_j))
        return routes

    def plain(self) -> Optional[RunResult]:
        """The plain Sequential, layer by layer on the first device: the reference every run is compared with."""
        with self.steps.timed("plain Sequential") as out:
            device = self.devices[0]
            model = copy.deepcopy(self.model).to(device)
            x = self.sample.clone().to(device)
            if x.is_floating_point():
                x.requires_grad_(True)
            h: Any = x
            with self._fresh_tracker():
                for name, layer in model.named_children():
                    cls = self.reach.layers[name]
                    try:
                        h = layer(h)
                    except (torch.cuda.OutOfMemoryError, CannotRun):
                        raise
                    except Exception as error:
                        self.reach.failed.add(cls)
                        found = self._observe("plain Sequential", error, name)
                        if not found:
                            raise CannotRun(f"the sample does not fit the model: layer '{name}' ({cls}) "
                                            f"raised {whole(error)}") from error
                        self.raw.extend(found)
                        out["status"], out["detail"] = "failed", f"layer '{name}' ({cls}): {found[0].message}"
                        return None
                    except BaseException as error:
                        if not is_stop(error):
                            raise
                        raise Stopped(f"layer '{name}' ({cls}) {stop_cause(error)}") from error
                    self.reach.completed.add(cls)
            self.weights = _weights(h)
            _backward(_loss(h, self.weights))
            grads = {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters() if p.grad is not None}
            if x.grad is not None:
                grads["<input>"] = x.grad.detach().cpu().clone()
            out["detail"] = f"forward and backward, {len(grads)} gradients"
            return RunResult(h, grads)

    def pipe(self, mode: str, reference: RunResult) -> None:
        assert self.lib is not None
        name = f"Pipe forward+backward [{mode}]"
        with self.steps.timed(name) as out:
            model = copy.deepcopy(self.model)
            labels = _label_layers(model)
            self.reach.pipe_ran = True
            try:
                pipe = self.lib.Pipe(model, balance=list(self.balance), devices=list(self.devices),
                                     chunks=self.options.chunks, checkpoint=mode)
                x = self.sample.clone().to(self.devices[0])
                if x.is_floating_point():
                    x.requires_grad_(True)
                output = pipe(x)
                _backward(_loss(output, self.weights))
            except (torch.cuda.OutOfMemoryError, CannotRun):
                raise
            except _Escaped as escaped:
                cls = self.reach.layers.get(escaped.layer)
                raise Stopped(f"layer '{escaped.layer}' ({cls}) {stop_cause(escaped.stop)}") from escaped.stop
            except Exception as error:
                layer = getattr(error, "_skiplint_layer", None)
                found = self._observe(name, error, layer)
                where = f" in layer '{layer}'" if layer is not None else ""
                text = f"{_failure_text(error)}{where}"
                if not found:
                    cls = self.reach.layers.get(layer) if layer is not None else None
                    found = [Observation(None, name, layer, cls, None, text)]
                self.raw.extend(found)
                out["status"], out["detail"] = "failed", text
                return
            finally:
                labels.close()
            grads = {n: p.grad.detach().cpu() for n, p in model.named_parameters() if p.grad is not None}
            if x.grad is not None:
                grads["<input>"] = x.grad.detach().cpu()
            self.reach.completed.update(self.reach.layers.values())
            self._compare(mode, output, grads, reference, out)

    def _compare(self, mode: str, output: Any, grads: dict[str, torch.Tensor], reference: RunResult,
                 out: dict[str, str]) -> None:
        t = TOLERANCES
        out_ok = _close(output, reference.output, t["output rtol"], t["output atol"])
        grad_ok = grads.keys() == reference.grads.keys() and all(
            _close(grads[k], reference.grads[k], t["gradient rtol"], t["gradient atol"]) for k in grads)
        grad_diff = max((_max_diff(grads[k], reference.grads[k]) for k in grads.keys() & reference.grads.keys()),
                        default=0.0)
        comparison = Comparison(mode, _max_diff(output, reference.output), grad_diff, out_ok and grad_ok)
        self.report.comparisons.append(comparison)
        if not comparison.ok:
            missing = sorted(reference.grads.keys() ^ grads.keys())
            extra = f"; gradients present in only one run: {', '.join(missing)}" if missing else ""
            out["status"], out["detail"] = "failed", f"differs from the plain Sequential{extra}"
        else:
            out["detail"] = f"matches the plain Sequential ({len(grads)} gradients)"

    def static(self) -> None:
        """The lint over the model's source files, once each; the findings of the classes and
        compositions the target builds are joined, the others listed apart."""
        with self.steps.timed(STEP_STATIC) as out:
            files = self._source_files()
            self.analysis = static_pass.analyse(files)
            self.static_target = self._static_target()
            self.report.static, self.report.elsewhere = self.static_target.split(self.analysis)
            apart = f", {len(self.report.elsewhere)} not part of this target" if self.report.elsewhere else ""
            out["detail"] = f"{len(files)} file(s), {len(self.report.static)} finding(s){apart}"

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

    def compare_routes(self) -> None:
        """The static route table of the composition the target builds, from the static pass's
        own analysis (no file is analysed again)."""
        from skiplint.runtime import routes as static_routes
        own = [c for _, c in self.static_target.compositions(self.analysis)]
        every = [c for found in self.analysis.compositions.values() for c in found]
        routes, note = static_routes.static_routes(own, every, self.static_target.children, self.balance)
        self.report.static_routes, self.report.static_routes_note = routes, note

    def _unexplained(self) -> list[Observation]:
        """A failed step that no observation comes from is a failure of its own (missed unless a
        static finding predicts it): a Pipe result that differs, a stage that failed."""
        explained = {o.step for o in self.raw}
        return [Observation(None, step.name, None, None, None, step.detail or "failed")
                for step in self.report.steps if step.status == "failed" and step.name not in explained]

    def finish(self) -> None:
        with self.steps.timed("join") as out:
            if self.report.runtime_routes is not None:
                self.compare_routes()
            self.raw.extend(self._unexplained())
            observations, static = joining.join(self.raw, self.report.static, self.reach)
            self.report.observations, self.report.static = observations, static
            confirmed = sum(s.verdict == "confirmed" for s in static)
            missed = sum(not o.predicted for o in observations)
            out["detail"] = (f"{confirmed}/{len(static)} static finding(s) confirmed, "
                             f"{missed}/{len(observations)} runtime failure(s) missed")
            if missed or confirmed < len(static) or not self.report.routes_agree:
                out["status"] = "failed"

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
            for mode in self.options.checkpoints:
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


class _Labels:
    """Instance-level forward wrappers that tag an exception with the child it came from, and carry
    a sys.exit or KeyboardInterrupt out of the pipe's threads as an _Escaped exception."""

    def __init__(self, model: nn.Sequential) -> None:
        self.layers = list(model.named_children())
        for name, layer in self.layers:
            layer.forward = self._wrap(name, layer.forward)  # type: ignore[method-assign, unused-ignore]

    @staticmethod
    def _wrap(name: str, forward: Callable[..., Any]) -> Callable[..., Any]:
        def labelled(*args: Any, **kwargs: Any) -> Any:
            try:
                return forward(*args, **kwargs)
            except Exception as error:
                if not hasattr(error, "_skiplint_layer"):
                    try:
                        error._skiplint_layer = name  # type: ignore[attr-defined]
                    except AttributeError:
                        pass
                raise
            except BaseException as error:
                if not is_stop(error):
                    raise
                raise _Escaped(name, error) from error
        return labelled

    def close(self) -> None:
        for _name, layer in self.layers:
            layer.__dict__.pop("forward", None)


def _label_layers(model: nn.Sequential) -> _Labels:
    return _Labels(model)
