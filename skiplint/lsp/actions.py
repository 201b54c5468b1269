"""Code actions and the skip layout, each computed by the worker once per snapshot of a document.

The actions: `skiplint fix`'s edit for one finding, `# noqa: CODE` on its line, and the whole
file's fix (`source.fixAll.skiplint`). An action's data names the snapshot and the finding it was
made for; codeAction/resolve takes only data that names a finding published for the document's
current snapshot, so data a client made up can name no other edit than one the server would offer.

The layout: a code lens on each pipe call `skiplint layout` can draw, and the command
skiplint.showLayout that draws it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from skiplint import config, rules
from skiplint.diagnostics import Diagnostic
from skiplint.lsp import features
from skiplint.lsp.diagnostics import Published, as_range
from skiplint.lsp.documents import Document
from skiplint.parsing import ParseFailure
from skiplint.rules.portability import REMOVED_TORCH_PIPELINE

if TYPE_CHECKING:
    from skiplint.lsp.server import SkiplintServer

FIX_ALL_KIND = "source.fixAll.skiplint"
#: What an action does: one finding's fix, its noqa, the whole file's fix.
KINDS = ("fix", "noqa", "all")
#: The command that draws a composition's skip layout (arguments: the document's URI, a 0-based line).
LAYOUT_COMMAND = "skiplint.showLayout"


class PerSnapshot:
    """What was computed for each snapshot of the open documents, by keys whose second item is the URI."""

    def __init__(self, server: "SkiplintServer") -> None:
        self.server = server
        self._cache: dict[tuple[Any, ...], Any] = {}

    def drop(self, uri: str) -> None:
        for key in [key for key in self._cache if key[1] == uri]:
            del self._cache[key]


class Actions(PerSnapshot):
    """The code actions of the open documents and their edits (lists of features.Replacement)."""

    @staticmethod
    def _findings_in(published: Published, selection: types.Range) -> list[tuple[types.Diagnostic, Diagnostic]]:
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
        published = self.server.analyses.current(params.text_document.uri)
        if published is None:
            return None
        only = params.context.only

        def wanted(kind: str) -> bool:
            return only is None or any(kind == k or kind.startswith(k + ".") for k in only)
        document = published.document
        found: list[Optional[types.CodeAction]] = []
        here = self._findings_in(published, params.range)
        if wanted(types.CodeActionKind.QuickFix):
            for protocol, finding in here:
                if finding.code in features.FIXABLE:
                    targets = features.TARGETS if finding.code == REMOVED_TORCH_PIPELINE.code else features.TARGETS[:1]
                    for target in targets:
                        found.append(await self._action(document, "fix", finding, protocol, target))
            for protocol, finding in here:
                if finding.code not in features.UNSUPPRESSIBLE:
                    found.append(await self._action(document, "noqa", finding, protocol))
        if wanted(FIX_ALL_KIND) and any(d.code in features.FIXABLE for d in published.result.diagnostics):
            found.append(await self._action(document, "all", None, None))
        return [action for action in found if action is not None]

    async def _action(self, document: Document, what: str, finding: Optional[Diagnostic],
                      protocol: Optional[types.Diagnostic], target: str = "torchgpipe") -> Optional[types.CodeAction]:
        kind: str = types.CodeActionKind.QuickFix
        if what == "fix":
            assert finding is not None
            title = rules.RULES[finding.code].title(finding.args, target)
        elif what == "noqa":
            assert finding is not None
            title = f"Suppress {finding.code} on this line (# noqa: {finding.code})"
        else:
            title = "Fix all skiplint findings in this file"
            kind = FIX_ALL_KIND
        key = [document.uri, document.serial, what, target] + (
            [finding.code, finding.line, finding.col, finding.message] if finding is not None else [])
        action = types.CodeAction(title=title, kind=kind, diagnostics=[protocol] if protocol is not None else None,
                                  data=key)
        if what != "all" or not self.server.resolve_edits:
            # One finding's edit is computed now (once per snapshot): an action is offered only
            # when `skiplint fix` would make it. The whole file's waits for codeAction/resolve,
            # where the client can ask for it.
            action.edit = await self._edit(key)
            if action.edit is None:
                return None
        return action

    async def resolve_code_action(self, action: types.CodeAction) -> types.CodeAction:
        edit = await self._edit(action.data)
        if edit is not None:
            action.edit = edit
        else:
            action.disabled = types.CodeActionDisabled(reason="the fix no longer applies")
        return action

    def _named(self, key: Any) -> Optional[tuple[Published, str, str, Optional[Diagnostic]]]:
        """The current snapshot's publication, the action and its target, and the published
        finding that an action's data names; None for data that names none of them."""
        if not isinstance(key, list) or len(key) not in (4, 8):
            return None
        uri, serial, what, target = key[:4]
        if not isinstance(uri, str) or what not in KINDS or target not in features.TARGETS:
            return None
        published = self.server.analyses.current(uri)
        if published is None or published.document.serial != serial or (what == "all") != (len(key) == 4):
            return None
        if what == "all":
            return published, what, target, None
        named = tuple(key[4:])
        finding = next((d for d in published.result.diagnostics
                        if (d.code, d.line, d.col, d.message) == named), None)
        if finding is None or (what == "fix" and finding.code not in features.FIXABLE):
            return None
        return published, what, target, finding

    async def _edit(self, key: Any) -> Optional[types.WorkspaceEdit]:
        """The edit an action's data names; None when it does not apply (anymore), or the data
        names nothing the server offers."""
        named = self._named(key)
        if named is None:
            return None
        published, what, target, finding = named
        server = self.server
        document = published.document
        cache = (document.serial, document.uri, what, target,
                 None if finding is None else (finding.code, finding.line, finding.col, finding.message))
        if cache not in self._cache:
            self._cache[cache] = await server.on_worker(
                document, lambda settings, path: self._replacements(document, settings, path, what, finding, target),
                [])
        replacements: list[features.Replacement] = self._cache[cache]
        if not replacements or server.documents.get(document.uri) is not document:
            return None
        encoding = server.encoding
        edits = [types.TextEdit(range=as_range(document.client_position_at(r.start, encoding),
                                               document.client_position_at(r.end, encoding)),
                                new_text=r.text) for r in replacements]
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
            edits=edits)])

    def _replacements(self, document: Document, settings: config.Config, path: str, what: str,
                      finding: Optional[Diagnostic], target: str) -> list[features.Replacement]:
        if not features.readable(document.text):
            return []  # edits are made on the text: only where the CLI reads exactly that text
        session = self.server.session
        if what == "noqa" and finding is not None:
            replacement = features.suppression(document.text, finding)
            return [replacement] if isinstance(replacement, features.Replacement) else []
        if what == "fix" and finding is not None:
            moved = rules.diagnostic(path, (finding.line, finding.col), finding.code, finding.message)
            found = features.quick_fix(document.text, path, settings, moved, target, session)
            return found if isinstance(found, list) else []
        everything = features.fix_all(document.text, path, settings, target, session)
        return [everything[0]] if everything is not None else []


class Layouts(PerSnapshot):
    """The lenses of the open documents (lists of features.Lens) and the layout command."""

    async def code_lens(self, params: types.CodeLensParams) -> Optional[list[types.CodeLens]]:
        server = self.server
        document = server.documents.get(params.text_document.uri)
        if document is None:
            return None
        cache = (document.serial, document.uri)
        if cache not in self._cache:
            self._cache[cache] = await server.on_worker(
                document, lambda settings, path: self._lenses(document, settings, path), [])
        out = []
        for lens in self._cache.get(cache, ()):
            start = document.client_position(lens.line + 1, lens.column, server.encoding)
            end = document.client_position(lens.end_line + 1, lens.end_column, server.encoding)
            out.append(types.CodeLens(range=as_range(start, end), command=types.Command(
                title=f"skip layout of {lens.name}", command=LAYOUT_COMMAND,
                arguments=[document.uri, lens.line])))
        return out

    def _lenses(self, document: Document, settings: config.Config, path: str) -> list[features.Lens]:
        if not features.readable(document.text):
            return []
        try:
            return features.lenses(features.models(document.text, path, settings, self.server.session))
        except ParseFailure:
            return []

    async def show_layout(self, *arguments: Any) -> Optional[str]:
        """`skiplint.showLayout URI LINE`: the drawing of the composition at that line (also shown
        as a message); a position object in place of the line is accepted."""
        server = self.server
        uri = arguments[0] if arguments else None
        line = arguments[1] if len(arguments) > 1 else 0
        if isinstance(line, dict):
            line = line.get("line", 0)
        document = server.documents.get(uri) if isinstance(uri, str) else None
        if document is None or not isinstance(line, int) or isinstance(line, bool):
            raise JsonRpcInvalidParams("skiplint.showLayout wants an open document's URI and a line")
        text = await server.on_worker(
            document, lambda settings, path: self._layout(document, settings, path, line),
            "skiplint: the configuration file named in the settings cannot be read")
        server.say(text, types.MessageType.Info, once=False)
        return text

    def _layout(self, document: Document, settings: config.Config, path: str, line: int) -> str:
        display = self.server.display(path)
        if not features.readable(document.text):
            return f"{display}: cannot draw the layout of a text the CLI would not read as it is"
        try:
            drawn = features.layout_at(document.text, path, settings, line, display, self.server.session)
        except ParseFailure as error:
            return f"{display}: cannot read: {error}"
        return drawn if drawn is not None else f"{display}: no composition with skippable layers"
