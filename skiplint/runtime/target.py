"""Import a target (`path/file.py:NAME` or `package.module:NAME`) and build the model and sample."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Optional

from skiplint.runtime.errors import CannotRun


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def split_target(spec: str) -> tuple[str, str]:
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise CannotRun(f"target {spec!r} is not path/to/file.py:NAME or package.module:NAME")
    return where, name


def import_module(where: str) -> ModuleType:
    """A module from a file path (registered under a private name) or from a dotted name."""
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            path = os.path.abspath(where)
            if not os.path.isfile(path):
                raise CannotRun(f"no such file: {where}")
            name = "skiplint_target_" + os.path.splitext(os.path.basename(path))[0]
            existing = sys.modules.get(name)
            if existing is not None and getattr(existing, "__file__", None) == path:
                return existing
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            folder = os.path.dirname(path)
            added = folder not in sys.path
            if added:
                sys.path.insert(0, folder)
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
            finally:
                if added:
                    sys.path.remove(folder)
            return module
        return importlib.import_module(where)
    except CannotRun:
        raise
    except Exception as error:
        raise CannotRun(f"{where} does not import: {_one_line(error)}") from error


def attribute(module: ModuleType, name: str, spec: str) -> Any:
    obj: Any = module
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CannotRun(f"{spec}: {module.__name__} has no attribute {name!r}") from None
    return obj


@dataclass
class Built:
    model: Any
    sample: Any
    #: The factory (or object) the target named, for finding its source file.
    origin: Any
    #: The file the target was imported from, when known.
    source_file: Optional[str]


def build(spec: str, sample_spec: Optional[str] = None,
          input_shape: Optional[tuple[int, ...]] = None) -> Built:
    """Import and call the target; the sample comes from the pair, --sample or --input-shape."""
    import torch
    from torch import nn

    where, name = split_target(spec)
    module = import_module(where)
    origin = attribute(module, name, spec)
    obj = origin
    if callable(origin) and not isinstance(origin, nn.Module):
        torch.manual_seed(0)
        try:
            obj = origin()
        except Exception as error:
            raise CannotRun(f"{spec} raised {_one_line(error)}") from error
    sample = None
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], nn.Module):
        obj, sample = obj
    if not isinstance(obj, nn.Sequential):
        raise CannotRun(f"{spec} gave {type(obj).__name__}, not an nn.Sequential or a (model, sample) pair")
    if sample_spec is not None:
        sample_where, sample_name = split_target(sample_spec)
        factory: Callable[[], Any] = attribute(import_module(sample_where), sample_name, sample_spec)
        torch.manual_seed(0)
        try:
            sample = factory() if callable(factory) else factory
        except Exception as error:
            raise CannotRun(f"{sample_spec} raised {_one_line(error)}") from error
    elif input_shape is not None:
        sample = torch.randn(*input_shape, generator=torch.Generator().manual_seed(0))
    if sample is None:
        raise CannotRun(f"no sample input for {spec}: pass --sample module:fn or --input-shape N,C,..., "
                        "or return (model, sample) from the factory")
    if not isinstance(sample, torch.Tensor):
        raise CannotRun(f"the sample is a {type(sample).__name__}, not a tensor")
    source = getattr(module, "__file__", None)
    return Built(obj, sample, origin, source)
