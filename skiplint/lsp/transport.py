"""The byte stream from the client: frames, JSON-RPC envelopes, and the errors answered for what
cannot be read (no pygls here).

A frame is header lines ended by CR LF (`Content-Length: N` required, other headers ignored, names
in any case), an empty line, then N bytes of UTF-8 JSON. A frame that breaks these rules, or whose
body is no JSON, is answered with a JSON-RPC parse error whose id is null, and the reader skips to
the next `Content-Length` header: one bad frame costs that frame, never the connection. JSON that
is no JSON-RPC 2.0 message is answered with the error JSON-RPC names for it, with the request's id
where it has a readable one. Nothing here raises on any input; every buffer is bounded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Union

#: The largest header block of one frame (its lines together), in bytes.
MAX_HEADER = 64 * 1024
#: The largest body of one frame, in bytes (a document far larger than any the CLI checks, JSON-escaped).
MAX_BODY = 256 * 1024 * 1024

# The JSON-RPC error codes, and the Language Server Protocol's own.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002

_HEADER_START = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclass(frozen=True)
class Rejected:
    """The JSON-RPC error response to a frame or message the server cannot take (`id` None: null)."""

    id: Union[int, str, None]
    code: int
    message: str

    def response(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}}


def frame(message: Any) -> bytes:
    """A message as the client reads it: its header and its JSON (ASCII: non-ASCII escaped)."""
    body = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Framer:
    """Splits the bytes the client sends into message bodies; a frame it cannot read becomes a
    Rejected, after which it looks for the next `Content-Length` header."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._resync = False
        self._length: Optional[int] = None  # the Content-Length of the header block being read
        self._header_bytes = 0  # of the header block being read
        self._body: Optional[int] = None  # the header block is read: the body's length

    def pending(self) -> bool:
        """Whether bytes of a message not yet complete are held (not while looking for a header)."""
        return bool(self._buffer) and not self._resync

    def resync(self) -> None:
        """Skip to the next `Content-Length` header (after a body that was no JSON: its
        Content-Length may have been wrong)."""
        self._resync = True

    def feed(self, data: bytes) -> Iterator[Union[bytes, Rejected]]:
        """The bodies and the errors of the frames that `data` completes, one at a time (so that
        `resync` after a body takes effect before what follows it is read)."""
        self._buffer += data
        while True:
            item = self._next()
            if item is None:
                return
            yield item

    def _fail(self, reason: str, drop: int) -> Rejected:
        del self._buffer[:drop]
        self._resync = True
        self._length = None
        self._header_bytes = 0
        return Rejected(None, PARSE_ERROR, f"Parse error: {reason}")

    def _next(self) -> Union[bytes, Rejected, None]:
        buffer = self._buffer
        while True:
            if self._resync:
                found = _HEADER_START.search(buffer)
                if found is None:  # keep what may be the start of a header split across reads
                    del buffer[:max(len(buffer) - 64, 0)]
                    return None
                del buffer[:found.start()]
                self._resync = False
            if self._body is not None:
                if len(buffer) < self._body:
                    return None
                body = bytes(buffer[:self._body])
                del buffer[:self._body]
                self._body = None
                return body
            room = MAX_HEADER + 1 - self._header_bytes
            end = buffer.find(b"\n", 0, room)
            if end < 0:
                if len(buffer) >= room:  # what was looked through goes; the next header is looked for
                    return self._fail(f"a header longer than {MAX_HEADER // 1024} KiB", max(room, 1))
                return None
            line = bytes(buffer[:end + 1])
            self._header_bytes += len(line)
            if not line.endswith(b"\r\n"):
                return self._fail("a header line not ended by CR LF", 1)
            if line == b"\r\n":
                del buffer[:end + 1]
                if self._header_bytes == 2:  # an empty line between frames
                    self._header_bytes = 0
                    continue
                if self._length is None:
                    return self._fail("a frame without a Content-Length header", 0)
                self._body, self._length, self._header_bytes = self._length, None, 0
                continue
            name, colon, value = line[:-2].partition(b":")
            if not colon or not _TOKEN.fullmatch(name) or _HEADER_START.search(line, 1):
                # (bytes glued to the front of the next frame's header: that header is read next)
                return self._fail(f"a malformed header line {_shown(line)}", 1)
            if name.lower() == b"content-length":
                value = value.strip(b" \t")
                if not value.isdigit() or len(value) > 12:
                    return self._fail(f"Content-Length is not a number of bytes: {_shown(value)}", 1)
                length = int(value)
                if length > MAX_BODY:
                    return self._fail(f"a message of {length} bytes (the limit is {MAX_BODY})", 1)
                if self._length is not None and self._length != length:
                    return self._fail("two different Content-Length headers", 1)
                self._length = length
            del buffer[:end + 1]


def _shown(data: bytes) -> str:
    text = data.decode("ascii", "replace")
    return repr(text if len(text) <= 40 else text[:40] + "...")


def decode(body: bytes) -> Union[Any, Rejected]:
    """The JSON value of a body, or the parse error."""
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        return Rejected(None, PARSE_ERROR, f"Parse error: the message is not UTF-8 (byte {error.start})")
    except RecursionError:
        return Rejected(None, PARSE_ERROR, "Parse error: the message nests too deeply")
    except ValueError as error:  # json.JSONDecodeError, and integers past Python's digit limit
        return Rejected(None, PARSE_ERROR, f"Parse error: {str(error).splitlines()[0] if str(error) else 'not JSON'}")


def request_id(message: Any) -> Union[int, str, None]:
    """A message's id when it is one JSON-RPC allows (a string or an integer), else None."""
    ident = message.get("id") if isinstance(message, dict) else None
    return ident if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)) else None


def check(message: Any) -> Optional[Rejected]:
    """None for a JSON-RPC 2.0 request, notification or response; else the error it is answered."""
    if isinstance(message, list):
        return Rejected(None, INVALID_REQUEST, "Invalid request: batches are not part of the Language Server Protocol")
    if not isinstance(message, dict):
        return Rejected(None, INVALID_REQUEST, "Invalid request: a message is a JSON object")
    ident = request_id(message)
    if "id" in message and ident is None and "method" in message:
        return Rejected(None, INVALID_REQUEST, "Invalid request: an id is a string or an integer")
    if message.get("jsonrpc") != "2.0":
        return Rejected(ident, INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
    if "method" in message:
        if not isinstance(message["method"], str):
            return Rejected(ident, INVALID_REQUEST, "Invalid request: the method is a string")
        if not isinstance(message.get("params"), (dict, list, type(None))):
            return Rejected(ident, INVALID_REQUEST, "Invalid request: params are an object or an array")
        return None
    if "id" not in message or ("result" in message) == ("error" in message):
        return Rejected(None, INVALID_REQUEST, "Invalid request: neither a request, a notification nor a response")
    return None


def batch_answers(batch: list[Any]) -> list[Rejected]:
    """The errors a batch is answered: one per request in it (a request never goes unanswered),
    one for an empty batch; the notifications in it are not run."""
    if not batch:
        return [Rejected(None, INVALID_REQUEST, "Invalid request: an empty batch")]
    out = []
    for message in batch:
        if isinstance(message, dict) and "method" in message and "id" not in message:
            continue
        out.append(Rejected(request_id(message), INVALID_REQUEST,
                            "Invalid request: batches are not part of the Language Server Protocol"))
    return out
