"""`skiplint server`: the Language Server Protocol over standard input and output, on pygls.

One thread reads and answers messages (the event loop: skiplint.lsp.connection); one worker
thread runs everything that needs the engine, one job at a time: analyses, quick fixes, layouts,
lenses. The server's parts, each a room of its own: the open documents (textsync), when they are
analysed and what is published (diagnostics), code actions and the layout's lens and command
(actions); this module holds what they share, the worker and the lifecycle.

Other modules' classes are read from the open buffers first (the project scan's overlay), then
from disk. The configuration is the CLI's (config.Finder), looked up again whenever one of the
configuration files it could read changes, and after every change the client reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import queue
import sys
import threading
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer

from skiplint import __version__, config
from skiplint.lsp.actions import FIX_ALL_KIND, LAYOUT_COMMAND, Actions, Layouts
from skiplint.lsp.configuration import CONFIG_NAMES, DEBOUNCE_S, Configuration, Settings, read_settings
from skiplint.lsp.connection import Connection
from skiplint.lsp.diagnostics import Analyses
from skiplint.lsp.documents import UTF8, UTF16, UTF32, Document, path_of
from skiplint.lsp.textsync import TextSync, checked
from skiplint.session import Session

__all__ = ["DEBOUNCE_S", "SkiplintServer", "read_settings", "serve"]

_ENCODINGS: dict[str, str] = {types.PositionEncodingKind.Utf8: UTF8, types.PositionEncodingKind.Utf16: UTF16,
                              types.PositionEncodingKind.Utf32: UTF32}

log = logging.getLogger("skiplint.server")

T = TypeVar("T")

#: The analysis thread's stack, in bytes: a main thread's usual 8 MB.
WORKER_STACK = 8 * 1024 * 1024


class Worker:
    """One daemon thread that runs jobs in the order they are submitted, their results coming back
    to the event loop as futures (a daemon: a job still running never holds the process after `exit`)."""

    #: Jobs submitted and not yet finished, as the event loop's thread sees it (a job whose
    #: future was cancelled still runs to its end).
    pending = 0

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any]]]" = \
            queue.SimpleQueue()
        thread = threading.Thread(target=self._run, name="skiplint-analysis", daemon=True)
        previous = threading.stack_size()
        try:  # at least the room a main thread has (some systems give threads far less)
            threading.stack_size(WORKER_STACK)
        except (ValueError, RuntimeError):
            pass
        try:
            thread.start()
        finally:
            threading.stack_size(previous)

    def submit(self, job: Callable[[], T]) -> "asyncio.Future[T]":
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.pending += 1
        self._jobs.put((loop, future, job))
        return future

    def _run(self) -> None:
        while True:
            loop, future, job = self._jobs.get()
            try:
                outcome: tuple[Any, Optional[BaseException]] = (job(), None)
            except BaseException as error:  # handed to whoever awaits the job
                outcome = (None, error)
            loop.call_soon_threadsafe(self._settle, future, *outcome)

    def _settle(self, future: "asyncio.Future[Any]", result: Any, error: Optional[BaseException]) -> None:
        self.pending -= 1
        if future.cancelled():
            return
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)


class _LanguageServer(LanguageServer):
    """pygls' server, with its errors said as one line in the client's log (no pop-up, no
    traceback: a request's error is its response)."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        message = error.message if isinstance(error, JsonRpcException) else f"{type(error).__name__}: {error}"
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                       message=f"skiplint: {message.splitlines()[0]}"))
        if os.environ.get("SKIPLINT_DEBUG"):
            log.error("server error", exc_info=error)


class SkiplintServer:
    """What the server's parts share (the documents, the settings, the worker), and the lifecycle."""

    def __init__(self, debounce: float = DEBOUNCE_S) -> None:
        self.ls = _LanguageServer("skiplint", __version__,
                                  text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.default_debounce = debounce
        self.settings = Settings(debounce=debounce)
        self.root = os.getcwd()
        self.encoding = UTF16
        self.markdown = True
        self.resolve_edits = False
        self.shut_down = False
        self.documents: dict[str, Document] = {}
        #: The analysis session of this server (its project walk holds the open buffers: `overlay`).
        self.session = Session()
        self._worker: Optional[Worker] = None
        self._configuration: Optional[Configuration] = None
        self._shown: set[str] = set()
        self.connection = Connection(self)
        self.textsync = TextSync(self)
        self.analyses = Analyses(self)
        self.actions = Actions(self)
        self.layouts = Layouts(self)
        self._register()

    # -- plumbing --------------------------------------------------------------------------------
    @property
    def worker(self) -> Worker:
        if self._worker is None:
            self._worker = Worker()
        return self._worker

    def _register(self) -> None:
        ls = self.ls
        for method, handler, options in (
                (types.INITIALIZE, self.initialize, None),
                (types.INITIALIZED, self.initialized, None),
                (types.SHUTDOWN, self.shutdown, None),
                (types.EXIT, self.exit, None),
                (types.TEXT_DOCUMENT_DID_OPEN, self.textsync.did_open, None),
                (types.TEXT_DOCUMENT_DID_CHANGE, self.textsync.did_change, None),
                (types.TEXT_DOCUMENT_DID_SAVE, self.textsync.did_save, None),
                (types.TEXT_DOCUMENT_DID_CLOSE, self.textsync.did_close, None),
                (types.WORKSPACE_DID_CHANGE_CONFIGURATION, self.did_change_configuration, None),
                (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, self.did_change_watched_files, None),
                (types.TEXT_DOCUMENT_HOVER, self.analyses.hover, None),
                (types.TEXT_DOCUMENT_CODE_ACTION, self.actions.code_action, types.CodeActionOptions(
                    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True)),
                (types.CODE_ACTION_RESOLVE, self.actions.resolve_code_action, None),
                (types.TEXT_DOCUMENT_CODE_LENS, self.layouts.code_lens, types.CodeLensOptions(resolve_provider=False))):
            ls.feature(method, options)(_handler(handler))
        # The server keeps the documents itself (textsync): pygls' copies, which it updates
        # before calling the handlers above, are not made.
        for method in (types.TEXT_DOCUMENT_DID_OPEN, types.TEXT_DOCUMENT_DID_CHANGE, types.TEXT_DOCUMENT_DID_CLOSE):
            ls.protocol.fm.builtin_features.pop(method, None)

        async def layout_command(ls: Any, *arguments: Any) -> Optional[str]:
            # pygls hands a handler whose first parameter is named `ls` the server, then every argument.
            return await self.layouts.show_layout(*arguments)

        ls.command(LAYOUT_COMMAND)(layout_command)

    def log(self, message: str, kind: types.MessageType) -> None:
        """A line in the client's log only."""
        self.ls.window_log_message(types.LogMessageParams(type=kind, message=message))

    def say(self, message: str, kind: types.MessageType = types.MessageType.Warning, once: bool = True) -> None:
        """A message for the person at the editor, also in the client's log (with `once`, each
        distinct message once until the configuration changes)."""
        if once and message in self._shown:
            return
        self._shown.add(message)
        self.log(message, kind)
        self.ls.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def configuration(self) -> Configuration:
        if self._configuration is None:
            self._configuration = Configuration(self.settings, self.root)
        return self._configuration

    def configuration_changed(self, said_again: bool = True) -> None:
        """The configuration is looked up again (with `said_again`, its problems are shown again)."""
        self._configuration = None
        if said_again:
            self._shown.clear()

    def snapshot_changed(self, uri: str) -> None:
        """A document's snapshot is no longer current: what was computed for it goes."""
        self.actions.drop(uri)
        self.layouts.drop(uri)

    def on_worker(self, document: Document, job: Callable[[config.Config, str], T], unusable: T) -> "asyncio.Future[T]":
        """`job(settings, path)` for a document, run by the worker with the open buffers standing for
        their files; `unusable` where the file named in the `config` setting cannot be used."""
        path = self.path_for(document)
        buffers = tuple(self.documents.values())

        def run() -> T:
            settings, _ = self.configuration().settings_for(path)
            if settings is None:
                return unusable
            self.overlay(buffers)
            return job(settings, path)
        return self.worker.submit(run)

    def overlay(self, buffers: Sequence[Document]) -> None:
        """The open buffers stand for their files in the project scan (on the worker's side)."""
        self.session.scan.overlay = {
            document.path: ((len(document.source_bytes()), -document.serial), document.source_bytes())
            for document in buffers if document.path is not None and checked(document)}

    def path_for(self, document: Document) -> str:
        """The path a document is checked as: its file, or `stdin` in the workspace (as the CLI names
        standard input) for a buffer that is no file."""
        return document.path if document.path is not None else os.path.join(self.root, "stdin")

    def display(self, path: str) -> str:
        """A path as `skiplint layout` would be given it from the workspace's root."""
        try:
            relative = os.path.relpath(path, self.root)
        except ValueError:  # another drive
            return path
        return path if relative.startswith(os.pardir) else relative

    # -- lifecycle -------------------------------------------------------------------------------
    def initialize(self, params: types.InitializeParams) -> None:
        root = None
        if params.workspace_folders:
            root = path_of(params.workspace_folders[0].uri)
        if root is None and params.root_uri:
            root = path_of(params.root_uri)
        if root is None and params.root_path:
            root = os.path.abspath(params.root_path)
        self.root = root or os.getcwd()
        self.encoding = _ENCODINGS.get(self.ls.workspace.position_encoding or "", UTF16)
        hover = params.capabilities.text_document.hover if params.capabilities.text_document else None
        formats = hover.content_format if hover is not None else None
        self.markdown = formats is None or types.MarkupKind.Markdown in formats
        action = params.capabilities.text_document.code_action if params.capabilities.text_document else None
        support = action.resolve_support if action is not None else None
        self.resolve_edits = support is not None and "edit" in support.properties
        self._apply_settings(params.initialization_options)

    def initialized(self, params: types.InitializedParams) -> None:
        self.worker.submit(_load_engine)  # while the client opens its first document
        workspace = self.ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace is not None else None
        if watched is not None and watched.dynamic_registration:
            watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in sorted(CONFIG_NAMES)]
            watchers.append(types.FileSystemWatcher(glob_pattern="**/*.py"))
            self.ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
                id="skiplint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))

    def shutdown(self, params: None) -> None:
        self.shut_down = True
        self.analyses.stop()

    def exit(self, params: None) -> None:
        # The protocol's exit status: 0 after shutdown, else 1. Ended here, without waiting for
        # the worker, which may be in the middle of an analysis.
        try:
            sys.stdout.flush()
        finally:
            os._exit(0 if self.shut_down else 1)

    def _apply_settings(self, raw: Any) -> None:
        self.settings = read_settings(raw, self.default_debounce)
        for problem in self.settings.problems:
            self.say(problem, types.MessageType.Error)
        self._configuration = None

    def did_change_configuration(self, params: types.DidChangeConfigurationParams) -> None:
        if params.settings is not None and params.settings != {}:
            self._apply_settings(params.settings)
        else:
            self._configuration = None
        self._shown.clear()
        self.analyses.reanalyse_all()

    def did_change_watched_files(self, params: types.DidChangeWatchedFilesParams) -> None:
        names = {os.path.basename(path_of(change.uri) or "") for change in params.changes}
        created = any(change.type != types.FileChangeType.Changed for change in params.changes)
        if names & CONFIG_NAMES:
            self.configuration_changed()
        if created:  # a module appeared or went: locations are looked up again
            self.worker.submit(self.session.scan.forget_locations)
        self.analyses.reanalyse_all()

    # -- running ---------------------------------------------------------------------------------
    def serve(self) -> int:
        """Serve over standard input and output until `exit` (which ends the process) or the
        end of the input; the protocol's exit status (1: the input ended without shutdown)."""
        quiet = logging.getLogger("pygls")  # its errors are answered or logged to the client (above)
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        asyncio.run(self.connection.serve())
        return 0 if self.shut_down else 1


def _load_engine() -> None:
    """Import the engine and the fixer (libcst) ahead of the first analysis."""
    from skiplint import engine, fix  # noqa: F401


def _handler(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A plain function for a bound method (pygls marks the functions it registers). Its
    parameter has no annotation, so that pygls passes it the message's parameters alone. An
    exception is one line (a request's error response, or the client's log), never a traceback."""
    if asyncio.iscoroutinefunction(method):
        async def handle_async(params):  # type: ignore[no-untyped-def]
            with _one_line():
                return await method(params)
        return handle_async

    def handle(params):  # type: ignore[no-untyped-def]
        with _one_line():
            return method(params)
    return handle


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except JsonRpcException:
        raise
    except Exception as error:
        if os.environ.get("SKIPLINT_DEBUG"):
            log.error("handler error", exc_info=error)
        raise JsonRpcInternalError(message=f"skiplint: internal error: {type(error).__name__}: {error}") from None


def serve(debounce: float = DEBOUNCE_S) -> int:
    return SkiplintServer(debounce).serve()
