"""The steps that run the model: verify_skippables, the partitioning, the plain Sequential and the
pipe per checkpoint mode, compared with the plain run."""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from typing import Any, Callable, Optional

import torch
from torch import nn

from skiplint.runtime import adapter, backends, join as joining, messages
from skiplint.runtime.errors import CannotRun, Stopped, is_stop, stop_cause, whole
from skiplint.runtime.report import Comparison, Crossing, Observation
from skiplint.runtime.state import TOLERANCES, RunResult, RunState, _failure_text


class _Escaped(Exception):
    """A sys.exit or KeyboardInterrupt in a layer's forward, carried as an Exception through the
    pipe's worker threads (which let BaseExceptions kill the thread and hang the pipe)."""

    def __init__(self, layer: str, stop: BaseException) -> None:
        super().__init__(f"layer '{layer}' {stop_cause(stop)}")
        self.layer = layer
        self.stop = stop


def _loss(output: Any, weights: list[torch.Tensor]) -> Any:
    outputs = output if isinstance(output, tuple) else (output,)
    return sum(((o.float().cpu() * w).sum() for o, w in zip(outputs, weights)), torch.zeros(()))


def _weights(output: Any) -> list[torch.Tensor]:
    outputs = output if isinstance(output, tuple) else (output,)
    bad = next((o for o in outputs if not isinstance(o, torch.Tensor)), None)
    if bad is not None:
        raise CannotRun(f"the model's output is a {type(bad).__name__}, not a tensor or a tuple of tensors")
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(o.shape, generator=gen) for o in outputs]


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


def gradients(count: int) -> str:
    """`1 gradient`, `13 gradients`: the count of gradients a run compared, for its detail line."""
    return f"{count} gradient" if count == 1 else f"{count} gradients"


class RunSteps(RunState):
    """verify_skippables, the partitioning (inspect_skip_layout, or the pipelining backend's split),
    the plain Sequential and the pipe."""

    def verify(self) -> None:
        assert self.lib is not None
        with self.steps.timed("verify_skippables") as out:
            self.reach.verify_ran = True
            self.reach.performed("verify", "verify_skippables")
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
        """The pipelining backend's partitioning: the stage plan at the balance (skiplint.runtime.adapter),
        the skips each boundary carries, beside the library's own skip layout of the same partitions."""
        from skiplint.runtime.pipelining import STEP_SPLIT

        assert self.lib is not None
        with self.steps.timed(STEP_SPLIT) as out:
            if not self.verified:
                out["status"], out["detail"] = "skipped", "verify_skippables failed"
                return
            self.reach.layout_ran = True
            self.reach.performed("partition", STEP_SPLIT)
            layers = list(self.model.named_children())
            children, balance = [name for name, _ in layers], self.balance
            if sum(balance) != len(children):
                message = (f"module and sum of balance have different length "
                           f"(module: {len(children)}, sum of balance: {sum(balance)})")
                self.raw.append(Observation(joining.BALANCE, STEP_SPLIT, None, None, None, message))
                out["status"], out["detail"] = "failed", "balance does not fit the model"
                return
            plan = adapter.plan(self.model, balance)
            crossings = [Crossing(f"output of stage {b}", b, b + 1) for b in range(plan.stages - 1)]
            crossings += [Crossing(f"layer {children[skip.stash_layer]} -> layer {children[skip.pop_layer or 0]}",
                                   skip.stash_stage, skip.pop_stage, skip.name)
                          for skip in plan.skips if skip.pop_stage is not None and skip.pop_stage != skip.stash_stage]
            partitions = [nn.Sequential(OrderedDict(layers[sum(balance[:i]):sum(balance[:i + 1])]))
                          for i in range(len(balance))]
            routes = backends.layout_routes(self.model, self.lib, partitions)
            self.report.crossings, self.report.runtime_routes = crossings, routes
            self.balanced = True
            carried = sum(len(plan.carried(b)) for b in range(plan.stages - 1))
            out["detail"] = (f"{plan.stages} stages, {len(crossings) - (plan.stages - 1)} skip(s) cross stages, "
                             f"{carried} carried value(s) at the boundaries")

    def layout(self) -> None:
        assert self.lib is not None
        with self.steps.timed("inspect_skip_layout") as out:
            self.reach.layout_ran = True
            self.reach.performed("partition", "inspect_skip_layout")
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
            self.report.runtime_routes = backends.layout_routes(self.model, self.lib, partitions)
            crossing = sum(r.src_partition != r.dst_partition for r in self.report.runtime_routes)
            out["detail"] = (f"balance {list(self.balance)}: {len(self.report.runtime_routes)} skip(s), "
                             f"{crossing} crossing partitions")

    def plain(self) -> Optional[RunResult]:
        """The plain Sequential, layer by layer on the first device: the reference every run is compared with."""
        with self.steps.timed("plain Sequential") as out:
            self.reach.performed("forward", "plain Sequential")
            device = self.devices[0]
            model = copy.deepcopy(self.model).to(device)
            x = self.sample.clone().to(device)
            if x.is_floating_point():
                x.requires_grad_(True)
            h: Any = x
            assert self.lib is not None
            with self.lib.use_skip_tracker(self.lib.SkipTracker()):
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
            _loss(h, self.weights).backward()
            grads = {n: p.grad.detach().cpu().clone() for n, p in model.named_parameters() if p.grad is not None}
            if x.grad is not None:
                grads["<input>"] = x.grad.detach().cpu().clone()
            out["detail"] = f"forward and backward, {gradients(len(grads))}"
            return RunResult(h, grads)

    def pipe(self, mode: str, reference: RunResult) -> None:
        assert self.lib is not None
        name = f"Pipe forward+backward [{mode}]"
        with self.steps.timed(name) as out:
            model = copy.deepcopy(self.model)
            labels = _Labels(model)
            self.reach.pipe_ran = True
            self.reach.performed("forward", name)
            self.reach.performed("pipe", name)
            try:
                pipe = self.lib.Pipe(model, balance=list(self.balance), devices=list(self.devices),
                                     chunks=self.chunks, checkpoint=mode)
                x = self.sample.clone().to(self.devices[0])
                if x.is_floating_point():
                    x.requires_grad_(True)
                output = pipe(x)
                _loss(output, self.weights).backward()
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
            out["detail"] = f"matches the plain Sequential ({gradients(len(grads))})"


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
