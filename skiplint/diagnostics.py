"""A reported diagnostic: what every reporter prints and every test compares."""

from __future__ import annotations

from dataclasses import dataclass, field


def shown(value: str) -> str:
    """`value` with every character that is not printable written as repr writes it (`\\n`,
    `\\x1b`, `\\u2028`, `\\udcff`): one line of valid Unicode, whatever it held, so that a skip
    name or path can neither forge another line of output nor fail to encode."""
    if value.isprintable():
        return value
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in value)


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
    #: Line and 0-based column just after the reported node's last token; 0 when not known
    #: (then the end is the start). Not compared: a diagnostic is identified by where it starts.
    end_line: int = field(default=0, compare=False)
    end_col: int = field(default=0, compare=False)

    @property
    def end(self) -> tuple[int, int]:
        """(end line, end column), the start when the end is not known."""
        return (self.end_line, self.end_col) if self.end_line else (self.line, self.col)
