"""Finding the files to check and reading them into text, with one-line reasons when that fails."""

from __future__ import annotations

import io
import os
import tokenize
from typing import Iterable, Iterator

#: Directory names never descended into (flake8's defaults plus virtual environments and caches).
DEFAULT_EXCLUDE = frozenset({
    ".svn", "CVS", ".bzr", ".hg", ".git", "__pycache__", ".tox", ".nox", ".eggs",
    ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules",
})
SUFFIXES = (".py", ".pyi")


class SourceError(Exception):
    """A file that cannot be read or decoded; the message is the one-line reason."""


def discover(paths: Iterable[str], exclude: frozenset[str] = DEFAULT_EXCLUDE) -> Iterator[str]:
    """Python files under the given paths, in a stable order; explicit files are always included."""
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in exclude and not d.endswith(".egg"))
                for name in sorted(files):
                    if name.endswith(SUFFIXES):
                        yield os.path.join(root, name)
        else:
            yield path  # a missing or unreadable file is reported when it is read


def read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise SourceError("no such file or directory") from None
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None


def decode(data: bytes) -> str:
    """Source text as Python would decode it (PEP 263 cookie, BOM), or SourceError."""
    if b"\0" in data:
        raise SourceError("contains NUL bytes; not a Python source file")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        raise SourceError(f"bad encoding declaration: {error.msg if hasattr(error, 'msg') else error}") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        raise SourceError(f"not valid {encoding}: byte 0x{data[error.start]:02x} at offset {error.start}") from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None
