"""Code actions: `skiplint fix`'s edit for one finding, `# noqa: CODE` on its line, and the whole
file's fix (`source.fixAll.skiplint`), each computed by the worker once per snapshot.

An action's data names the snapshot and the finding it was made for; codeAction/resolve takes
only data that names a finding published for the document's current snapshot, so data a client
made up can name no other edit than one the server would offer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from lsprotocol import types

from skiplint import rules
from skiplint.diagnostics import Diagnostic
from skiplint.lsp import features
from skiplint.lsp.diagnostics import Published, as_range
from skiplint.lsp.documents import Document
from skiplint.rules.portability import REMOVED_TORCH_PIPELINE

if TYPE_CHECKING:
    from skiplint.lsp.server import SkiplintServer

FIX_ALL_KIND = "source.fixAll.skiplint"
#: What an action does: one finding's fix, its noqa, the whole file's fix.
KINDS = ("fix", "noqa", "all")


class Actions:
    """The code actions of the open documents and their edits, cached per snapshot."""

    def __init__(self, server: "SkiplintServer") -> None:
        self.server = server
        #: (serial, uri, what, target, finding) -> the replacements of that action.
        self._edits: dict[tuple[Any, ...], list[features.Replacement]] = {}

    def drop(self, uri: str) -> None:
        for key in [key for key in self._edits if key[1] == uri]:
            del self._edits[key]

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
        uri = params.text_document.uri
        published = self.server.analyses.current(uri)
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
                if finding.code not in features.UNSUPPRESSIBLE:
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
            title = rules.RULES[finding.code].title(finding.args, target)
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
        if what != "all" or not self.server.resolve_edits:
            # One finding's edit is computed now (once per snapshot): an action is offered only
            # when `skiplint fix` would make it. The whole file's waits for codeAction/resolve,
            # where the client can ask for it.
            edit = await self._edit(key)
            if edit is None:
                return None
            action.edit = edit
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
        """The edit an action's data names, computed by the worker once per snapshot; None when it
        does not apply (anymore), or the data names nothing the server offers."""
        named = self._named(key)
        if named is None:
            return None
        published, what, target, finding = named
        server = self.server
        document = published.document
        cache = (document.serial, document.uri, what, target,
                 None if finding is None else (finding.code, finding.line, finding.col, finding.message))
        if cache not in self._edits:
            path = server.path_for(document)
            buffers = tuple(server.documents.values())
            self._edits[cache] = await server.worker.submit(
                lambda: self._compute_edit(document, buffers, path, what, finding, target))
        replacements = self._edits[cache]
        if not replacements or server.documents.get(document.uri) is not document:
            return None
        encoding = server.encoding
        edits = [types.TextEdit(range=as_range(document.client_position_at(r.start, encoding),
                                               document.client_position_at(r.end, encoding)),
                                new_text=r.text) for r in replacements]
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
            edits=edits)])

    def _compute_edit(self, document: Document, buffers: Sequence[Document], path: str, what: str,
                      finding: Optional[Diagnostic], target: str) -> list[features.Replacement]:
        settings, _ = self.server.configuration().settings_for(path)
        if settings is None or not features.readable(document.text):
            return []  # edits are made on the text: only where the CLI reads exactly that text
        if what == "noqa" and finding is not None:
            replacement = features.suppression(document.text, finding)
            return [replacement] if isinstance(replacement, features.Replacement) else []
        self.server.overlay(buffers)
        if what == "fix" and finding is not None:
            moved = rules.diagnostic(path, (finding.line, finding.col), finding.code, finding.message)
            found = features.quick_fix(document.text, path, settings, moved, target, self.server.session)
            return found if isinstance(found, list) else []
        everything = features.fix_all(document.text, path, settings, target, self.server.session)
        return [everything[0]] if everything is not None else []
