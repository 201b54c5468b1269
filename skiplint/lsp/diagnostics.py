"""When each open document is analysed, and what is published for it: the debounce, the
analysis on the worker (or inline), the protocol's diagnostics, and the hover on them.

An analysis starts at once after a quiet moment (the leading edge); a change less than the
debounce after the previous one waits until the document has been quiet that long (the trailing
edge), and a change while the document's analysis runs is analysed when it ends. A result is
published only while its snapshot is still the document's current one, never late.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Sequence

from lsprotocol import types

from skiplint import formats, reparse, rules
from skiplint.diagnostics import Diagnostic, FileResult, without_code
from skiplint.lsp import features
from skiplint.lsp.documents import Document, path_of
from skiplint.rules import doc

if TYPE_CHECKING:
    from skiplint.lsp.server import SkiplintServer

#: Other open documents are analysed again this long after a module they may import last changed.
DEPENDENTS_S = 0.3
#: A document whose last analysis took less than this is analysed on the event loop's thread
#: when the worker is idle (see _start); longer ones on the worker, so that the server keeps
#: answering meanwhile.
INLINE_S = 0.05
#: How long a result computed on the loop's thread waits for a message the client is still sending.
DRAIN_S = 1.0


@dataclass(frozen=True)
class Published:
    """What was published for one snapshot of a document: skiplint's findings and the protocol's."""

    document: Document
    result: FileResult
    diagnostics: tuple[types.Diagnostic, ...]


def as_range(start: tuple[int, int], end: tuple[int, int]) -> types.Range:
    return types.Range(start=types.Position(line=start[0], character=start[1]),
                       end=types.Position(line=end[0], character=end[1]))


class Analyses:
    """The analyses of the open documents and what was published for them."""

    def __init__(self, server: "SkiplintServer") -> None:
        self.server = server
        self.published: dict[str, Published] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._running: set[str] = set()
        #: How long each document's last analysis took (seconds).
        self._cost: dict[str, float] = {}
        #: Each open document's last parse, so that an edit re-parses only the statements it
        #: touched (skiplint.reparse).
        self._parses: dict[str, reparse.Memo] = {}
        #: Documents to analyse again when their running analysis ends.
        self._again: set[str] = set()
        self._last_change: dict[str, float] = {}

    # -- scheduling ------------------------------------------------------------------------------
    def changed(self, uri: str) -> None:
        """A new snapshot: analyse at once after a quiet moment, else when typing pauses."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        previous = self._last_change.get(uri)
        self._last_change[uri] = now
        self.server.snapshot_changed(uri)
        debounce = self.server.settings.debounce
        burst = previous is not None and now - previous < debounce
        self.schedule(uri, debounce if burst else 0.0)
        self.schedule_dependents(uri)

    def forget(self, uri: str, clear: bool) -> None:
        """A document closed or out of step: its timers and memos go; with `clear`, its diagnostics too."""
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        self._last_change.pop(uri, None)
        self._cost.pop(uri, None)
        self._parses.pop(uri, None)
        self.server.snapshot_changed(uri)
        if clear:
            self.published.pop(uri, None)
            self.server.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def stop(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()

    def schedule(self, uri: str, delay: float) -> None:
        timer = self._timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        if self.server.shut_down:
            return
        if uri in self._running:
            self._again.add(uri)  # started when the running analysis ends (see _analysed)
        elif delay <= 0:
            self._start(uri)
        else:
            self._timers[uri] = asyncio.get_running_loop().call_later(delay, self._start, uri)

    def schedule_dependents(self, uri: str) -> None:
        """Open documents that may import the module `uri` are analysed again once it is quiet."""
        path = path_of(uri)
        if path is None:
            return
        name = os.path.basename(os.path.dirname(path) if path.endswith("__init__.py") else path)
        stem = re.escape(name.rsplit(".", 1)[0])
        pattern = re.compile(rf"\b{stem}\b")
        for other, document in self.server.documents.items():
            if other != uri and pattern.search(document.text):
                self.schedule(other, max(DEPENDENTS_S, self.server.settings.debounce))

    def reanalyse_all(self) -> None:
        for uri in list(self.server.documents):
            self.schedule(uri, 0.0)

    def _start(self, uri: str) -> None:
        self._timers.pop(uri, None)
        server = self.server
        document = server.documents.get(uri)
        if document is None or server.shut_down:
            return
        self._running.add(uri)
        buffers = tuple(server.documents.values())
        quick = self._cost.get(uri, INLINE_S) < INLINE_S
        if quick and server.connection.reader is not None and server.worker.pending == 0:
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
        future = server.worker.submit(lambda: self._analyse(document, buffers))
        future.add_done_callback(lambda done: self._analysed(uri, document, done))

    async def _after_input(self, uri: str, document: Document, done: "asyncio.Future[Any]") -> None:
        """Publish (or drop) a result computed on the loop's thread once the messages that came
        during the analysis (up to DRAIN_S) have been handled: a newer edit among them drops it."""
        loop = asyncio.get_running_loop()
        limit = loop.time() + DRAIN_S
        while self.server.connection.input_pending() and loop.time() < limit:
            await asyncio.sleep(0.0005)
        self._analysed(uri, document, done)

    def _analysed(self, uri: str, document: Document, done: "asyncio.Future[Any]") -> None:
        server = self.server
        self._running.discard(uri)
        current = server.documents.get(uri)
        error = done.exception()
        if current is document and error is None:
            published, problems = done.result()
            for problem, fatal in problems:  # what stops the CLI (exit status 2) is an error here
                server.say(problem, types.MessageType.Error if fatal else types.MessageType.Warning)
            self.published[uri] = published
            server.ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=uri, version=document.version, diagnostics=list(published.diagnostics)))
        elif error is not None:  # a bug of the server itself: said, and the server goes on
            server.say(f"skiplint: could not check {server.display(server.path_for(document))}: "
                       f"{type(error).__name__}: {error}", types.MessageType.Error, once=False)
        if current is not None and (current is not document or uri in self._again):
            # Overtaken while it ran: the newest snapshot, after the debounce since its change.
            self._again.discard(uri)
            loop = asyncio.get_running_loop()
            wait = self._last_change.get(uri, 0.0) + server.settings.debounce - loop.time()
            self.schedule(uri, max(wait, 0.0))

    # -- the worker's side -----------------------------------------------------------------------
    def _analyse(self, document: Document,
                 buffers: Sequence[Document]) -> tuple[Published, list[tuple[str, bool]]]:
        started = time.perf_counter()
        server = self.server
        server.overlay(buffers)
        path = server.path_for(document)
        settings, problems = server.configuration().settings_for(path)
        if settings is None:
            result = FileResult(path, ())
        else:
            memo = self._parses.setdefault(document.uri, reparse.Memo())
            memo.target = document.text
            result = features.check(document.text, path, settings, memo, server.session)
        diagnostics = tuple(self.protocol_diagnostic(document, d) for d in result.diagnostics)
        self._cost[document.uri] = time.perf_counter() - started
        return Published(document, result, diagnostics), problems

    def protocol_diagnostic(self, document: Document, diagnostic: Diagnostic) -> types.Diagnostic:
        encoding = self.server.encoding
        start = document.client_position(diagnostic.line, diagnostic.col, encoding)
        end = document.client_position(*diagnostic.end, encoding)  # the start when not known
        error = formats.level(diagnostic.code) == "error"
        return types.Diagnostic(
            range=as_range(start, end),
            severity=types.DiagnosticSeverity.Error if error else types.DiagnosticSeverity.Information,
            code=diagnostic.code,
            code_description=types.CodeDescription(href=formats.help_uri(diagnostic.code)),
            source="skiplint",
            message=without_code(diagnostic.code, diagnostic.message),
        )

    # -- hover -----------------------------------------------------------------------------------
    def current(self, uri: str) -> Optional[Published]:
        """What was published for the document's current snapshot, if anything."""
        published = self.published.get(uri)
        if published is None or self.server.documents.get(uri) is not published.document:
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
        if self.server.markdown:
            text = "\n\n---\n\n".join(features.hover_markdown(code) for code in codes)
            return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
        text = "\n".join(doc.rule_text(code) for code in codes)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.PlainText, value=text))
