"""The static skip map for the run's composition and balance, when the static layout exists."""

from __future__ import annotations

import importlib
from typing import Any, Optional

from skiplint.runtime.report import Route, StaticFinding


def static_routes(runner: Any, static: list[StaticFinding]) -> tuple[Optional[list[Route]], str]:
    """(routes, "") from the static route table, or (None, why it could not be compared)."""
    try:
        layout = importlib.import_module("skiplint.layout")
    except ImportError:
        return None, "not compared: this skiplint has no static layout module"
    table = getattr(layout, "route_table", None)
    if table is None:
        return None, "not compared: skiplint.layout has no route table"
    return None, "not compared"
