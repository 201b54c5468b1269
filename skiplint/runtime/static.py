"""The static half of the join: skiplint's own diagnostics on the model's source files, each with
its arguments and what it belongs to (the class for SKP1xx, the compositions for SKP2xx/SKP3xx),
as the lint made them; and the compositions of those files, for the route table.

Each file is checked as the lint checks it: with the project's configuration found for that file
(selection, per-file-ignores, api-aliases, max-unroll), and reported under the path the lint prints.
Each file is analysed once: the compositions are those of the analysis that gave its findings.

`Target` tells the findings of the target (`FILE:FACTORY`) apart from the rest of its files, and
gives the route table of its composition, to compare with the runtime SkipLayout."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Optional

from skiplint import config, engine, parallel
from skiplint.diagnostics import Diagnostic
from skiplint.pipes import layer_text, routes as pipe_routes
from skiplint.runtime.report import LayerRef, Route, StaticFinding
from skiplint.runtime.target import shown_path

if TYPE_CHECKING:
    from skiplint.facts import Composition, ModelFacts, Pipe


@dataclass
class Analysis:
    """What the static pass gave for the model's source files."""

    findings: list[StaticFinding] = field(default_factory=list)
    #: The compositions of each analysed file, by the path the lint prints.
    compositions: dict[str, tuple[Composition, ...]] = field(default_factory=dict)
    #: The pipes (and balancers) of each analysed file, by the path the lint prints.
    pipes: dict[str, tuple[Pipe, ...]] = field(default_factory=dict)


def finding_of(d: Diagnostic, compositions: tuple[Composition, ...] = ()) -> StaticFinding:
    """A diagnostic as the join reads it: its subject from its owners and arguments, never its text;
    its layer typed from the composition it was found in (`compositions`: those of its file)."""
    args = dict(d.args)
    cls = next((o.name for o in d.owners if o.kind == "class"), None) or args.get("cls")
    # A composition's finding names the skip's bare name; a late-bound name (SKP117), the name
    # the variable holds when forward runs.
    name = args.get("name") or args.get("now")
    return StaticFinding(d.path, d.line, d.col, d.code, d.message, cls=cls, layer=_layer_of(d, compositions),
                         name=name, args=args, owners=d.owners, end_line=d.end_line, end_col=d.end_col)


def _layer_of(d: Diagnostic, compositions: tuple[Composition, ...]) -> Optional[LayerRef]:
    """The layer a composition's finding is about: the child of one of the compositions that own it,
    reported where the finding is and shown as its `layer` argument; None when no one child is."""
    shown = d.arg("layer")
    if shown is None:
        return None
    owned = {(o.name, o.line) for o in d.owners if o.kind == "composition"}
    found = {LayerRef(layer.index, layer.key, label_class(layer.label))
             for c in compositions if (c.name, c.site.position[0] if c.site is not None else 0) in owned
             for layer in c.layers
             if layer_text(layer) == shown and (layer.site is None or layer.site.position == (d.line, d.col))}
    return found.pop() if len(found) == 1 else None


def analyse(paths: Iterable[str]) -> Analysis:
    """The lint's diagnostics of the given files (configuration and noqa applied), with their
    owners, and the files' compositions. A file the configuration excludes is left out, as the lint
    leaves it out."""
    finder = config.Finder()
    models: dict[str, ModelFacts] = {}
    diagnostics: list[Diagnostic] = []
    session = engine.Session(kept=models)
    for path in sorted({shown_path(p) for p in paths}):
        settings = finder.for_file(path)
        if not settings.excludes_named(path):
            diagnostics.extend(parallel.check_one((path, settings), session).diagnostics)
    for problem in finder.problems:
        print(problem, file=sys.stderr)
    compositions = {path: facts.compositions for path, facts in models.items()}
    return Analysis([finding_of(d, compositions.get(d.path, ())) for d in diagnostics], compositions,
                    {path: facts.pipes for path, facts in models.items()})


# -- the target ---------------------------------------------------------------------------------


def label_class(label: str) -> str:
    """The class a layer's label names: `Stash()` and `blocks.Stash(3)` are `Stash`."""
    return label.split("(")[0].split(".")[-1].strip()


def _where(path: str, composition: Composition) -> tuple[str, str, tuple[int, int]]:
    """A composition as its file, name and place tell it (the same expression, whoever returns it)."""
    return path, composition.name, composition.site.position if composition.site is not None else (0, 0)


def matches_children(composition: Composition, children: list[tuple[str, str, bool]]) -> bool:
    """Same children, in order: names, and the class of every skippable one. `children` is (child
    name, class name, is skippable) for each direct child of the live model."""
    if not composition.complete or len(composition.layers) != len(children):
        return False
    for layer, (key, cls, skippable) in zip(composition.layers, children):
        if layer.key != key:
            return False
        if skippable and (layer.kind != "skippable" or label_class(layer.label) != cls):
            return False
    return True


@dataclass
class Target:
    """What `skiplint verify FILE:FACTORY` builds, as the static pass knows it: the compositions
    that are the factory's, and the classes its model is made of."""

    #: The file the target names, as the lint prints it (None: the target is a dotted module that
    #: was not found).
    path: Optional[str]
    #: The name after the colon: the factory (or the model bound at module level).
    factory: str
    #: Class names of every module of the built model (a skippable layer's wrapped class); None
    #: when no model was built or rejected (then every class finding of the files is the target's).
    classes: Optional[frozenset[str]] = None
    #: (child name, class name, is skippable) of each direct child of the built model.
    children: list[tuple[str, str, bool]] = field(default_factory=list)

    def compositions(self, analysis: Analysis) -> list[tuple[str, Composition]]:
        """(path, composition) of each composition the factory builds: those of its file that the
        lint ties to it (it returns them, through helpers; or it is the module-level model so
        named); when the lint ties none, those of the model's files whose children are the
        model's."""
        own = [(path, c) for path, found in analysis.compositions.items() if path == self.path
               for c in found if self.factory in c.factories or c.name == self.factory]
        if own or not self.children:
            return own
        return [(path, c) for path, found in analysis.compositions.items() for c in found
                if matches_children(c, self.children)]

    def owns(self, finding: StaticFinding, compositions: list[tuple[str, Composition]]) -> bool:
        """Whether the finding belongs to the target: to a class the model is made of, or to a
        composition the factory builds (one that the lint says the factory returns, or one of
        `compositions`); a finding that belongs to nothing (a file that could not be read) is the
        target's, since it hides what the file would say."""
        if not finding.owners:
            return True
        for owner in finding.owners:
            if owner.kind == "class":
                if self.classes is None or owner.name in self.classes:
                    return True
            elif finding.path == self.path and (self.factory in owner.factories or owner.name == self.factory):
                return True
            elif any(path == finding.path and owner.name == c.name and c.site is not None
                     and owner.line == c.site.position[0] for path, c in compositions):
                return True
        return False

    def pipe(self, analysis: Analysis) -> Optional[tuple[str, Pipe]]:
        """(where, pipe): the one pipe of the analysed files that the lint ties to the target's
        composition, GPipe or fairscale's Pipe with a literal balance; None when there is no such
        pipe, or several that disagree."""
        own = {_where(path, c) for path, c in self.compositions(analysis)}
        found = {(p.balance, p.chunks): (path, p) for path, pipes in analysis.pipes.items() for p in pipes
                 if p.kind in ("GPipe", "FairscalePipe", "TorchPipe") and p.balance is not None
                 and p.composition is not None and _where(path, p.composition) in own}
        if len(found) != 1:
            return None
        path, pipe = next(iter(found.values()))
        line = pipe.site.position[0] if pipe.site is not None else 0
        return f"{path}:{line}", pipe

    def split(self, analysis: Analysis) -> tuple[list[StaticFinding], list[StaticFinding]]:
        """(the target's findings, the findings of its files that are not the target's)."""
        compositions = self.compositions(analysis)
        mine: list[StaticFinding] = []
        others: list[StaticFinding] = []
        for finding in analysis.findings:
            (mine if self.owns(finding, compositions) else others).append(finding)
        return mine, others

    def routes(self, analysis: Analysis, balance: tuple[int, ...]) -> tuple[Optional[list[Route]], str]:
        """(routes, "") from the static route table of the target's compositions whose children are
        the live model's (when none is, of any composition of its files whose children are), or
        (None, why they could not be compared)."""
        every = [c for found in analysis.compositions.values() for c in found]
        found = [c for _, c in self.compositions(analysis) if matches_children(c, self.children)]
        found = found or [c for c in every if matches_children(c, self.children)]
        if not found:
            return None, "not compared: no composition in the source files matches the model's children"
        tables = [_table(composition, balance) for composition in found]
        if any(t != tables[0] for t in tables[1:]):
            return None, f"not compared: {len(found)} compositions match the model and their routes differ"
        return tables[0], ""


def _table(composition: Composition, balance: tuple[int, ...]) -> list[Route]:
    key_of: dict[Optional[int], str] = {layer.index: layer.key for layer in composition.layers}
    table = [Route(r.name, key_of.get(r.stash_layer, "?"), key_of.get(r.pop_layer, "?"),
                   -1 if r.stash_partition is None else r.stash_partition,
                   -1 if r.pop_partition is None else r.pop_partition)
             for r in pipe_routes(composition, balance)]
    return sorted(table, key=str)
