"""Which frames of a traceback are skiplint's own (for tests that tell a crash of the plugin from
one of flake8 itself): by module path, never by a folder's name, since a clone, a tox environment or
a temporary folder may be named skiplint/ too."""

from __future__ import annotations

import os
import re
from pathlib import Path

import skiplint


def plugin_frames(stderr: str) -> list[str]:
    """The traceback frames of `stderr` that are in skiplint's own modules, by module path: the
    path of a clone or a tox environment (`skiplint/.tox/lowest/...`) names no module of the package."""
    package = Path(skiplint.__file__).resolve().parent
    modules = {path.relative_to(package.parent).as_posix() for path in package.rglob("*.py")}
    frames = re.findall(r'^\s*File "([^"]+)", line \d+', stderr, re.M)
    return [frame for frame in frames
            if any(frame.replace(os.sep, "/").endswith("/" + module) for module in modules)]
