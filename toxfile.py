"""tox's inline plugin: make every supported Python findable where pyenv installs them.

pyenv's shims answer only for the versions selected globally, so `python3.9` is "not found" on a
machine that has 3.9 under pyenv but selects 3.11. Each installed version's own bin directory is
appended to PATH (after the shims, so nothing already found changes) before tox looks for
interpreters. Without pyenv this does nothing.
"""

from __future__ import annotations

import glob
import os
from typing import Any

from tox.plugin import impl

SUPPORTED = ("3.9", "3.10", "3.11", "3.12", "3.13")


def _newest_bin(versions: str, minor: str) -> str | None:
    found = [path for path in glob.glob(os.path.join(versions, minor + ".*", "bin"))
             if os.path.basename(os.path.dirname(path))[len(minor) + 1:].isdigit()
             and os.access(os.path.join(path, "python" + minor), os.X_OK)]
    found.sort(key=lambda path: int(os.path.basename(os.path.dirname(path))[len(minor) + 1:]))
    return found[-1] if found else None


@impl
def tox_add_core_config(core_conf: Any, state: Any) -> None:
    versions = os.path.join(os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv"), "versions")
    if not os.path.isdir(versions):
        return
    path = os.environ.get("PATH", "").split(os.pathsep)
    extra = [d for d in (_newest_bin(versions, minor) for minor in SUPPORTED) if d and d not in path]
    os.environ["PATH"] = os.pathsep.join(path + extra)
