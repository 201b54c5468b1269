"""One analysis session: everything an analysis keeps between files, made by the door that asks for
it (the CLI's run and each of its workers, the flake8 plugin's process, the language server, fix,
layout, verify) and handed down to every step that needs it, never kept where another session
would read it.

Nothing here imports libcst: the flake8 plugin makes its session when flake8 hands it its options,
and the parts (the project walk, the project index, the parsed statements) are made on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Optional

from skiplint.apiimports import NO_ALIASES, Aliases

if TYPE_CHECKING:
    from skiplint.facts import ModelFacts
    from skiplint.parsing import Memo, StatementParts
    from skiplint.project import ProjectIndex
    from skiplint.projectscan import ProjectScan


class _Shared:
    """What the copies of one session for different files share (see Session.configured)."""

    __slots__ = ("project", "scan", "parts", "kept")

    def __init__(self, project: Optional[ProjectIndex], parts: Optional[StatementParts],
                 kept: Optional[dict[str, ModelFacts]], scan: Optional[ProjectScan]) -> None:
        self.project = project
        self.scan = scan if scan is not None else project.scan if project is not None else None
        self.parts = parts if parts is not None else project.parts if project is not None else None
        self.kept = kept


class Session:
    """What one analysis hands down:

    - `scan`: the prefilter's project walk (its overlay: an editor's open buffers);
    - `project`: the project index that resolves imported classes (it reads modules through `scan`);
    - `parts`: the top-level statements parsed before, reused by text, and the guard's last scan;
    - `memo`: the language server's memo of the document being checked: the parse of that
      document's text (and of no other, such as a module it imports) reuses the statements of its
      previous parse that an edit did not touch;
    - `kept`: where each analysed file leaves its compositions and pipes, by path (verify's
      route table reads them from the analysis that gave the file's findings);
    - `aliases`: the api-aliases of the file's configuration (`configured` gives the session of
      one file: the same index, parts and kept, that configuration's aliases).
    """

    __slots__ = ("_shared", "memo", "aliases")

    def __init__(self, *, project: Optional[ProjectIndex] = None, parts: Optional[StatementParts] = None,
                 memo: Optional[Memo] = None, kept: Optional[dict[str, ModelFacts]] = None,
                 aliases: Aliases = NO_ALIASES, scan: Optional[ProjectScan] = None) -> None:
        self._shared = _Shared(project, parts, kept, scan)
        self.memo = memo
        self.aliases = aliases

    @property
    def scan(self) -> ProjectScan:
        if self._shared.scan is None:
            from skiplint.projectscan import ProjectScan

            self._shared.scan = ProjectScan()
        return self._shared.scan

    @property
    def parts(self) -> StatementParts:
        if self._shared.parts is None:
            from skiplint.parsing import StatementParts

            self._shared.parts = StatementParts()
        return self._shared.parts

    @property
    def project(self) -> ProjectIndex:
        if self._shared.project is None:
            from skiplint.project import ProjectIndex

            self._shared.project = ProjectIndex(self.scan, self.parts)
        return self._shared.project

    @property
    def kept(self) -> Optional[dict[str, ModelFacts]]:
        return self._shared.kept

    def configured(self, aliases: Iterable[tuple[str, str]]) -> Session:
        """This session for one file whose configuration says these api-aliases; the index, the
        parsed statements, the kept compositions and the memo are this one's."""
        given = aliases if isinstance(aliases, Aliases) else Aliases(aliases)
        return self if given == self.aliases else self._copy(self.memo, given)

    def remembering(self, memo: Optional[Memo]) -> Session:
        """This session for the language server's document whose memo of its last parse is `memo`."""
        return self._copy(memo, self.aliases)

    def _copy(self, memo: Optional[Memo], aliases: Aliases) -> Session:
        other = Session(aliases=aliases, memo=memo)
        other._shared = self._shared
        return other
