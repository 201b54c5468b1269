"""How `fix` writes a file: only a regular file inside the paths given, only over the bytes it
read, atomically (a temporary file in the same directory, then os.replace, the mode kept); a
write that is not made is one of the exceptions below, with its one-line reason."""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Optional, Sequence

from skiplint import sources

#: The exit statuses of `skiplint fix`.
EXIT_OK, EXIT_CHANGES, EXIT_UNCHECKED = 0, 1, 2


class Unwritten(Exception):
    """A fix that was not written: the file is left as it is; the message is the one-line reason."""

    #: The exit status of `skiplint fix` this costs (0: the file is only left alone).
    status = EXIT_OK


class Outside(Unwritten):
    """A symbolic link that resolves outside the paths given: never followed to be rewritten."""


class Changed(Unwritten):
    """The file no longer holds what was read: writing the fix would lose what was saved since."""

    status = EXIT_CHANGES


class WriteFailed(Unwritten):
    """The file system refused the write (disk full, quota, a file-size limit, permissions)."""

    status = EXIT_UNCHECKED


#: The reason given when the file changed between reading and writing.
CHANGED_WHILE_FIXING = "changed while fixing; run again"


def inside(path: str, roots: Optional[Sequence[str]]) -> None:
    """Outside when `path` really is outside every one of `roots` (the paths given on the command
    line, files or directories, themselves resolved). None `roots`: no bound."""
    if roots is None:
        return
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return
    raise Outside(f"not fixed: a symbolic link to {real}, outside the paths given")


def write_fix(path: str, read: bytes, fixed: bytes, roots: Optional[Sequence[str]] = None) -> None:
    """Replace the file at `path` (the file itself, through any symbolic link) by `fixed`, only if
    it still holds exactly `read`: the new contents go to a temporary file in the same directory,
    with the file's mode, which then replaces it in one step (os.replace), so that a failed write
    leaves the file as it was. Outside when `path` now resolves outside `roots` (swapped for a
    link since it was read), Changed or WriteFailed when it is not written."""
    real = os.path.realpath(path)
    inside(real, roots)
    try:
        info = os.stat(real)
    except FileNotFoundError:  # deleted since it was read
        raise Changed(CHANGED_WHILE_FIXING) from None
    except OSError as error:
        raise WriteFailed(_os_error(error)) from None
    if not stat.S_ISREG(info.st_mode):
        raise WriteFailed("not a regular file")
    _unchanged(real, read)  # before the write too: a save made meanwhile is said as such, full disk or not
    directory, name = os.path.split(real)
    temporary = ""
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".skiplint-tmp", dir=directory or ".")
        with os.fdopen(fd, "wb") as handle:
            handle.write(fixed)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        made = os.stat(temporary)
        if hasattr(os, "chown") and (info.st_uid, info.st_gid) != (made.st_uid, made.st_gid):
            try:
                os.chown(temporary, info.st_uid, info.st_gid)
            except OSError:
                pass  # only the owner's group may be kept by an unprivileged user
        _unchanged(real, read)
        os.replace(temporary, real)
        temporary = ""
    except OSError as error:
        raise WriteFailed(_os_error(error)) from None
    finally:
        if temporary:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def _unchanged(path: str, read: bytes) -> None:
    """Changed unless the file still holds exactly `read`."""
    try:
        now = sources.read_bytes(path)
    except sources.SourceError:
        raise Changed(CHANGED_WHILE_FIXING) from None
    if now != read:
        raise Changed(CHANGED_WHILE_FIXING)


def _os_error(error: OSError) -> str:
    return f"could not write the fix: {error.strerror or error}; the file is unchanged"
