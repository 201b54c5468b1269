"""Finding the files to check and reading them into text, with one-line reasons when that fails.

Hostile trees are expected: symlink loops, FIFOs named `*.py`, files that vanish or change between
discovery and reading, unreadable directories, huge generated modules. Discovery never follows a
directory link twice, reading never blocks on something that is not a regular file, and every
failure becomes a SourceError whose message is the one-line reason reported as SKP900.
"""

from __future__ import annotations

import ast
import bisect
import codecs
import errno
import io
import os
import re
import stat
import tokenize
import warnings
from typing import BinaryIO, Callable, Iterator, Optional

# Re-exported for the many readers of source lines.
from skiplint.textlines import line_starts as line_starts, lines as lines  # noqa: F401

#: Directory names never descended into when a directory is walked (flake8's defaults, virtual
#: environments, caches, and build output). `--exclude` replaces this list, `--extend-exclude` adds.
DEFAULT_EXCLUDE = frozenset({
    ".svn", "CVS", ".bzr", ".hg", ".git", "__pycache__", ".tox", ".nox", ".eggs",
    ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules",
    "build", "dist", "site-packages",
})
SUFFIXES = (".py", ".pyi")

#: Larger files are not checked (SKP900): nobody writes such a module by hand, and parsing one
#: with libcst takes minutes and gigabytes (10 MB: about 2 minutes, 4.8 GB on a 2-core machine).
#: The largest file of the torch 2.13 package sources is 1.4 MB.
MAX_BYTES = 4 * 1024 * 1024

_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


class SourceError(Exception):
    """A file that cannot be read or decoded; the message is the one-line reason."""


def is_venv(path: str) -> bool:
    """A virtual environment (venv, virtualenv, tox's and uv's), whatever its name: it holds `pyvenv.cfg`."""
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def walk(top: str, prune: Callable[[str, str], bool], seen: set[tuple[int, int]],
         keep: Callable[[str], bool]) -> Iterator[str]:
    """Python files under the directory `top`, without recursion: at each level the files, then the
    subdirectories, both sorted by name (as os.walk yields them). `prune(path, name)` says a
    subdirectory is not walked; `keep(path)` that a file is yielded. Directories already seen (by
    device and inode) are skipped and, as with flake8, links to directories are not followed. A
    directory that cannot be listed is yielded itself, so that reading it reports why.
    """
    pending = [top]
    while pending:
        directory = pending.pop()
        try:
            info = os.stat(directory)
        except OSError:
            yield directory
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            continue
        seen.add(key)
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            yield directory
            continue
        subdirs = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if not prune(entry.path, entry.name):
                    subdirs.append(entry.path)
            elif entry.name.endswith(SUFFIXES) and keep(entry.path):
                yield entry.path
        pending.extend(reversed(subdirs))


def _describe(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "no such file or directory"
    if isinstance(error, IsADirectoryError):
        return "is a directory"
    if isinstance(error, PermissionError):
        return "permission denied"
    if error.errno == errno.ELOOP:
        return "symbolic link loop"
    return f"cannot read: {error.strerror or error}"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: str) -> bytes:
    """The whole file, or SourceError: never blocks on a FIFO or device, never reads past MAX_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY)
    except IsADirectoryError:
        raise SourceError(_unlistable(path)) from None
    except OSError as error:
        raise SourceError(_describe(error)) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise SourceError(_unlistable(path))
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(f"{_kind(info.st_mode)}, not a source file")
        if info.st_size > MAX_BYTES:
            raise SourceError(_too_large(info.st_size))
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            data = handle.read(MAX_BYTES + 1)  # the file may grow between fstat and read
    except OSError as error:
        raise SourceError(_describe(error)) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_BYTES:
        raise SourceError(_too_large(len(data), more=True))
    return data


def read_stream(stream: BinaryIO) -> bytes:
    """All of a stream (standard input), or SourceError: never more than MAX_BYTES + 1 bytes are
    read (`skiplint - < /dev/zero` is refused as a file of that size is)."""
    try:
        data = stream.read(MAX_BYTES + 1)
    except OSError as error:
        raise SourceError(f"cannot read standard input: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:
        raise SourceError(_too_large(len(data), more=True))
    return data


def too_large(size: int) -> Optional[str]:
    """Why source of `size` bytes is not checked (one line), or None: every door's test of MAX_BYTES."""
    return _too_large(size) if size > MAX_BYTES else None


def _too_large(size: int, more: bool = False) -> str:
    what = f"more than {MAX_BYTES / 1e6:.1f} MB" if more else f"{size / 1e6:.1f} MB"
    return f"too large to check ({what}; the limit is {MAX_BYTES / 1e6:.1f} MB)"


def _unlistable(path: str) -> str:
    try:
        os.listdir(path)
    except OSError as error:
        return f"cannot list directory: {_describe(error)}"
    return "is a directory"


def _has_cookie(data: bytes) -> bool:
    head = data.split(b"\n", 2)[:2]
    return any(b"coding" in line and line.lstrip().startswith(b"#") for line in head)


#: What tokenize.detect_encoding says of UTF-8 source: no cookie, or a cookie that Python's own
#: tokenizer reads as UTF-8 itself (`utf-8`, `UTF_8`, `utf-8-*`; not `utf8`), with or without BOM.
_UTF8 = ("utf-8", "utf-8-sig")


def decode(data: bytes) -> str:
    """Source text as Python would decode it (PEP 263 cookie, BOM), or SourceError.

    Bytes that are not UTF-8 inside the comments of UTF-8 source are read as U+FFFD: Python's
    compile, and so every import, accepts them on 3.9 to 3.13; anywhere else they are refused."""
    if b"\0" in data:
        raise SourceError("contains NUL bytes; not a Python source file")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        reason = getattr(error, "msg", None) or str(error)
        if "invalid or missing encoding declaration" not in reason or _has_cookie(data):
            raise SourceError(f"bad encoding declaration: {reason}") from None
        # No cookie: the first lines are not UTF-8 (a comment there may hold such bytes).
        encoding = "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        if encoding in _UTF8:
            return _utf8_outside_comments(data, encoding)
        raise SourceError(f"not valid {encoding}: byte 0x{data[error.start]:02x} at offset {error.start}") from None
    except UnicodeError as error:  # a codec that fails otherwise (punycode, idna)
        raise SourceError(f"not valid {encoding}: {error}") from None
    except LookupError:
        raise SourceError(_not_text_encoding(encoding)) from None
    if encoding not in _UTF8:
        if not _declares(text, encoding):
            raise SourceError(f"bad encoding declaration: read as {encoding}, its own first lines no longer "
                              f"declare {encoding} (Python refuses such a file)")
        refused = _python_refuses_decoding(data)
        if refused is not None:
            raise SourceError(f"not valid {encoding} as Python decodes it: {refused}")
    return text


def _python_refuses_decoding(data: bytes) -> Optional[str]:
    """Python's own reason for not decoding source in an encoding other than UTF-8, or None: its
    tokenizer decodes such a file its own way (line by line for some codecs), so only its
    compiler says for sure. A decoding error is a SyntaxError without a line."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<skiplint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        if not error.lineno:
            return str(error.msg or error).splitlines()[0] if str(error.msg or error) else "cannot decode"
    except (ValueError, RecursionError, MemoryError, OverflowError):
        pass
    return None


def _not_text_encoding(encoding: str) -> str:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return f"unknown encoding {encoding!r}"
    return f"{encoding!r} is not a text encoding"


def _declares(text: str, encoding: str) -> bool:
    """Whether `text`, the file decoded as `encoding`, still declares `encoding` in its first two
    lines: an encoding that does not keep the ASCII cookie as it is (UTF-16, EBCDIC) cannot be the
    one declared, and Python refuses the file, though decoding it whole may succeed."""
    try:
        declared = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8", "surrogatepass")).readline)[0]
    except SyntaxError:
        return False
    return codecs.lookup(declared).name == codecs.lookup(encoding).name


def file_bytes(text: str) -> bytes:
    """The bytes of a file that holds `text` (an editor's buffer): the text in the encoding its
    coding cookie names, when that encoding writes ASCII as ASCII (so the cookie reads as written)
    and can write the text; else UTF-8, a lone surrogate written as surrogatepass writes it (bytes
    that decoding refuses, as it refuses them in a file)."""
    data = text.encode("utf-8", "surrogatepass")
    if utf8(data):
        return data
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
        if "# coding".encode(encoding) != b"# coding":
            return data
        return text.encode(encoding)
    except (SyntaxError, LookupError, UnicodeError):
        return data


def utf8(data: bytes) -> bool:
    """Whether Python reads `data` as UTF-8: no cookie in its first two lines, or one that names
    UTF-8 (a cookie it cannot read also counts: decoding the source reports it)."""
    first = data.find(b"\n")
    end = data.find(b"\n", first + 1) if first >= 0 else -1
    if data.find(b"coding", 0, len(data) if end < 0 else end) < 0:
        return True
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0] in _UTF8
    except SyntaxError:
        return True


_ESCAPED = re.compile("[\udc80-\udcff]")


def _utf8_outside_comments(data: bytes, encoding: str) -> str:
    """UTF-8 source with bytes that are not UTF-8: its text when they are all inside comments, else
    SourceError naming the first one outside."""
    from skiplint import guard

    escaped = data.decode(encoding, "surrogateescape")  # one lone surrogate per such byte
    comments = guard.comment_spans(escaped) or []  # None: past a parser limit, said as this
    starts = [start for start, _ in comments]
    for found in _ESCAPED.finditer(escaped):
        at = found.start()
        index = bisect.bisect_right(starts, at) - 1
        if index < 0 or at >= comments[index][1]:
            offset = len(escaped[:at].encode("utf-8", "surrogateescape")) + (3 if encoding == "utf-8-sig" else 0)
            raise SourceError(f"not valid utf-8: byte 0x{data[offset]:02x} at offset {offset}")
    return data.decode(encoding, "replace")
