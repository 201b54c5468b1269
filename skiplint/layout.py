"""`skiplint layout PATH[:NAME]`: each composition's layers, partitions and skip arcs, statically.

The route table is the static equivalent of `inspect_skip_layout` for a balance: which partition
stashes and which pops every (namespace, name). In the picture and the command's JSON a namespace
is named as the source names it (`ns2`, `namespaces[1]`); `route_table`, for the runtime companion,
labels them `ns1`, `ns2`, ... in the order of the first layer that stashes into them (then by skip
name), the default one `None`, so a table computed from a live model (see `label_namespaces`)
compares equal as a plain value. Each pop is drawn from the stash it takes at run time, and what
the lint reports about a composition is said under it in the lint's words.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Optional, Sequence

from skiplint import checks, config, engine, parsing, pipes, prefilter, rules, sources
from skiplint.facts import Composition, Layer, ModelFacts, ModuleFacts, SkipRoute
from skiplint.rules.composition import REPOP_WITHOUT_NAMESPACE, STASH_NEVER_POPPED
from skiplint.session import Session

#: 1: no composition found, or a balance that leaves layers in no partition (the pipe would fail).
EXIT_OK, EXIT_NOT_FOUND, EXIT_UNCHECKED = 0, 1, 2
EXIT_BAD_BALANCE = 1
_PIPE_KINDS = ("GPipe", "FairscalePipe", "TorchPipe", "inspect_skip_layout")


@dataclass(frozen=True)
class Model:
    """A composition to draw, with the pipe (and balance) it is given to, if any."""

    name: str
    composition: Composition
    pipe: Optional[str] = None
    balance: Optional[tuple[int, ...]] = None
    #: The line of the pipe call (for a pipe) or of the composition.
    line: str = ""
    #: Whether verify_skippables may run on it (a pipe, verify_skippables, or it leaves the module),
    #: as the lint decides where a stash nobody pops is reported (SKP202).
    verified: bool = False


def label_namespaces(entries: Iterable[tuple[Hashable, str, Optional[int]]]) -> dict[Hashable, Optional[str]]:
    """Labels for namespaces: None for the default (None), else ns1, ns2, ... by first stash.

    `entries` are (namespace, name, stashing layer index); works for static namespace numbers and
    for live `Namespace` objects alike.
    """
    labels: dict[Hashable, Optional[str]] = {}
    ordered = sorted(entries, key=lambda e: (e[2] if e[2] is not None else 1 << 30, e[1]))
    count = 0
    for ns, _, _ in ordered:
        if ns is None:
            labels[None] = None
        elif ns not in labels:
            count += 1
            labels[ns] = f"ns{count}"
    return labels


def namespace_name(ns: Optional[int], composition: Composition) -> Optional[str]:
    """How the source refers to namespace number `ns` (`ns2`, `namespaces[1]`, `Namespace() of
    line 7`), None for the default namespace: what the picture and the JSON name a skip's namespace by."""
    if ns is None:
        return None
    return dict(composition.namespaces).get(ns, f"#{ns}")


def drawn_routes(composition: Composition, balance: Optional[Sequence[int]] = None) -> list[SkipRoute]:
    """Every pop with the stash whose tensor it takes at run time (`pipes.pops`), by popping layer:
    for a composition that verify_skippables accepts, inspect_skip_layout's routes; where a name is
    reused without a namespace the runtime refuses the pipe, and a plain run does what is drawn."""
    return pipes.by_pop(pipes.pops(composition, balance))


def lint_notes(model: Model) -> list[str]:
    """What the lint reports about the composition (SKP2xx: its codes and words), then each stash
    that no later layer pops where the lint does not report it (a plain run tolerates it; SKP202
    is reported where verify_skippables may run)."""
    composition = model.composition
    found = list(checks.composition_findings(composition, verified=model.verified))
    out = [rules.RULES[f.code].format(**dict(f.args)) for f in found]
    reported = {(f.arg("layer"), f.arg("name")) for f in found if f.code == STASH_NEVER_POPPED.code}
    repops = {(f.arg("meant_for"), f.arg("name")): f for f in found if f.code == REPOP_WITHOUT_NAMESPACE.code}
    if unresolved(composition) is None:
        layers = {layer.index: layer for layer in composition.layers}
        for key, index in pipes.unpopped(composition):
            text = pipes.layer_text(layers[index])
            if (text, key[1]) not in reported:
                repop = repops.get((text, key[1]))
                instead = f"; layer {repop.arg('layer')} pops {repop.arg('skip')} instead" if repop is not None else ""
                out.append(STASH_NEVER_POPPED.text(layer=text, skip=pipes.skip_text(key, composition), instead=instead))
    return out


def _row(route: SkipRoute, labels: dict[Hashable, Optional[str]]) -> dict[str, Any]:
    return {"ns": labels.get(route.ns), "name": route.name, "stash_layer": route.stash_layer,
            "pop_layer": route.pop_layer, "stash_partition": route.stash_partition,
            "pop_partition": route.pop_partition}


def models(facts: ModelFacts, wanted: Optional[str] = None) -> list[Model]:
    """The compositions worth drawing (those given to pipes first), or the one named `wanted`."""
    out: list[Model] = []
    covered: set[int] = set()
    verified = pipes.verified(facts)
    for pipe in facts.pipes:
        if pipe.kind in _PIPE_KINDS and pipe.composition is not None:
            line = str(pipe.site.position[0]) if pipe.site is not None else _line(pipe.composition)
            out.append(Model(pipe.name, pipe.composition, pipe.kind, pipe.balance, line,
                             id(pipe.composition) in verified))
            covered.add(id(pipe.composition))
    for composition in facts.compositions:
        if id(composition) in covered:
            continue
        if wanted is None and composition.complete and not pipes.has_skippables(composition) and all(
                layer.kind != "unknown" for layer in composition.layers):
            continue
        out.append(Model(composition.name, composition, line=_line(composition),
                         verified=id(composition) in verified))
    if wanted is not None:
        out = [m for m in out if wanted in (m.name, m.composition.name, m.line, _line(m.composition),
                                            *m.composition.factories)]
    return out


#: How many names a "no composition named" message lists.
_LISTED = 12


def names(facts: ModelFacts) -> list[str]:
    """The names that pick a composition or pipe of a file (`PATH:NAME`), sorted: the functions that
    return one (as verify names a factory), else the variable, class or builder call it is known by;
    and the pipes' names."""
    found = {pipe.name for pipe in facts.pipes if pipe.kind in _PIPE_KINDS and pipe.composition is not None}
    for composition in facts.compositions:
        found.update(composition.factories or (composition.name,))
    return sorted(found, key=lambda n: (n.lower(), n))


def not_found(path: str, name: str, facts: ModelFacts) -> str:
    """The one line for a NAME that picks nothing in `path`, with the names it has."""
    have = names(facts)
    listed = ", ".join(have[:_LISTED]) + (", ..." if len(have) > _LISTED else "")
    return f"{path}: no composition named {name!r}" + (f"; it has: {listed}" if have else
                                                        "; it has no composition that skiplint can list")


def _line(composition: Composition) -> str:
    return str(composition.site.position[0]) if composition.site is not None else ""


def load(path: str, settings: Optional[config.Config] = None) -> ModelFacts:
    """The composition facts of one file (read whatever the prefilter would say), analysed with
    the project's configuration for it (api-aliases, max-unroll) as the lint reads it."""
    return _load(path, settings)[1]


def _load(path: str, settings: Optional[config.Config] = None,
          session: Optional[Session] = None) -> tuple[ModuleFacts, ModelFacts]:
    if settings is None:
        settings = config.Finder().for_file(path)
    text = sources.decode(sources.read_bytes(path))
    session = (session if session is not None else Session()).configured(settings.api_aliases)
    both = engine.analyze_models(text, path, prefiltered=True, max_unroll=settings.max_unroll, session=session)
    assert both is not None
    return both


def route_table(path: str, name: Optional[str] = None,
                balance: Optional[Sequence[int]] = None) -> list[dict[str, Any]]:
    """The static route table of the composition (or pipe) `name` in `path` (the first one if
    None) for `balance` (the pipe's own if None): what the runtime companion compares with
    `inspect_skip_layout`. Raises LookupError when there is no such model, ValueError when its
    skips cannot be resolved."""
    found = models(load(path), name)
    if not found:
        raise LookupError(f"no composition named {name!r} in {path}" if name else f"no composition in {path}")
    model = found[0]
    problem = unresolved(model.composition)
    if problem is not None:
        raise ValueError(problem)
    routes = drawn_routes(model.composition, balance if balance is not None else model.balance)
    labels = label_namespaces((r.ns, r.name, r.stash_layer) for r in routes)
    return [_row(r, labels) for r in routes]


def unresolved(composition: Composition) -> Optional[str]:
    """Why a composition's skips cannot be resolved, or None."""
    for layer in composition.layers:
        if layer.kind == "unknown":
            return f"layer {pipes.layer_text(layer)} cannot be known statically"
    if not composition.complete:
        return f"its children cannot all be listed: {composition.unknown or 'unknown'}"
    if pipes.hides_skippables(composition):
        nested = [layer for layer in composition.layers if layer.kind == "container" and layer.nested]
        return (f"child {pipes.layer_text(nested[0])} holds skippable layers that verify_skippables "
                "and inspect_skip_layout do not see")
    return None


# -- renderers ----------------------------------------------------------------------------------

def _partition_of(balance: Optional[Sequence[int]], count: int) -> list[Optional[int]]:
    part: list[Optional[int]] = list(pipes.partitions(balance)) if balance is not None else []
    return (part + [None] * count)[:count]


def render_json(path: str, model: Model, balance: Optional[Sequence[int]]) -> dict[str, Any]:
    composition = model.composition
    problem = unresolved(composition)
    part = _partition_of(balance, len(composition.layers))
    found = drawn_routes(composition, balance) if problem is None else []
    rows = [dict(_row(r, {}), ns=namespace_name(r.ns, composition),
                 crosses=r.stash_partition != r.pop_partition if r.stash_partition is not None else None)
            for r in found]
    return {
        "path": path, "name": model.name, "pipe": model.pipe,
        "balance": list(balance) if balance is not None else None,
        "layers": [{"index": layer.index, "key": layer.key, "label": layer.label, "kind": layer.kind,
                    "partition": part[layer.index]} for layer in composition.layers],
        "routes": rows,
        "unresolved": problem,
        "balance_problem": balance_problem(balance, len(composition.layers)),
        "notes": lint_notes(model),
    }


def _lanes(found: list[SkipRoute]) -> list[int]:
    """A column per arc, reusing a column once its arc has ended (interval colouring)."""
    ends: list[int] = []
    lanes: list[int] = []
    for route in found:
        start = route.stash_layer if route.stash_layer is not None else route.pop_layer or 0
        for lane, end in enumerate(ends):
            if end < start:
                ends[lane] = route.pop_layer or start
                lanes.append(lane)
                break
        else:
            ends.append(route.pop_layer or start)
            lanes.append(len(ends) - 1)
    return lanes


def render_text(path: str, model: Model, balance: Optional[Sequence[int]]) -> str:
    composition = model.composition
    header = f"{model.name}  ({path}:{model.line or _line(composition)})"
    if model.pipe:
        header += f"  {model.pipe}"
    if balance is not None:
        header += f"  balance={list(balance)}"
    lines = [header]
    mismatch = balance_problem(balance, len(composition.layers))
    if mismatch is not None:
        lines.append(f"  {mismatch}")
    problem = unresolved(composition)
    if problem is not None:
        lines.append(f"  skips cannot be resolved: {problem}")
    found = sorted((r for r in drawn_routes(composition, balance) if r.stash_layer is not None) if problem is None
                   else [], key=lambda r: (r.stash_layer or 0, r.pop_layer or 0))
    lanes = _lanes(found)
    width = max(lanes, default=-1) + 1
    part = _partition_of(balance, len(composition.layers))

    def shown(layer: Layer) -> str:
        return layer.label if layer.key == str(layer.index) else f"{layer.key!r} {layer.label}"

    def skip_name(route: SkipRoute) -> str:
        ns = namespace_name(route.ns, composition)
        return repr(route.name) + (f" @{ns}" if ns is not None else "")

    def through(index: int) -> set[int]:
        """The lanes of the arcs that reach past the row above `index`."""
        return {lanes[k] for k, r in enumerate(found) if (r.stash_layer or 0) < index <= (r.pop_layer or 0)}

    label_width = max((len(shown(layer)) for layer in composition.layers), default=5)
    if balance is not None:  # wide enough for the partition titles; their lanes line up with the rows'
        label_width = max([label_width, *(len(f"  ──── {_partition_name(p)} ") - 8 for p in set(part))])
    previous: Optional[int] = -1
    for layer in composition.layers:
        p = part[layer.index]
        if balance is not None and p != previous:
            title = f"  ──── {_partition_name(p)} "
            crossing = through(layer.index)
            cells = "".join("│" if lane in crossing else "─" for lane in range(width))
            lines.append(title + "─" * (label_width + 10 - len(title)) + "  " + cells)
            previous = p
        row = ["│" if lane in through(layer.index) else " " for lane in range(width)]
        notes = []
        for k, route in enumerate(found):
            if route.stash_layer == layer.index:
                row[lanes[k]] = "┬"
                notes.append(f"stash {skip_name(route)} → layer {route.pop_layer}")
            elif route.pop_layer == layer.index:
                row[lanes[k]] = "┴"
                crossing_note = ""
                if route.stash_partition is not None and route.stash_partition != route.pop_partition:
                    target = route.pop_partition if route.pop_partition is not None else "no partition"
                    crossing_note = f"  [crosses partition {route.stash_partition} → {target}]"
                notes.append(f"pop {skip_name(route)} ← layer {route.stash_layer}{crossing_note}")
        if layer.kind == "unknown":
            notes.append("? cannot be known")
        elif layer.kind == "container" and layer.nested:
            notes.append("contains skippable layers (invisible to the pipe)")
        where = f"{p:>2}" if p is not None else "  "
        lines.append(f"  {where} {layer.index:>3}  {shown(layer):<{label_width}}  {''.join(row)}  "
                     f"{'; '.join(notes)}".rstrip())
    if not composition.complete and composition.unknown:
        lines.append(f"  ...  {composition.unknown}")
    lines.extend(f"  note: {note}" for note in lint_notes(model))
    return "\n".join(lines)


def _partition_name(partition: Optional[int]) -> str:
    return f"partition {partition}" if partition is not None else "in no partition"


def balance_problem(balance: Optional[Sequence[int]], count: int) -> Optional[str]:
    """Why a balance cannot partition `count` layers (the pipe would refuse it), or None."""
    if balance is None or sum(balance) == count:
        return None
    total = sum(balance)
    if total < count:
        which = f"layer {total} is" if total == count - 1 else f"layers {total}-{count - 1} are"
        return (f"balance sums to {total} but the composition has {count} layers: {which} in no "
                f"partition, and the pipe would fail")
    return f"balance sums to {total} but the composition has {count} layers: the pipe would fail"


def render_graph(path: str, model: Model, balance: Optional[Sequence[int]], dot: bool) -> str:
    """The layers (clustered by partition) and skip arcs as Graphviz dot, else as a Mermaid flowchart."""
    data = render_json(path, model, balance)
    out = [f"digraph {json.dumps(model.name)} {{", "  rankdir=TB;", "  node [shape=box];"] if dot else ["flowchart TD"]
    groups: dict[Optional[int], list[dict[str, Any]]] = {}
    for layer in data["layers"]:
        groups.setdefault(layer["partition"], []).append(layer)
    for partition, layers in groups.items():
        if partition is not None:
            out += ([f"  subgraph cluster_{partition} {{", f"    label=\"partition {partition}\";"] if dot
                    else [f"  subgraph P{partition} [\"partition {partition}\"]"])
        for layer in layers:
            text = f"{layer['index']}: {layer['label']}"
            if dot:
                indent = "    " if partition is not None else "  "
                out.append(f"{indent}L{layer['index']} [label={json.dumps(text)}];")
            else:
                text = text.replace('"', "'")
                out.append(f"    L{layer['index']}[\"{text}\"]")
        if partition is not None:
            out.append("  }" if dot else "  end")
    for a, b in zip(data["layers"], data["layers"][1:]):
        out.append(f"  L{a['index']} -> L{b['index']};" if dot else f"  L{a['index']} --> L{b['index']}")
    for row in data["routes"]:
        if row["stash_layer"] is None:
            continue
        label = row["name"] + (f" ({row['ns']})" if row["ns"] else "")
        if dot:
            extra = ", color=red, penwidth=2" if row["crosses"] else ""
            out.append(f"  L{row['stash_layer']} -> L{row['pop_layer']} "
                       f"[label={json.dumps(label)}, style=dashed, constraint=false{extra}];")
        else:
            arrow = f"== \"{label} (crosses)\" ==>" if row["crosses"] else f"-. \"{label}\" .->"
            out.append(f"  L{row['stash_layer']} {arrow} L{row['pop_layer']}")
    return "\n".join(out + ["}"] if dot else out)


# -- the command --------------------------------------------------------------------------------

def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiplint layout",
        description="Draw each composition's layers, partitions and skip arcs (no code is run). "
                    "The project's configuration (api-aliases, max-unroll) applies as in the lint.",
        epilog="Exit status: 0 drawn, 1 no composition found or a balance that does not cover the "
               "layers exactly (the pipe would fail), 2 a file could not be read or a model's "
               "skips cannot be resolved.")
    p.add_argument("targets", nargs="+", metavar="PATH[:NAME]",
                   help="Python files or directories (every composition with skippable layers of "
                        "every file); NAME picks one composition or pipe of a file (a variable, "
                        "class or function name, or the line of its call); a function that returns "
                        "the model, alone or as (model, sample), is named as skiplint verify names it")
    p.add_argument("--balance", default=None, metavar="N,N,...",
                   help="layers per partition, positive integers (default: the balance given to "
                        "the pipe, if literal)")
    p.add_argument("--format", choices=("text", "json", "dot", "mermaid"), default="text",
                   help="text: the picture (default); json: layers, partitions and the route "
                        "table; dot: Graphviz; mermaid: a Mermaid flowchart")
    return p


def _split_target(target: str) -> tuple[str, Optional[str]]:
    path, sep, name = target.rpartition(":")
    if sep and path and not name.startswith(("\\", "/")) and name:
        return path, name
    return target, None


def parse_balance(text: str) -> tuple[int, ...]:
    """`N,N,...` as layers per partition; ValueError with the one-line reason otherwise."""
    words = [w for w in text.replace(" ", "").split(",") if w]
    if not words or not all(w.isdigit() and w.isascii() for w in words) or any(int(w) < 1 for w in words):
        raise ValueError(f"--balance wants positive integers separated by commas, not {text!r}")
    return tuple(int(w) for w in words)


def _files(targets: Sequence[str], session: Session) -> list[tuple[str, Optional[str], bool]]:
    """(file, NAME or None, named on the command line) for every target; directories expanded
    to their Python files that may use the API (as the lint discovers them)."""
    finder = config.Finder()
    out: list[tuple[str, Optional[str], bool]] = []
    for target in targets:
        path, name = _split_target(target)
        if name is None and os.path.isdir(path):
            for found, settings in finder.discover([path]):
                own = session.configured(settings.api_aliases)
                try:
                    if prefilter.wanted(sources.read_bytes(found), found, own):
                        out.append((found, None, False))
                except sources.SourceError:
                    out.append((found, None, False))
        else:
            out.append((path, name, True))
    return out


def _draw(form: str, path: str, model: Any, balance: Optional[tuple[int, ...]]) -> tuple[Any, int]:
    """One model drawn in `form`, and the exit status it calls for."""
    use = balance if balance is not None else model.balance
    status = EXIT_OK
    if unresolved(model.composition) is not None:
        status = EXIT_UNCHECKED
    elif balance_problem(use, len(model.composition.layers)) is not None:
        status = EXIT_BAD_BALANCE
    if form == "json":
        return render_json(path, model, use), status
    if form == "text":
        return render_text(path, model, use), status
    return render_graph(path, model, use, dot=form == "dot"), status


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    balance: Optional[tuple[int, ...]] = None
    if args.balance is not None:
        try:
            balance = parse_balance(args.balance)
        except ValueError as error:
            print(f"skiplint layout: {error}", file=sys.stderr)
            return EXIT_UNCHECKED
    chunks: list[Any] = []
    status = EXIT_OK
    session = Session()  # this command's
    for path, name, named in _files(args.targets, session):
        try:
            module, facts = _load(path, session=session)
            found = models(facts, name)
            drawn = [_draw(args.format, path, model, balance) for model in found]
        except (sources.SourceError, parsing.ParseFailure) as error:
            print(f"{path}: cannot read: {error}", file=sys.stderr)
            status = EXIT_UNCHECKED
            continue
        except Exception as error:  # an analyzer bug: one line, as the lint's SKP902, never a traceback
            if os.environ.get("SKIPLINT_DEBUG"):
                raise
            print(f"{path}: {prefilter.internal_error(path, 'this file', error).diagnostics[0].message}",
                  file=sys.stderr)
            status = EXIT_UNCHECKED
            continue
        if module.bug is not None:  # the compositions could not be analysed: what is drawn may be partial
            print(f"{path}: {prefilter.analyzer_bug(path, module.bug).error}", file=sys.stderr)
            status = EXIT_UNCHECKED
        if not found:
            if named:
                print(not_found(path, name, facts) if name else f"{path}: no composition with skippable layers",
                      file=sys.stderr)
                status = max(status, EXIT_NOT_FOUND)
            continue
        for chunk, model_status in drawn:
            chunks.append(chunk)
            status = max(status, model_status)
    if not chunks and status == EXIT_OK:
        print("skiplint layout: no composition with skippable layers", file=sys.stderr)
        return EXIT_NOT_FOUND
    if args.format == "json":
        print(json.dumps(chunks, indent=2))
    elif chunks:
        print("\n\n".join(chunks))
    return status
