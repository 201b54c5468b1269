"""A reported diagnostic and a file's result: what every reporter prints and every test compares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from skiplint import rules


@dataclass(frozen=True, order=True)
class Diagnostic:
    path: str
    #: 1-based line of the reported node's first token.
    line: int
    #: 0-based column (flake8 adds 1 when it prints; so does the text reporter).
    col: int
    code: str
    #: The whole message, starting with the code.
    message: str


@dataclass(frozen=True)
class FileResult:
    """What checking one file gave: its diagnostics, and why it could not be checked (if so)."""

    path: str
    diagnostics: tuple[Diagnostic, ...]
    #: Why the file could not be checked (also reported as SKP900 or SKP902), or None.
    error: Optional[str] = None


@dataclass(frozen=True)
class Selection:
    """Which codes are reported: flake8's --select/--ignore/--extend-select, by prefix."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()

    def __call__(self, code: str) -> bool:
        return rules.selected(code, self.select, self.ignore, self.extend_select)


def error_text(error: BaseException) -> str:
    """`Type: first line of the message`, as SKP902 shows an analyzer bug (one line, always)."""
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
