"""The guard's verdict on a text as the parse sees it: why it must not be given to libcst (one
line), or None (tests of the guard's limits, which the parse applies through guard.scan)."""

from __future__ import annotations

from typing import Optional

from skiplint import guard


def parser_hazard(text: str) -> Optional[str]:
    found = guard.scan(text)
    return None if isinstance(found, guard.Scanned) else found[0]
