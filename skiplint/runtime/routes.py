"""The static skip map for the run's composition and balance (skiplint.pipes.routes), to compare
with the runtime SkipLayout. Found by matching the live Sequential to a composition in its sources."""

from __future__ import annotations

import importlib
from typing import Any, Optional

from skiplint.runtime.report import Route


def _label_class(label: str) -> str:
    return label.split("(")[0].split(".")[-1].strip()


def _matches(composition: Any, children: list[tuple[str, str, bool]]) -> bool:
    """Same children, in order: names, and the class of every skippable one."""
    if not composition.complete or len(composition.layers) != len(children):
        return False
    for layer, (key, cls, skippable) in zip(composition.layers, children):
        if layer.key != key:
            return False
        if skippable and (layer.kind != "skippable" or _label_class(layer.label) != cls):
            return False
    return True


def static_routes(files: list[str], children: list[tuple[str, str, bool]],
                  balance: tuple[int, ...]) -> tuple[Optional[list[Route]], str]:
    """(routes, "") from the static route table, or (None, why they could not be compared).

    `children` is (child name, class name, is skippable) for each direct child of the live model.
    """
    try:
        engine = importlib.import_module("skiplint.engine")
        pipes = importlib.import_module("skiplint.pipes")
        analyze_models = engine.analyze_models
        routes_of = pipes.routes
    except (ImportError, AttributeError):
        return None, "not compared: this skiplint has no static route table"
    from skiplint import sources

    found: list[Any] = []
    for path in files:
        try:
            text = sources.decode(sources.read_bytes(path))
            both = analyze_models(text, path)
        except Exception:  # a file the static pass cannot read is reported by the static step
            continue
        if both is None:
            continue
        found.extend(c for c in both[1].compositions if _matches(c, children))
    if not found:
        return None, "not compared: no composition in the source files matches the model's children"
    tables = []
    for composition in found:
        key_of = {layer.index: layer.key for layer in composition.layers}
        table = [Route(r.name, key_of.get(r.stash_layer, "?"), key_of.get(r.pop_layer, "?"),
                       -1 if r.stash_partition is None else r.stash_partition,
                       -1 if r.pop_partition is None else r.pop_partition)
                 for r in routes_of(composition, balance)]
        tables.append(sorted(table, key=str))
    if any(t != tables[0] for t in tables[1:]):
        return None, f"not compared: {len(found)} compositions match the model and their routes differ"
    return tables[0], ""
