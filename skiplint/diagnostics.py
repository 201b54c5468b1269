"""A reported diagnostic: what every reporter prints and every test compares."""

from __future__ import annotations

from dataclasses import dataclass


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
