"""The open documents, kept in step with the client: didOpen, didChange (whole texts and ranged
edits, applied exactly in the negotiated position encoding), didSave and didClose.

A ranged edit whose range names no span of the document (a line past its end, a position inside
a character, an end before the start) is refused: the document is no longer in step with the
client, so its findings are withdrawn and the person at the editor is told, until the client sends
the whole text again (a whole-text change, or reopening the document). Nothing is guessed.
"""

from __future__ import annotations

import itertools
import os
from typing import TYPE_CHECKING, Optional

from lsprotocol import types

from skiplint import sources
from skiplint.lsp.configuration import CONFIG_NAMES
from skiplint.lsp.documents import Document, path_of

if TYPE_CHECKING:
    from skiplint.lsp.server import SkiplintServer


def checked(document: Document) -> bool:
    """Python sources: the language the client says, or the file's suffix."""
    return document.language == "python" or (document.path or "").endswith(sources.SUFFIXES)


class TextSync:
    """The documents' texts as the client's edits make them."""

    def __init__(self, server: "SkiplintServer") -> None:
        self.server = server
        #: Open documents out of step with the client (a ranged edit was refused): their language.
        self.lost: dict[str, str] = {}
        #: The documents' serial numbers.
        self.serial = itertools.count(1)

    def did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        document = Document(item.uri, item.text, item.version, item.language_id, next(self.serial))
        self.lost.pop(item.uri, None)
        if not checked(document):
            self._config_edited(document)
            return
        self.server.documents[item.uri] = document
        self.server.analyses.changed(item.uri)

    def did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        server = self.server
        uri = params.text_document.uri
        old = server.documents.get(uri)
        language = old.language if old is not None else self.lost.get(uri)
        if language is None:  # the protocol has no answer to a notification: it is logged
            server.log(f"skiplint: ignored a change of {uri}, which is not open", types.MessageType.Warning)
            return
        text: Optional[str] = old.text if old is not None else None
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangeWholeDocument):
                text = change.text
            elif text is not None:
                start, end = change.range.start, change.range.end
                text = Document(uri, text, None).replaced((start.line, start.character), (end.line, end.character),
                                                          change.text, server.encoding)
                if text is None:
                    self._refuse(uri, language, start, end)
        if text is None:
            return
        self.lost.pop(uri, None)
        server.documents[uri] = Document(uri, text, params.text_document.version, language, next(self.serial))
        server.analyses.changed(uri)

    def _refuse(self, uri: str, language: str, start: types.Position, end: types.Position) -> None:
        server = self.server
        if uri in server.documents:
            del server.documents[uri]
            server.analyses.forget(uri, clear=True)
        self.lost[uri] = language
        server.say(f"skiplint: an edit of {server.display(path_of(uri) or uri)} names a range that is not in the "
                   f"document ({start.line}:{start.character} to {end.line}:{end.character}, in {server.encoding} "
                   f"units); its findings come back when the editor sends the whole text (reopen it)",
                   types.MessageType.Error, once=False)

    def did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        server = self.server
        uri = params.text_document.uri
        if os.path.basename(path_of(uri) or "") in CONFIG_NAMES:
            server.configuration_changed()
            server.analyses.reanalyse_all()
        elif uri in server.documents:
            server.analyses.schedule_dependents(uri)

    def _config_edited(self, document: Document) -> None:
        if os.path.basename(document.path or "") in CONFIG_NAMES:
            self.server.configuration_changed(said_again=False)

    def did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        server = self.server
        uri = params.text_document.uri
        self.lost.pop(uri, None)
        document = server.documents.pop(uri, None)
        server.analyses.forget(uri, clear=document is not None)
        if document is not None:
            server.analyses.schedule_dependents(uri)  # the others see the file on disk again
