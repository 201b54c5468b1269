"""A real Language Server Protocol client (pygls') driving `skiplint server` over standard input and
output, for the end-to-end tests (tests/test_server.py) and the latency benchmark.

Nothing here measures time: waits have a generous limit only so that a broken server fails a test
instead of hanging it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from lsprotocol import types
from pygls.lsp.client import LanguageClient

#: How long a test waits for one message before it fails (a hang guard, not a measurement).
PATIENCE_S = 120.0


def uri(path: Path) -> str:
    return path.resolve().as_uri()


class Session:
    """One `skiplint server` process and the client talking to it."""

    def __init__(self, root: Path, *, settings: Optional[dict[str, Any]] = None,
                 capabilities: Optional[types.ClientCapabilities] = None, args: Sequence[str] = (),
                 env: Optional[dict[str, str]] = None) -> None:
        self.root = root
        self.settings = settings
        self.capabilities = capabilities or full_capabilities()
        self.args = list(args)
        self.env = env
        self.client = LanguageClient("skiplint-tests", "1")
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.messages: list[types.ShowMessageParams] = []
        self.registrations: list[types.Registration] = []
        self._arrived = asyncio.Event()
        self.result: Optional[types.InitializeResult] = None
        client = self.client

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            self._arrived.set()

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def _message(params: types.ShowMessageParams) -> None:
            self.messages.append(params)
            self._arrived.set()

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def _log(params: types.LogMessageParams) -> None:
            pass

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def _register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

    async def start(self) -> "Session":
        env = dict(os.environ if self.env is None else self.env)
        await self.client.start_io(sys.executable, "-m", "skiplint", "server", *self.args, cwd=str(self.root), env=env)
        self.result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            process_id=os.getpid(), root_uri=uri(self.root), capabilities=self.capabilities,
            workspace_folders=[types.WorkspaceFolder(uri=uri(self.root), name="root")],
            initialization_options=self.settings)), PATIENCE_S)
        self.client.initialized(types.InitializedParams())
        return self

    @property
    def process(self) -> asyncio.subprocess.Process:
        server = self.client._server
        assert server is not None
        return server

    async def stop(self) -> Optional[int]:
        """shutdown, exit; the server's exit status."""
        if self.process.returncode is None:
            await asyncio.wait_for(self.client.shutdown_async(None), PATIENCE_S)
            self.client.exit(None)
        return await asyncio.wait_for(self.process.wait(), PATIENCE_S)

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()

    # -- documents -------------------------------------------------------------------------------
    def open(self, path: Path, text: Optional[str] = None, version: int = 1, language: str = "python") -> str:
        if text is None:
            text = path.read_text(encoding="utf-8")
        address = uri(path)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=address, language_id=language, version=version, text=text)))
        return address

    def change(self, address: str, text: str, version: int) -> None:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=address, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def close(self, address: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=address)))

    async def diagnostics(self, address: str, version: Optional[int] = None,
                          after: int = 0) -> types.PublishDiagnosticsParams:
        """The first publication for `address` past the first `after` ones (with `version`, if given)."""
        async def arrived() -> types.PublishDiagnosticsParams:
            while True:
                for params in self.published.get(address, [])[after:]:
                    if version is None or params.version == version:
                        return params
                self._arrived.clear()
                await self._arrived.wait()
        return await asyncio.wait_for(arrived(), PATIENCE_S)

    async def until(self, address: str, codes: list[str], after: int = 0) -> types.PublishDiagnosticsParams:
        """The first publication for `address` past the first `after` ones with exactly these codes."""
        async def arrived() -> types.PublishDiagnosticsParams:
            while True:
                for params in self.published.get(address, [])[after:]:
                    if [d.code for d in params.diagnostics] == codes:
                        return params
                self._arrived.clear()
                await self._arrived.wait()
        return await asyncio.wait_for(arrived(), PATIENCE_S)

    async def message(self, containing: str) -> types.ShowMessageParams:
        async def arrived() -> types.ShowMessageParams:
            while True:
                for params in self.messages:
                    if containing in params.message:
                        return params
                self._arrived.clear()
                await self._arrived.wait()
        return await asyncio.wait_for(arrived(), PATIENCE_S)

    async def request(self, method: str, params: Any) -> Any:
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), PATIENCE_S)

    async def roundtrip(self) -> None:
        """A request answered after every message sent before it has been handled."""
        await self.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri(self.root / "nothing-open.py")),
            position=types.Position(line=0, character=0)))


def full_capabilities(markdown: bool = True, resolve: bool = True,
                      encodings: Optional[list[types.PositionEncodingKind]] = None) -> types.ClientCapabilities:
    """What an editor such as VS Code announces, as far as the server reads it."""
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(position_encodings=encodings) if encodings else None,
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True),
            configuration=True),
        text_document=types.TextDocumentClientCapabilities(
            hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]
                                                if markdown else [types.MarkupKind.PlainText]),
            code_action=types.CodeActionClientCapabilities(
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]) if resolve else None),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True)))


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def run_side_by_side(*coroutines: Any) -> list[Any]:
    """Run the coroutines concurrently in one event loop (each scenario with its own server)."""
    async def together() -> list[Any]:
        return list(await asyncio.gather(*coroutines))
    return run(together())


def cli_json(text: str, name: str, cwd: Path, *options: str) -> list[dict[str, Any]]:
    """What `skiplint --format json - --stdin-display-name NAME` reports for `text` (the CLI in this
    process: the door `python -m skiplint` has process tests of its own)."""
    from tests import inprocess

    done = inprocess.skiplint(["--format", "json", *options, "-", "--stdin-display-name", name], cwd,
                              text.encode("utf-8"))
    assert done.returncode in (0, 1, 2), done.stderr
    return list(json.loads(done.stdout)["diagnostics"])


def as_cli(params: types.PublishDiagnosticsParams) -> list[dict[str, Any]]:
    """The published diagnostics in the CLI's JSON terms (1-based columns: an ASCII text's)."""
    return [{"line": d.range.start.line + 1, "column": d.range.start.character + 1,
             "end_line": d.range.end.line + 1, "end_column": d.range.end.character + 1,
             "code": d.code, "message": d.message} for d in params.diagnostics]


def cli_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{key: row[key] for key in ("line", "column", "end_line", "end_column", "code", "message")}
            for row in rows]


def apply(text: str, edits: Sequence[types.TextEdit]) -> str:
    """Apply text edits (UTF-16 positions of an ASCII or BMP text; lines broken by CR LF, CR or LF)."""
    from skiplint import sources

    starts = sources.line_starts(text)

    def offset(position: types.Position) -> int:
        return starts[position.line] + position.character if position.line < len(starts) else len(text)

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


def edits_of(action: types.CodeAction) -> list[types.TextEdit]:
    assert action.edit is not None and action.edit.document_changes, action
    out: list[types.TextEdit] = []
    for change in action.edit.document_changes:
        assert isinstance(change, types.TextDocumentEdit)
        out.extend(edit for edit in change.edits if isinstance(edit, types.TextEdit))
    return out


class Raw:
    """A `skiplint server` process fed bytes as they are written, for the tests of what a client
    must not send; its messages are read back frame by frame."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.process: Optional[asyncio.subprocess.Process] = None
        self._next_id = 1000
        #: The messages read so far.
        self.seen: list[dict[str, Any]] = []

    async def start(self) -> "Raw":
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "skiplint", "server", cwd=str(self.root), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=2 ** 24)
        return self

    def write(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(data)

    def send(self, message: Any) -> None:
        body = json.dumps(message).encode("utf-8")
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def read(self) -> dict[str, Any]:
        """The server's next message."""
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout

        async def one() -> dict[str, Any]:
            length = None
            while True:
                line = await stdout.readuntil(b"\r\n")
                if line == b"\r\n":
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            return dict(json.loads(await stdout.readexactly(length)))
        return await asyncio.wait_for(one(), PATIENCE_S)

    async def response(self, ident: Any) -> dict[str, Any]:
        """The response with this id; what came before it is kept in `seen`."""
        while True:
            message = await self.read()
            self.seen.append(message)
            if "method" not in message and message.get("id") == ident:
                return message

    async def initialize(self, capabilities: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        ident = self.request("initialize", {"processId": None, "rootUri": uri(self.root),
                                            "capabilities": capabilities or {}})
        answer = await self.response(ident)
        self.notify("initialized", {})
        return answer

    async def stop(self) -> tuple[int, str]:
        """shutdown, exit: the exit status and everything written to standard error."""
        assert self.process is not None and self.process.stderr is not None
        ident = self.request("shutdown")
        await self.response(ident)
        self.notify("exit")
        status = await asyncio.wait_for(self.process.wait(), PATIENCE_S)
        return status, (await self.process.stderr.read()).decode("utf-8", "replace")
