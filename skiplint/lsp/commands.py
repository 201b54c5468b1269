"""The skip layout of a pipe call: a code lens on each one `skiplint layout` can draw, and the
command skiplint.showLayout that draws it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from skiplint.lsp import features
from skiplint.lsp.diagnostics import as_range
from skiplint.lsp.documents import Document

if TYPE_CHECKING:
    from skiplint.lsp.server import SkiplintServer

#: The command that draws a composition's skip layout (arguments: the document's URI, a 0-based line).
LAYOUT_COMMAND = "skiplint.showLayout"


class Layouts:
    """The lenses of the open documents (computed by the worker once per snapshot) and the command."""

    def __init__(self, server: "SkiplintServer") -> None:
        self.server = server
        #: (serial, uri) -> the lenses of that snapshot.
        self._lenses: dict[tuple[int, str], list[features.Lens]] = {}

    def drop(self, uri: str) -> None:
        for key in [key for key in self._lenses if key[1] == uri]:
            del self._lenses[key]

    async def code_lens(self, params: types.CodeLensParams) -> Optional[list[types.CodeLens]]:
        server = self.server
        document = server.documents.get(params.text_document.uri)
        if document is None:
            return None
        cache = (document.serial, document.uri)
        if cache not in self._lenses:
            path = server.path_for(document)
            buffers = tuple(server.documents.values())
            self._lenses[cache] = await server.worker.submit(lambda: self._compute(document, buffers, path))
        out = []
        for lens in self._lenses.get(cache, ()):
            start = document.client_position(lens.line + 1, lens.column, server.encoding)
            end = document.client_position(lens.end_line + 1, lens.end_column, server.encoding)
            out.append(types.CodeLens(range=as_range(start, end), command=types.Command(
                title=f"skip layout of {lens.name}", command=LAYOUT_COMMAND,
                arguments=[document.uri, lens.line])))
        return out

    def _compute(self, document: Document, buffers: Sequence[Document], path: str) -> list[features.Lens]:
        settings, _ = self.server.configuration().settings_for(path)
        if settings is None or not features.readable(document.text):
            return []
        self.server.overlay(buffers)
        from skiplint.parsing import ParseFailure

        try:
            return features.lenses(features.models(document.text, path, settings, self.server.session))
        except ParseFailure:
            return []

    async def show_layout(self, *arguments: Any) -> Optional[str]:
        """`skiplint.showLayout URI LINE`: the drawing of the composition at that line (also shown
        as a message); a position object in place of the line is accepted."""
        server = self.server
        uri = arguments[0] if arguments else None
        where = arguments[1] if len(arguments) > 1 else 0
        if isinstance(where, dict):
            where = where.get("line", 0)
        document = server.documents.get(uri) if isinstance(uri, str) else None
        if document is None or not isinstance(where, int) or isinstance(where, bool):
            raise JsonRpcInvalidParams("skiplint.showLayout wants an open document's URI and a line")
        path = server.path_for(document)
        buffers = tuple(server.documents.values())
        line = where
        text = await server.worker.submit(lambda: self._layout(document, buffers, path, line))
        server.say(text, types.MessageType.Info, once=False)
        return text

    def _layout(self, document: Document, buffers: Sequence[Document], path: str, line: int) -> str:
        server = self.server
        settings, _ = server.configuration().settings_for(path)
        if settings is None:
            return "skiplint: the configuration file named in the settings cannot be read"
        display = server.display(path)
        if not features.readable(document.text):
            return f"{display}: cannot draw the layout of a text the CLI would not read as it is"
        server.overlay(buffers)
        from skiplint.parsing import ParseFailure

        try:
            drawn = features.layout_at(document.text, path, settings, line, display, self.server.session)
        except ParseFailure as error:
            return f"{display}: cannot read: {error}"
        return drawn if drawn is not None else f"{display}: no composition with skippable layers"
