"""The server's end of the connection: reads the client's bytes on the event loop, answers what
cannot be taken (skiplint.lsp.transport) and hands every other message to pygls' protocol.

The protocol's moments are kept here too: before `initialize`, a request is answered "server not
initialized" and a notification is dropped (`exit` excepted); a second `initialize` and any
request after `shutdown` are invalid requests; an unknown method is "method not found" (an
unknown notification is ignored); params that are not the method's are "invalid params" (for a
notification, a line in the client's log). Every request gets a response.
"""

from __future__ import annotations

import asyncio
import os
import select
import sys
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from lsprotocol import types
from pygls.io_ import StdoutWriter

from skiplint.lsp import transport
from skiplint.lsp.transport import Rejected

if TYPE_CHECKING:
    from skiplint.lsp.server import SkiplintServer

#: How many bytes one read of the input asks for.
CHUNK = 64 * 1024


class Connection:
    """The input's reader and the messages' dispatcher."""

    def __init__(self, server: "SkiplintServer") -> None:
        self.server = server
        self.framer = transport.Framer()
        self.initialized = False
        #: The event loop's reader of the input when it reads the input itself (a pipe): see Analyses._start.
        self.reader: "asyncio.StreamReader | None" = None

    def input_pending(self) -> bool:
        """Whether part of a message from the client has arrived and not been handled yet."""
        if self.framer.pending():
            return True
        if self.reader is None:
            return False
        if getattr(self.reader, "_buffer", b""):  # read from the pipe, not yet parsed (asyncio keeps it there)
            return True
        try:
            return bool(select.select([sys.stdin.fileno()], [], [], 0)[0])
        except (OSError, ValueError):
            return False

    async def serve(self) -> None:
        """Read and handle messages until the input ends."""
        loop = asyncio.get_running_loop()
        read: Callable[[], Awaitable[bytes]]
        reader = asyncio.StreamReader()
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        except (OSError, ValueError, NotImplementedError):  # not a pipe (a file): read on a thread
            descriptor = sys.stdin.buffer.fileno()

            def read() -> Awaitable[bytes]:
                return loop.run_in_executor(None, os.read, descriptor, CHUNK)
        else:
            self.reader = reader

            def read() -> Awaitable[bytes]:
                return reader.read(CHUNK)
        self.server.ls.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
        try:
            while True:
                data = await read()
                if not data:
                    return
                for item in self.framer.feed(data):
                    if isinstance(item, Rejected):
                        self.answer(item)
                    else:
                        self.receive(item)
        except (BrokenPipeError, ConnectionError):
            pass  # the client went away

    def answer(self, rejected: Rejected) -> None:
        writer = self.server.ls.protocol.writer
        if writer is not None:
            writer.write(transport.frame(rejected.response()))

    def receive(self, body: bytes) -> None:
        message = transport.decode(body)
        if isinstance(message, Rejected):
            self.framer.resync()  # the frame's length may have been wrong
            self.answer(message)
            return
        if isinstance(message, list):
            for rejected in transport.batch_answers(message):
                self.answer(rejected)
            return
        problem = transport.check(message)
        if problem is not None:
            self.answer(problem)
            return
        self.dispatch(message)

    def dispatch(self, message: dict[str, Any]) -> None:
        protocol = self.server.ls.protocol
        method = message.get("method")
        ident = transport.request_id(message)
        request = "id" in message
        if method is None:  # the client's response to a request of the server's
            try:
                protocol.handle_message(protocol.structure_message(message))
            except Exception:  # noqa: BLE001 - a response the server cannot read answers nothing
                self.server.log("skiplint: ignored a response it cannot read", types.MessageType.Warning)
            return
        refusal = self._refusal(method)
        if refusal is not None:
            if request:
                self.answer(Rejected(ident, *refusal))
            return
        if not self._known(method):
            if request:
                self.answer(Rejected(ident, transport.METHOD_NOT_FOUND, f"Method not found: {method}"))
            return
        try:
            structured = protocol.structure_message(message)
        except Exception:  # noqa: BLE001 - cattrs says why in many ways: the params are not the method's
            if request:
                self.answer(Rejected(ident, transport.INVALID_PARAMS, f"Invalid params for {method}"))
            else:
                self.server.log(f"skiplint: ignored {method}: its params are not the protocol's",
                                types.MessageType.Warning)
            return
        if method == types.CANCEL_REQUEST and transport.request_id(message.get("params")) is None:
            self.server.log("skiplint: ignored $/cancelRequest: its id is neither a string nor an integer",
                            types.MessageType.Warning)
            return
        if method == types.INITIALIZE:
            self.initialized = True
        try:
            protocol.handle_message(structured)
        except Exception as error:  # pygls' dispatch itself failed: said in one line, the connection kept
            problem = f"skiplint: could not handle {method}: {type(error).__name__}: {error}"
            if request:
                self.answer(Rejected(ident, transport.INTERNAL_ERROR, problem))
            else:
                self.server.log(problem, types.MessageType.Error)

    def _refusal(self, method: str) -> "tuple[int, str] | None":
        """Why a message cannot be taken at this moment of the session, if so."""
        if method == types.EXIT:
            return None
        if method == types.INITIALIZE:
            return (transport.INVALID_REQUEST, "Invalid request: initialize was sent before") \
                if self.initialized else None
        if not self.initialized:
            return transport.SERVER_NOT_INITIALIZED, "Server not initialized: initialize comes first"
        if self.server.shut_down:
            return transport.INVALID_REQUEST, "Invalid request: the server is shut down"
        return None

    def _known(self, method: str) -> bool:
        fm = self.server.ls.protocol.fm
        return method in fm.features or method in fm.builtin_features or method == types.CANCEL_REQUEST
