"""Import a target (`path/file.py:NAME` or `package.module:NAME`) and build the model and sample.

The target sees what `python file.py` would give it: `sys.argv` is just its file name and the
working directory comes first on `sys.path` (as `python -m` and pytest put it)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Callable, Iterator, Optional

from skiplint.runtime import userpipe
from skiplint.runtime.errors import CannotRun, Stopped, is_stop, one_line, stop_cause, whole
from skiplint.runtime.messages import is_verify_error
from skiplint.runtime.userpipe import UserPipe
from skiplint.runtime.options import is_file_target, split_target as _split

#: How many of a module's callables a "has no attribute" message lists.
_LISTED = 12


def split_target(spec: str) -> tuple[str, str]:
    try:
        return _split(spec)
    except ValueError as error:
        raise CannotRun(str(error)) from None


def shown_path(path: str) -> str:
    """A path as the lint prints it: relative to the working directory when it is below it."""
    if not os.path.isabs(path):
        return path
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


@contextmanager
def as_script(argv0: str, folder: Optional[str] = None) -> Iterator[None]:
    """sys.argv = [argv0] and the folder (default: the working directory) first on sys.path."""
    saved_argv = sys.argv
    folder = folder or os.getcwd()
    added = folder not in sys.path
    sys.argv = [argv0]
    if added:
        sys.path.insert(0, folder)
    try:
        yield
    finally:
        sys.argv = saved_argv
        if added and folder in sys.path:
            sys.path.remove(folder)


def _file_module(where: str) -> ModuleType:
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
    try:
        with as_script(where, os.path.dirname(path)):
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def import_module(where: str, role: str = "the target module") -> ModuleType:
    """A module from a file path (registered under a private name) or from a dotted name."""
    try:
        if is_file_target(where):
            return _file_module(where)
        with as_script(where):
            return importlib.import_module(where)
    except CannotRun:
        raise
    except Exception as error:
        raise CannotRun(f"{where} does not import: {whole(error)}") from error
    except BaseException as error:
        if not is_stop(error):
            raise
        raise Stopped(f"{role} {where} {stop_cause(error)}") from error


def _callables(module: ModuleType) -> list[str]:
    """Public names of the module that a target could name: its own functions and classes, and
    callable objects (a model instance) bound at its top level."""
    names = []
    for key, value in vars(module).items():
        if key.startswith("_") or isinstance(value, ModuleType) or not callable(value):
            continue
        if isinstance(value, type) or hasattr(value, "__code__"):
            if getattr(value, "__module__", None) != module.__name__:
                continue
        elif type(value).__module__ in ("builtins", "functools", "typing"):
            continue
        names.append(key)
    return sorted(names)


def attribute(module: ModuleType, name: str, where: str) -> Any:
    """The object `name` (dotted) of the module imported from `where`."""
    obj: Any = module
    for part in name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            owner = shown_path(where) if is_file_target(where) else module.__name__
            found = _callables(module)
            listed = ", ".join(found[:_LISTED]) + (", ..." if len(found) > _LISTED else "")
            have = f"; it has: {listed}" if found else "; it defines no callable"
            raise CannotRun(f"{owner} has no attribute {name!r}{have}") from None
    return obj


@dataclass
class Built:
    model: Any
    sample: Any
    #: The factory (or object) the target named, for finding its source file.
    origin: Any
    #: The file the target was imported from, when known.
    source_file: Optional[str]
    #: The pipe the target gave (its library, balance, chunks, checkpoint and devices), when it
    #: gave one rather than a Sequential; also when the pipe's constructor raised.
    pipe: Optional[UserPipe] = None
    #: The pipe's constructor raised this (one line): the run uses the pipe's settings instead.
    pipe_failure: str = ""


def _call(factory: Callable[[], Any], role: str, spec: str, argv0: str) -> Any:
    import torch

    torch.manual_seed(0)
    try:
        with as_script(argv0):
            return factory()
    except Exception as error:
        raise CannotRun(f"{spec} raised {whole(error)}") from error
    except BaseException as error:
        if not is_stop(error):
            raise
        raise Stopped(f"{role} {stop_cause(error)}") from error


def load(spec: str, role: str = "the target module") -> tuple[ModuleType, Any]:
    """The step `import`: the module of `spec` (the target's, or the sample's) and the object it names."""
    where, name = split_target(spec)
    module = import_module(where, role)
    return module, attribute(module, name, where)


def build(spec: str, sample_spec: Optional[str] = None,
          input_shape: Optional[tuple[int, ...]] = None,
          loaded: Optional[tuple[ModuleType, Any]] = None) -> Built:
    """Import (unless `loaded` is given) and call the target; the sample comes from the pair,
    --sample or --input-shape."""
    import torch
    from torch import nn

    module, origin = loaded if loaded is not None else load(spec)
    where, _ = split_target(spec)
    got: Optional[UserPipe] = None
    failure = ""
    if callable(origin) and not isinstance(origin, nn.Module):
        try:
            got = userpipe.unpack(_call(origin, "the model factory", spec, where))
        except CannotRun as error:
            # A pipe the factory built, whose constructor raised (on a machine without the devices
            # it names, or with a balance that does not fit): the run builds that pipe itself.
            cause = error.__cause__
            got = userpipe.failed_pipe(cause) if cause is not None and not is_verify_error(cause) else None
            if got is None or cause is None:
                raise
            failure = one_line(cause)
        except userpipe.NotAModel as error:
            raise CannotRun(f"{spec} gave {error}") from None
    else:
        try:
            got = userpipe.unpack(origin)
        except userpipe.NotAModel as error:
            raise CannotRun(f"{spec} is {error}") from None
    obj, sample = got.model, got.sample
    if len(obj) == 0:
        raise CannotRun(f"{spec} gave an empty nn.Sequential: it has no layer to check")
    if sample_spec is not None:
        factory: Callable[[], Any] = load(sample_spec, "the sample's module")[1]
        sample = _call(factory, "the sample factory", sample_spec, where) if callable(factory) else factory
    elif input_shape is not None:
        sample = torch.randn(*input_shape, generator=torch.Generator().manual_seed(0))
    if sample is None:
        raise CannotRun(f"no sample input for {spec}: pass --sample module:fn or --input-shape N,C,..., "
                        "or return (model, sample) from the factory")
    if not isinstance(sample, torch.Tensor):
        raise CannotRun(f"the sample is a {type(sample).__name__}, not a tensor")
    source = getattr(module, "__file__", None)
    return Built(obj, sample, origin, source, got if got.is_pipe else None, failure)
