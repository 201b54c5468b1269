"""The static skip map for the run's composition and balance (skiplint.pipes.routes), to compare
with the runtime SkipLayout: the table of the composition the target builds, from the static pass's
own analysis (skiplint.runtime.static)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from skiplint.runtime.report import Route
from skiplint.runtime.static import matches_children

if TYPE_CHECKING:
    from skiplint.facts import Composition


def _table(composition: Composition, balance: tuple[int, ...]) -> list[Route]:
    from skiplint import pipes

    key_of: dict[Optional[int], str] = {layer.index: layer.key for layer in composition.layers}
    table = [Route(r.name, key_of.get(r.stash_layer, "?"), key_of.get(r.pop_layer, "?"),
                   -1 if r.stash_partition is None else r.stash_partition,
                   -1 if r.pop_partition is None else r.pop_partition)
             for r in pipes.routes(composition, balance)]
    return sorted(table, key=str)


def static_routes(own: list[Composition], every: list[Composition], children: list[tuple[str, str, bool]],
                  balance: tuple[int, ...]) -> tuple[Optional[list[Route]], str]:
    """(routes, "") from the static route table, or (None, why they could not be compared).

    `own` are the compositions the target builds, `every` all those of the model's source files;
    the table is that of the target's compositions whose children are the live model's, or, when
    none is, of any composition of the files whose children are. `children` is (child name, class
    name, is skippable) for each direct child of the live model.
    """
    found = [c for c in own if matches_children(c, children)]
    if not found:
        found = [c for c in every if matches_children(c, children)]
    if not found:
        return None, "not compared: no composition in the source files matches the model's children"
    tables = [_table(composition, balance) for composition in found]
    if any(t != tables[0] for t in tables[1:]):
        return None, f"not compared: {len(found)} compositions match the model and their routes differ"
    return tables[0], ""
