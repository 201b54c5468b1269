"""File-level suppression: `# flake8: noqa` and `# skiplint: noqa` on a line of their own.

flake8 skips a whole file when any physical line *starts* (after blanks) with `# flake8: noqa`
(any case, `:` or `=`, anything after it, codes included: flake8 5 to 7 read
`# flake8: noqa: E501` as the whole file's noqa too). After code on the same line it is not a
file-level noqa. The CLI honours the same comment, so both doors skip the same files, and
`# skiplint: noqa` (same shape) skips the file for skiplint alone (`skips_file(text, flake8=False)`
is the test for a flake8 plugin, flake8 handling its own comment). Lines end where Python's
tokenizer and flake8 end them (CR LF, CR, LF): after a form feed, U+2028 or another break that
`str.splitlines` knows, the line goes on, so `x = 1<form feed># flake8: noqa` is no file-level noqa.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from skiplint import sources

if TYPE_CHECKING:
    from skiplint.diagnostics import FileResult

_FLAKE8 = re.compile(r"\s*# flake8[:=]\s*noqa", re.IGNORECASE)
_SKIPLINT = re.compile(r"\s*# skiplint[:=]\s*noqa", re.IGNORECASE)


def skips_file(text: str, flake8: bool = True) -> bool:
    """Whether a line of `text` asks for the whole file not to be checked (by skiplint; with
    `flake8=False`, only `# skiplint: noqa` counts, flake8 handling its own)."""
    lowered = text.lower()
    if "noqa" not in lowered:
        return False
    wanted = []
    if "skiplint" in lowered:
        wanted.append(_SKIPLINT)
    if flake8 and "flake8" in lowered:
        wanted.append(_FLAKE8)
    return bool(wanted) and any(pattern.match(line) for line in sources.lines(text) for pattern in wanted)


def honoured(result: "FileResult", read: Callable[[str], str]) -> "FileResult":
    """The result of checking a file, or nothing when its text (`read(path)`, called only when there
    is something to drop; a SourceError drops nothing) asks for the whole file not to be checked."""
    if not result.diagnostics and result.error is None:
        return result
    try:
        skipped = skips_file(read(result.path))
    except sources.SourceError:
        return result
    from skiplint.diagnostics import FileResult

    return FileResult(result.path, ()) if skipped else result
