"""The editor's documents as the server keeps them, and positions in the client's units.

Lines are what Python's tokenizer, skiplint and the Language Server Protocol count: only CR LF,
CR and LF end a line (a form feed or U+2028 does not). A column is a count of code points for
skiplint and a count of the negotiated encoding's units for the client (UTF-16 unless the client
offered UTF-8 or UTF-32). Nothing here imports pygls.
"""

from __future__ import annotations

import bisect
import functools
import os
import urllib.parse
from typing import Optional

from skiplint import sources

#: The position encodings the server speaks, by their protocol names.
UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def units(text: str, encoding: str) -> int:
    """How many of the encoding's code units `text` takes."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def column_from_units(line: str, count: int, encoding: str) -> Optional[int]:
    """The code point column `count` code units into `line`: the line's end for a count past it
    (the protocol's rule); None for a negative count or one inside a character (between the halves
    of a UTF-16 surrogate pair, inside a UTF-8 sequence)."""
    if count < 0:
        return None
    if encoding == UTF32 or line.isascii():
        return min(count, len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= count:
            return index if seen == count else None
        seen += units(char, encoding)
    return len(line) if seen <= count else None


def path_of(uri: str) -> Optional[str]:
    """The file path of a `file:` URI, else None (an untitled buffer, another scheme, no URI)."""
    try:
        parsed = urllib.parse.urlparse(uri)
    except ValueError:  # such as a bracket that opens no IPv6 address
        return None
    if parsed.scheme != "file":
        return None
    path = _url2pathname(urllib.parse.unquote(parsed.path))
    if "\0" in path:  # no file has such a name
        return None
    if parsed.netloc and parsed.netloc != "localhost":  # a UNC path
        path = f"//{parsed.netloc}{path}"
    return os.path.abspath(path)


def _url2pathname(path: str) -> str:
    """urllib.request's url2pathname, without importing urllib.request (and with it http, email)."""
    if os.name == "nt":  # pragma: no cover - Windows
        from nturl2path import url2pathname

        return url2pathname(path)
    return path


class Document:
    """One snapshot of an open document (never changed: an edit makes a new one)."""

    def __init__(self, uri: str, text: str, version: Optional[int], language: str = "python",
                 serial: int = 0) -> None:
        self.uri = uri
        self.path = path_of(uri)
        self.version = version
        self.text = text
        self.language = language
        #: Unique to this snapshot among the server's documents (a new one for every change).
        self.serial = serial
        self._bytes: Optional[bytes] = None

    @functools.cached_property
    def starts(self) -> list[int]:
        """The offset of each line's first character (one more when the text ends with a break)."""
        return sources.line_starts(self.text)

    @functools.cached_property
    def lines(self) -> list[str]:
        """Each line without its line break."""
        return sources.lines(self.text)

    def line(self, index: int) -> str:
        """The 0-based line `index` without its break; "" past the end."""
        lines = self.lines
        return lines[index] if 0 <= index < len(lines) else ""

    def source_bytes(self) -> bytes:
        """The bytes a file holding the text has (sources.file_bytes)."""
        if self._bytes is None:
            self._bytes = sources.file_bytes(self.text)
        return self._bytes

    def offset(self, line: int, character: int, encoding: str) -> Optional[int]:
        """The character offset of a client position (0-based line, code units); None for a
        position that names no place in the text (column_from_units; a line past the last)."""
        starts = self.starts
        if not 0 <= line < len(starts):
            return None
        column = column_from_units(self.line(line), character, encoding)
        return None if column is None else starts[line] + column

    def replaced(self, start: tuple[int, int], end: tuple[int, int], text: str, encoding: str) -> Optional[str]:
        """The text with the range from `start` to `end` (client positions) replaced by `text`;
        None when the range names no span of the text."""
        low = self.offset(*start, encoding)
        high = self.offset(*end, encoding)
        if low is None or high is None or high < low:
            return None
        return self.text[:low] + text + self.text[high:]

    def client_position(self, line: int, column: int, encoding: str) -> tuple[int, int]:
        """A skiplint position (1-based line, 0-based code point column) in the client's units."""
        index = max(line - 1, 0)
        text = self.line(index)
        return index, units(text[:max(column, 0)], encoding)

    def client_position_at(self, offset: int, encoding: str) -> tuple[int, int]:
        """A character offset of the text in the client's units."""
        line = max(bisect.bisect_right(self.starts, offset) - 1, 0)
        return line, units(self.text[self.starts[line]:offset], encoding)
