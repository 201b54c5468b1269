"""`# noqa` and `# noqa: CODES` comments, read as flake8 reads them (CLI only: flake8 does its own)."""

from __future__ import annotations

import re
from typing import Optional

# As flake8 reads it: "# noqa" (one space, any case), optionally ":" and codes separated by commas
# or spaces. The codes themselves are compared case-sensitively, as flake8 compares them.
_NOQA = re.compile(r"# noqa(?::\s?(?P<codes>(?:[A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)


def suppressed_codes(line: str) -> Optional[tuple[str, ...]]:
    """None: no noqa; (): a bare noqa (everything); else the listed codes/prefixes."""
    if "noqa" not in line.lower():
        return None
    match = _NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return ()
    return tuple(c for c in re.split(r"[,\s]+", codes.strip()) if c)


def covers(codes: Optional[tuple[str, ...]], code: str) -> bool:
    """Whether a line's noqa (`suppressed_codes` of it) silences `code`."""
    if codes is None:
        return False
    return not codes or code.startswith(codes)
