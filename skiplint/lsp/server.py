"""`skiplint server`: the Language Server Protocol over standard input and output, on pygls.

One thread reads and answers messages (pygls' event loop); one worker thread runs everything
that needs the engine, one job at a time: analyses, quick fixes, layouts, lenses. Each change of
a document makes a new immutable snapshot of it. An analysis starts at once after a quiet
moment (the leading edge); a change that comes less than `debounce` seconds after the previous
one waits until the document has been quiet that long (the trailing edge), and a change that
comes while the document's analysis runs is analysed when it ends. A result is published only
while its snapshot is still the document's current one: an analysis overtaken by a newer edit is
dropped, never published late.

Other modules' classes are read from the open buffers first (the project scan's overlay), then
from disk. The configuration is the CLI's (config.Finder), looked up again whenever one of the
configuration files it could read changes, and after every change the client reports.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import queue
import re
import select
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from skiplint import __version__, config, projectscan, reparse, rules, sources
from skiplint.diagnostics import Diagnostic, FileResult
from skiplint.lsp import features
from skiplint.lsp.documents import UTF8, UTF16, UTF32, Document, path_of
from skiplint.rules.portability import REMOVED_TORCH_PIPELINE

T = TypeVar("T")

#: The default debounce: edits closer together than this are analysed once the typing pauses.
DEBOUNCE_S = 0.05
#: Other open documents are analysed again this long after a module they may import last changed.
DEPENDENTS_S = 0.3
#: A document whose last analysis took less than this is analysed on the event loop's thread
#: when the worker is idle (see _start); longer ones on the worker, so that the server keeps
#: answering meanwhile.
INLINE_S = 0.05
#: How long a result computed on the loop's thread waits for a message the client is still sending.
DRAIN_S = 1.0
#: The analysis thread's stack, in bytes: a main thread's usual 8 MB.
WORKER_STACK = 8 * 1024 * 1024
#: The command that draws a composition's skip layout (arguments: the document's URI, a 0-based line).
LAYOUT_COMMAND = "skiplint.showLayout"
FIX_ALL_KIND = "source.fixAll.skiplint"
#: The configuration files the CLI reads, by name.
CONFIG_NAMES = frozenset(name for name, _ in config.CONFIG_FILES)
_ENCODINGS: dict[str, str] = {types.PositionEncodingKind.Utf8: UTF8, types.PositionEncodingKind.Utf16: UTF16,
              types.PositionEncodingKind.Utf32: UTF32}
_SERIAL = itertools.count(1)

log = logging.getLogger("skiplint.server")


class Worker:
    """One daemon thread that runs jobs in order; results come back to the event loop as futures.
    (A daemon, so that a job still running never holds the process after `exit`.)"""

    def __init__(self) -> None:
        self._jobs: "queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any]]]" = \
            queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="skiplint-analysis", daemon=True)
        previous = threading.stack_size()
        try:  # at least the room a main thread has (some systems give threads far less)
            threading.stack_size(WORKER_STACK)
        except (ValueError, RuntimeError):
            pass
        try:
            self._thread.start()
        finally:
            threading.stack_size(previous)

    #: Jobs submitted and not yet finished, as the event loop's thread sees it (a job whose
    #: future was cancelled still runs to its end).
    pending = 0

    def submit(self, job: Callable[[], T]) -> "asyncio.Future[T]":
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.pending += 1
        self._jobs.put((loop, future, job))
        return future

    def _finished(self) -> None:
        self.pending -= 1

    def _run(self) -> None:
        while True:
            loop, future, job = self._jobs.get()
            try:
                result = job()
            except BaseException as error:  # handed to whoever awaits the job
                loop.call_soon_threadsafe(_fail, future, error, self._finished)
            else:
                loop.call_soon_threadsafe(_succeed, future, result, self._finished)


def _succeed(future: "asyncio.Future[Any]", result: Any, finished: Callable[[], None]) -> None:
    finished()
    if not future.cancelled():
        future.set_result(result)


def _fail(future: "asyncio.Future[Any]", error: BaseException, finished: Callable[[], None]) -> None:
    finished()
    if not future.cancelled():
        future.set_exception(error)


@dataclass
class Settings:
    """The client's settings: the CLI's options of the same names, and the debounce."""

    config: Optional[str] = None
    isolated: bool = False
    select: Optional[tuple[str, ...]] = None
    ignore: Optional[tuple[str, ...]] = None
    extend_select: Optional[tuple[str, ...]] = None
    debounce: float = DEBOUNCE_S
    problems: list[str] = field(default_factory=list)


def _codes(name: str, value: Any, problems: list[str]) -> Optional[tuple[str, ...]]:
    if value is None:
        return None
    words = value if isinstance(value, (list, tuple)) else str(value).replace(" ", ",").split(",")
    codes = tuple(str(w).strip().upper() for w in words if str(w).strip())
    bad = [code for code in codes if not config.known_code(code)]
    for code in bad:
        problems.append(f"skiplint: setting {name}: {config.unknown_code(code)}")
    return None if bad else codes


def read_settings(raw: Any, default_debounce: float) -> Settings:
    """Settings from initializationOptions or workspace/didChangeConfiguration: an object with the
    keys below, directly or under "skiplint". A bad value is one line in `problems` and ignored."""
    settings = Settings(debounce=default_debounce)
    if isinstance(raw, dict) and isinstance(raw.get("skiplint"), dict):
        raw = raw["skiplint"]
    if not isinstance(raw, dict):
        return settings
    problems = settings.problems
    value = raw.get("config")
    if isinstance(value, str) and value:
        settings.config = value
    elif value is not None:
        problems.append(f"skiplint: setting config: expected a path, got {value!r}")
    settings.isolated = bool(raw.get("isolated", False))
    settings.select = _codes("select", raw.get("select"), problems)
    settings.ignore = _codes("ignore", raw.get("ignore"), problems)
    settings.extend_select = _codes("extendSelect", raw.get("extendSelect", raw.get("extend_select")), problems)
    value = raw.get("debounce")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 10_000:
        settings.debounce = value / 1000
    elif value is not None:
        problems.append(f"skiplint: setting debounce: expected milliseconds from 0 to 10000, got {value!r}")
    return settings


@dataclass(frozen=True)
class Published:
    """What was published for one snapshot of a document: skiplint's findings and the protocol's."""

    document: Document
    result: FileResult
    diagnostics: tuple[types.Diagnostic, ...]


class Configuration:
    """The CLI's configuration finder, made again when a file it may have read changes. Used by
    the worker thread only."""

    def __init__(self, settings: Settings, root: str) -> None:
        self.settings = settings
        self.root = root
        explicit = settings.config
        if explicit is not None and not os.path.isabs(explicit):
            explicit = os.path.join(root, explicit)
        self.explicit = explicit
        self.finder = self._finder()
        self._seen: dict[str, tuple[Any, ...]] = {}

    def _finder(self) -> config.Finder:
        overrides = {"select": self.settings.select, "ignore": self.settings.ignore,
                     "extend_select": self.settings.extend_select}
        return config.Finder(explicit=self.explicit, isolated=self.settings.isolated, overrides=overrides)

    def _signature(self, directory: str) -> tuple[Any, ...]:
        """The size and mtime of every configuration file the finder may read for a directory."""
        if self.settings.isolated:
            return ()
        candidates = [self.explicit] if self.explicit is not None else []
        if not candidates:
            while True:
                candidates.extend(os.path.join(directory, name) for name, _ in config.CONFIG_FILES)
                parent = os.path.dirname(directory)
                if parent == directory:
                    break
                directory = parent
        out = []
        for path in candidates:
            try:
                info = os.stat(path)
            except OSError:
                continue
            out.append((path, info.st_size, info.st_mtime_ns))
        return tuple(out)

    def for_file(self, path: str) -> config.Config:
        directory = os.path.dirname(path)
        signature = self._signature(directory)
        if self._seen.get(directory, signature) != signature:
            self.finder = self._finder()
            self._seen.clear()
        self._seen[directory] = signature
        return self.finder.for_file(path)


class SkiplintServer:
    """The server's state and its handlers, registered on a pygls LanguageServer."""

    def __init__(self, debounce: float = DEBOUNCE_S) -> None:
        self.ls = LanguageServer("skiplint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.default_debounce = debounce
        self.settings = Settings(debounce=debounce)
        self.root = os.getcwd()
        self.encoding = UTF16
        self.markdown = True
        self.resolve_edits = False
        self.shut_down = False
        self.documents: dict[str, Document] = {}
        self.published: dict[str, Published] = {}
        self._worker: Optional[Worker] = None
        self._configuration: Optional[Configuration] = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._running: set[str] = set()
        #: How long each document's last analysis took (seconds).
        self._cost: dict[str, float] = {}
        #: Each open document's last parse, so that an edit re-parses only the statements it
        #: touched (skiplint.reparse).
        self._parses: dict[str, reparse.Memo] = {}
        #: The client's messages, when the event loop reads them itself (see _serve_pipe).
        self._reader: Optional[asyncio.StreamReader] = None
        #: Documents to analyse again when their running analysis ends.
        self._again: set[str] = set()
        self._last_change: dict[str, float] = {}
        self._shown: set[str] = set()
        #: Edits and lenses computed for a snapshot: (serial, uri, what, target, finding) -> result.
        self._fixes: dict[tuple[Any, ...], Any] = {}
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
                (types.TEXT_DOCUMENT_DID_OPEN, self.did_open, None),
                (types.TEXT_DOCUMENT_DID_CHANGE, self.did_change, None),
                (types.TEXT_DOCUMENT_DID_SAVE, self.did_save, None),
                (types.TEXT_DOCUMENT_DID_CLOSE, self.did_close, None),
                (types.WORKSPACE_DID_CHANGE_CONFIGURATION, self.did_change_configuration, None),
                (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, self.did_change_watched_files, None),
                (types.TEXT_DOCUMENT_HOVER, self.hover, None),
                (types.TEXT_DOCUMENT_CODE_ACTION, self.code_action, types.CodeActionOptions(
                    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True)),
                (types.CODE_ACTION_RESOLVE, self.resolve_code_action, None),
                (types.TEXT_DOCUMENT_CODE_LENS, self.code_lens, types.CodeLensOptions(resolve_provider=False))):
            ls.feature(method, options)(_handler(handler))

        async def layout_command(ls: Any, *arguments: Any) -> Optional[str]:
            # pygls hands a handler whose first parameter is named `ls` the server, then every argument.
            return await self.show_layout(*arguments)

        ls.command(LAYOUT_COMMAND)(layout_command)

    def say(self, message: str, kind: types.MessageType = types.MessageType.Warning, once: bool = True) -> None:
        """A message for the person at the editor, also in the client's log (with `once`, each
        distinct message once until the configuration changes)."""
        if once and message in self._shown:
            return
        self._shown.add(message)
        self.ls.window_log_message(types.LogMessageParams(type=kind, message=message))
        self.ls.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def configuration(self) -> Configuration:
        if self._configuration is None:
            self._configuration = Configuration(self.settings, self.root)
        return self._configuration

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
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def exit(self, params: None) -> None:
        # The protocol's exit status: 0 after shutdown, else 1. Ended here, without waiting for
        # pygls' reader thread, which a client that keeps the pipe open would block forever.
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
        self.reanalyse_all()

    def did_change_watched_files(self, params: types.DidChangeWatchedFilesParams) -> None:
        names = {os.path.basename(path_of(change.uri) or "") for change in params.changes}
        created = any(change.type != types.FileChangeType.Changed for change in params.changes)
        if names & CONFIG_NAMES:
            self._configuration = None
            self._shown.clear()
        if created:  # a module appeared or went: locations are looked up again
            self.worker.submit(projectscan.SCAN.forget_locations)
        self.reanalyse_all()

    # -- documents -------------------------------------------------------------------------------
    @staticmethod
    def checked(document: Document) -> bool:
        """Python sources: the language the client says, or the file's suffix."""
        return document.language == "python" or (document.path or "").endswith(sources.SUFFIXES)

    def did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        document = Document(item.uri, item.text, item.version, item.language_id, next(_SERIAL))
        if not self.checked(document):
            self._config_edited(document)
            return
        self.documents[item.uri] = document
        self.changed(item.uri)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        old = self.documents.get(uri)
        if old is None or not params.content_changes:
            return
        change = params.content_changes[-1]
        if isinstance(change, types.TextDocumentContentChangeWholeDocument):  # as the server asks
            text = change.text
        else:  # a client that sends ranges anyway: pygls' copy has them applied
            text = self.ls.workspace.get_text_document(uri).source
        self.documents[uri] = Document(uri, text, params.text_document.version, old.language, next(_SERIAL))
        self.changed(uri)

    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if os.path.basename(path_of(uri) or "") in CONFIG_NAMES:
            self._configuration = None
            self._shown.clear()
            self.reanalyse_all()
        elif uri in self.documents:
            self.schedule_dependents(uri)

    def _config_edited(self, document: Document) -> None:
        if os.path.basename(document.path or "") in CONFIG_NAMES:
            self._configuration = None

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        document = self.documents.pop(uri, None)
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._last_change.pop(uri, None)
        self._cost.pop(uri, None)
        self._parses.pop(uri, None)
        self._drop_fixes(uri)
        if document is None:
            return
        self.published.pop(uri, None)
        self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        self.schedule_dependents(uri)  # the others see the file on disk again

    # -- scheduling ------------------------------------------------------------------------------
    def changed(self, uri: str) -> None:
        """A new snapshot: analyse at once after a quiet moment, else when typing pauses."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        previous = self._last_change.get(uri)
        self._last_change[uri] = now
        self._drop_fixes(uri)
        burst = previous is not None and now - previous < self.settings.debounce
        self.schedule(uri, self.settings.debounce if burst else 0.0)
        self.schedule_dependents(uri)

    def schedule(self, uri: str, delay: float) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        if self.shut_down:
            return
        loop = asyncio.get_running_loop()
        if uri in self._running:
            self._again.add(uri)  # started when the running analysis ends (see _analysed)
            return
        if delay <= 0:
            self._start(uri)
        else:
            self._timers[uri] = loop.call_later(delay, self._start, uri)

    def schedule_dependents(self, uri: str) -> None:
        """Open documents that may import the module `uri` are analysed again once it is quiet."""
        path = path_of(uri)
        if path is None:
            return
        name = os.path.basename(os.path.dirname(path) if path.endswith("__init__.py") else path)
        stem = re.escape(name.rsplit(".", 1)[0])
        pattern = re.compile(rf"\b{stem}\b")
        for other, document in self.documents.items():
            if other != uri and pattern.search(document.text):
                self.schedule(other, max(DEPENDENTS_S, self.settings.debounce))

    def reanalyse_all(self) -> None:
        for uri in list(self.documents):
            self.schedule(uri, 0.0)

    def _start(self, uri: str) -> None:
        self._timers.pop(uri, None)
        document = self.documents.get(uri)
        if document is None or self.shut_down:
            return
        self._running.add(uri)
        buffers = tuple(self.documents.values())
        if self._reader is not None and self.worker.pending == 0 and self._cost.get(uri, INLINE_S) < INLINE_S:
            # A document whose last analysis was quick, with the worker idle: analysed here, on
            # the event loop's thread, which saves two thread switches (each a wait for a core on
            # a busy machine). Messages that arrive meanwhile wait in the pipe, and are read
            # before the result is published (or dropped).
            loop = asyncio.get_running_loop()
            future: asyncio.Future[Any] = loop.create_future()
            try:
                future.set_result(self._analyse(document, buffers))
            except Exception as error:  # a bug of the server itself: said by _analysed
                future.set_exception(error)
            asyncio.ensure_future(self._after_input(uri, document, future))
            return
        future = self.worker.submit(lambda: self._analyse(document, buffers))
        future.add_done_callback(lambda done: self._analysed(uri, document, done))

    def _input_pending(self) -> bool:
        """Whether part of a message from the client has arrived and not been handled yet."""
        reader = self._reader
        if reader is None:
            return False
        if getattr(reader, "_buffer", b""):  # read from the pipe, not yet parsed (asyncio keeps it there)
            return True
        try:
            return bool(select.select([sys.stdin.fileno()], [], [], 0)[0])
        except (OSError, ValueError):
            return False

    async def _after_input(self, uri: str, document: Document, done: "asyncio.Future[Any]") -> None:
        """Publish (or drop) a result computed on the loop's thread once the messages that came
        during the analysis have been handled: a newer edit among them drops it. A message still
        arriving after DRAIN_S is left to the next round."""
        loop = asyncio.get_running_loop()
        limit = loop.time() + DRAIN_S
        while self._input_pending() and loop.time() < limit:
            await asyncio.sleep(0.0005)
        self._analysed(uri, document, done)

    def _analysed(self, uri: str, document: Document, done: "asyncio.Future[Any]") -> None:
        self._running.discard(uri)
        current = self.documents.get(uri)
        error = done.exception()
        if current is document and error is None:
            published, problems = done.result()
            for problem, fatal in problems:  # what stops the CLI (exit status 2) is an error here
                self.say(problem, types.MessageType.Error if fatal else types.MessageType.Warning)
            self.published[uri] = published
            self.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=document.version, diagnostics=list(published.diagnostics)))
        elif error is not None:  # a bug of the server itself: said, and the server goes on
            self.say(f"skiplint: could not check {self.display(self.path_for(document))}: "
                     f"{type(error).__name__}: {error}", types.MessageType.Error, once=False)
        if current is not None and (current is not document or uri in self._again):
            # Overtaken while it ran: the newest snapshot, after the debounce since its change.
            self._again.discard(uri)
            loop = asyncio.get_running_loop()
            wait = self._last_change.get(uri, 0.0) + self.settings.debounce - loop.time()
            self.schedule(uri, max(wait, 0.0))

    # -- the worker's side -----------------------------------------------------------------------
    def _overlay(self, buffers: Sequence[Document]) -> None:
        projectscan.SCAN.overlay = {
            document.path: ((len(document.source_bytes()), -document.serial), document.source_bytes())
            for document in buffers if document.path is not None and self.checked(document)}

    def _settings_for(self, path: str) -> tuple[Optional[config.Config], list[tuple[str, bool]]]:
        """The configuration of a file and the configuration problems met so far (one line each,
        as the CLI prints them); None when the file named in the `config` setting cannot be used
        (the CLI stops with exit status 2 before checking anything)."""
        configuration = self.configuration()
        settings = configuration.for_file(path)
        finder = configuration.finder
        problems = [(str(problem), problem.fatal) for problem in finder.problems]
        return (None if finder.unusable else settings), problems

    def _analyse(self, document: Document,
                 buffers: Sequence[Document]) -> tuple[Published, list[tuple[str, bool]]]:
        started = time.perf_counter()
        self._overlay(buffers)
        path = self.path_for(document)
        settings, problems = self._settings_for(path)
        if settings is None:
            result = FileResult(path, ())
        else:
            memo = self._parses.setdefault(document.uri, reparse.Memo())
            memo.target = document.text
            result = features.check(document.text, path, settings, memo)
        diagnostics = tuple(self.protocol_diagnostic(document, d) for d in result.diagnostics)
        self._cost[document.uri] = time.perf_counter() - started
        return Published(document, result, diagnostics), problems

    def protocol_diagnostic(self, document: Document, diagnostic: Diagnostic) -> types.Diagnostic:
        start = document.client_position(diagnostic.line, diagnostic.col, self.encoding)
        end = document.client_position(*diagnostic.end, self.encoding)  # the start when not known
        level = features.severity(diagnostic.code)
        return types.Diagnostic(
            range=_range(start, end),
            severity=types.DiagnosticSeverity.Error if level == "error" else types.DiagnosticSeverity.Information,
            code=diagnostic.code,
            code_description=types.CodeDescription(href=features.help_uri(diagnostic.code)),
            source="skiplint",
            message=features.message_text(diagnostic),
        )

    # -- hover -----------------------------------------------------------------------------------
    def current(self, uri: str) -> Optional[Published]:
        """What was published for the document's current snapshot, if anything."""
        published = self.published.get(uri)
        if published is None or self.documents.get(uri) is not published.document:
            return None
        return published

    def hover(self, params: types.HoverParams) -> Optional[types.Hover]:
        published = self.current(params.text_document.uri)
        if published is None:
            return None
        at = (params.position.line, params.position.character)
        codes: list[str] = []
        for diagnostic in published.diagnostics:
            start = (diagnostic.range.start.line, diagnostic.range.start.character)
            end = (diagnostic.range.end.line, diagnostic.range.end.character)
            code = str(diagnostic.code)
            if start <= at <= end and code in rules.RULES and code not in codes:
                codes.append(code)
        if not codes:
            return None
        if self.markdown:
            text = "\n\n---\n\n".join(features.hover_markdown(code) for code in codes)
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
        text = "\n".join(features.hover_text(code) for code in codes)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.PlainText, value=text))

    # -- code actions ----------------------------------------------------------------------------
    def _drop_fixes(self, uri: str) -> None:
        for key in [key for key in self._fixes if key[1] == uri]:
            del self._fixes[key]

    def _findings_in(self, published: Published, selection: types.Range) -> list[tuple[types.Diagnostic, Diagnostic]]:
        low = (selection.start.line, selection.start.character)
        high = (selection.end.line, selection.end.character)
        out = []
        for protocol, finding in zip(published.diagnostics, published.result.diagnostics):
            start = (protocol.range.start.line, protocol.range.start.character)
            end = (protocol.range.end.line, protocol.range.end.character)
            if start <= high and low <= end:
                out.append((protocol, finding))
        return out

    async def code_action(self, params: types.CodeActionParams) -> Optional[list[types.CodeAction]]:
        uri = params.text_document.uri
        published = self.current(uri)
        if published is None:
            return None
        only = params.context.only
        def wanted(kind: str) -> bool:
            return only is None or any(kind == k or kind.startswith(k + ".") for k in only)
        document = published.document
        actions: list[types.CodeAction] = []
        here = self._findings_in(published, params.range)
        if wanted(types.CodeActionKind.QuickFix):
            for protocol, finding in here:
                if finding.code in features.FIXABLE:
                    targets = features.TARGETS if finding.code == REMOVED_TORCH_PIPELINE.code else features.TARGETS[:1]
                    for target in targets:
                        action = await self._action(document, "fix", finding, protocol, target)
                        if action is not None:
                            actions.append(action)
            for protocol, finding in here:
                action = await self._action(document, "noqa", finding, protocol)
                if action is not None:
                    actions.append(action)
        if wanted(FIX_ALL_KIND) and any(d.code in features.FIXABLE for d in published.result.diagnostics):
            action = await self._action(document, "all", None, None)
            if action is not None:
                actions.append(action)
        return actions

    async def _action(self, document: Document, what: str, finding: Optional[Diagnostic],
                      protocol: Optional[types.Diagnostic], target: str = "torchgpipe") -> Optional[types.CodeAction]:
        if what == "fix":
            assert finding is not None
            title = f"Fix {finding.code}: {features.message_text(finding)}"
            if finding.code == REMOVED_TORCH_PIPELINE.code:
                title = f"Fix {finding.code}: import the skip API from {target}"
            kind: str = types.CodeActionKind.QuickFix
        elif what == "noqa":
            assert finding is not None
            title = f"Suppress {finding.code} on this line (# noqa: {finding.code})"
            kind = types.CodeActionKind.QuickFix
        else:
            title = "Fix all skiplint findings in this file"
            kind = FIX_ALL_KIND
        key = [document.uri, document.serial, what, target] + (
            [finding.code, finding.line, finding.col, finding.message] if finding is not None else [])
        action = types.CodeAction(title=title, kind=kind, diagnostics=[protocol] if protocol is not None else None,
                                  data=key)
        if what != "all" or not self.resolve_edits:
            # One finding's edit is computed now (once per snapshot): an action is offered only
            # when `skiplint fix` would make it. The whole file's waits for codeAction/resolve,
            # where the client can ask for it.
            edit = await self._edit(key)
            if edit is None:
                return None
            action.edit = edit
        return action

    async def resolve_code_action(self, action: types.CodeAction) -> types.CodeAction:
        if isinstance(action.data, list):
            edit = await self._edit(action.data)
            if edit is not None:
                action.edit = edit
            else:
                action.disabled = types.CodeActionDisabled(reason="the fix no longer applies")
        return action

    async def _edit(self, key: list[Any]) -> Optional[types.WorkspaceEdit]:
        """The edit an action's key names, computed by the worker once per snapshot; None when it
        does not apply (anymore)."""
        try:
            uri, serial, what, target = key[0], key[1], key[2], key[3]
            finding = rules.diagnostic("", (int(key[5]), int(key[6])), str(key[4]), str(key[7])) if len(key) >= 8 else None
        except (IndexError, TypeError, ValueError):
            return None
        document = self.documents.get(uri)
        if document is None or document.serial != serial:
            return None
        cache = (serial, uri, what, target, finding)
        if cache not in self._fixes:
            path = self.path_for(document)
            buffers = tuple(self.documents.values())
            self._fixes[cache] = await self.worker.submit(
                lambda: self._compute_edit(document, buffers, path, what, finding, target))
        replacements = self._fixes[cache]
        if not replacements:
            return None
        edits = [types.TextEdit(range=_range(document.client_position_at(r.start, self.encoding),
                                             document.client_position_at(r.end, self.encoding)),
                                new_text=r.text) for r in replacements]
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=document.version),
            edits=edits)])

    def _compute_edit(self, document: Document, buffers: Sequence[Document], path: str, what: str,
                      finding: Optional[Diagnostic], target: str) -> list[features.Replacement]:
        settings, _ = self._settings_for(path)
        if settings is None:
            return []
        if what == "noqa" and finding is not None:
            replacement = features.suppression(document.text, finding)
            return [replacement] if isinstance(replacement, features.Replacement) else []
        self._overlay(buffers)
        if what == "fix" and finding is not None:
            found = features.quick_fix(document.text, path, settings, _with_path(finding, path), target)
            return found if isinstance(found, list) else []
        everything = features.fix_all(document.text, path, settings, target)
        return [everything[0]] if everything is not None else []

    # -- layout ----------------------------------------------------------------------------------
    async def code_lens(self, params: types.CodeLensParams) -> Optional[list[types.CodeLens]]:
        document = self.documents.get(params.text_document.uri)
        if document is None:
            return None
        cache = (document.serial, document.uri, "lens", "", None)
        if cache not in self._fixes:
            path = self.path_for(document)
            buffers = tuple(self.documents.values())
            self._fixes[cache] = await self.worker.submit(lambda: self._lenses(document, buffers, path))
        out = []
        for lens in self._fixes[cache]:
            start = document.client_position(lens.line + 1, lens.column, self.encoding)
            end = document.client_position(lens.end_line + 1, lens.end_column, self.encoding)
            out.append(types.CodeLens(range=_range(start, end), command=types.Command(
                title=f"skip layout of {lens.name}", command=LAYOUT_COMMAND,
                arguments=[document.uri, lens.line])))
        return out

    def _lenses(self, document: Document, buffers: Sequence[Document], path: str) -> list[features.Lens]:
        settings, _ = self._settings_for(path)
        if settings is None:
            return []
        self._overlay(buffers)
        from skiplint.parsing import ParseFailure

        try:
            return features.lenses(features.models(document.text, path, settings))
        except ParseFailure:
            return []

    async def show_layout(self, *arguments: Any) -> Optional[str]:
        """`skiplint.showLayout URI LINE`: the drawing of the composition at that line (also shown
        as a message); a position object in place of the line is accepted."""
        uri = arguments[0] if arguments else None
        where = arguments[1] if len(arguments) > 1 else 0
        if isinstance(where, dict):
            where = where.get("line", 0)
        document = self.documents.get(uri) if isinstance(uri, str) else None
        if document is None or not isinstance(where, int):
            self.say("skiplint: showLayout wants an open document's URI and a line", types.MessageType.Error,
                     once=False)
            return None
        path = self.path_for(document)
        buffers = tuple(self.documents.values())
        line = where
        text = await self.worker.submit(lambda: self._layout(document, buffers, path, line))
        self.say(text, types.MessageType.Info, once=False)
        return text

    def _layout(self, document: Document, buffers: Sequence[Document], path: str, line: int) -> str:
        settings, _ = self._settings_for(path)
        if settings is None:
            return "skiplint: the configuration file named in the settings cannot be read"
        self._overlay(buffers)
        from skiplint.parsing import ParseFailure

        display = self.display(path)
        try:
            drawn = features.layout_at(document.text, path, settings, line, display)
        except ParseFailure as error:
            return f"{display}: cannot read: {error}"
        return drawn if drawn is not None else f"{display}: no composition with skippable layers"

    # -- running ---------------------------------------------------------------------------------
    def serve(self) -> int:
        """Serve over standard input and output until `exit` (which ends the process) or the
        end of the input; the protocol's exit status (1: the input ended without shutdown)."""
        if not asyncio.run(self._serve_pipe()):
            self.ls.start_io()  # standard input the event loop cannot watch: pygls' reader thread
        return 0 if self.shut_down else 1

    async def _serve_pipe(self) -> bool:
        """Read the client's messages on the event loop itself (pygls' own reader hands every
        line to a thread and back: three thread switches per message, each a wait on a busy
        machine). False when standard input is not something the loop can watch."""
        from pygls.io_ import StdoutWriter, run_async

        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        try:
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        except (OSError, ValueError, NotImplementedError):
            return False
        self.ls.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
        self._reader = reader
        stop = threading.Event()
        self.ls._stop_event = stop
        try:
            await run_async(stop_event=stop, reader=reader, protocol=self.ls.protocol, logger=log,
                            error_handler=self.ls.report_server_error)
        except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionError):
            pass  # the client went away mid-message
        return True


def _load_engine() -> None:
    """Import the engine and the fixer (libcst) ahead of the first analysis."""
    from skiplint import engine, fix  # noqa: F401


def _handler(method: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A plain function for a bound method (pygls marks the functions it registers). Its
    parameter has no annotation, so that pygls passes it the message's parameters alone."""
    if asyncio.iscoroutinefunction(method):
        async def handle_async(params):  # type: ignore[no-untyped-def]
            return await method(params)
        return handle_async

    def handle(params):  # type: ignore[no-untyped-def]
        return method(params)
    return handle


def _with_path(finding: Diagnostic, path: str) -> Diagnostic:
    return rules.diagnostic(path, (finding.line, finding.col), finding.code, finding.message)


def _range(start: tuple[int, int], end: tuple[int, int]) -> types.Range:
    return types.Range(start=types.Position(line=start[0], character=start[1]),
                       end=types.Position(line=end[0], character=end[1]))


def serve(debounce: float = DEBOUNCE_S) -> int:
    return SkiplintServer(debounce).serve()
