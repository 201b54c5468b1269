"""A reported diagnostic and a file's result: what every reporter prints and every test compares.

A Diagnostic is made only by the rules package (`skiplint.rules.base.diagnostic`), which imports
this module; which codes are reported is `skiplint.rules.Selection`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from skiplint.findings import Owner, argument


def without_code(code: str, message: str) -> str:
    """The message without its leading code, for the reports that carry the code in a field of
    their own (JSON, SARIF, GitHub's title, verify's JSON)."""
    prefix = code + " "
    return message[len(prefix):] if message.startswith(prefix) else message


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
    #: The rule's arguments, as the message was rendered from them (name -> text). Not compared.
    args: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    #: What the finding belongs to: its class, or the compositions it was found in. Not compared.
    owners: tuple[Owner, ...] = field(default=(), compare=False)

    def arg(self, name: str) -> Optional[str]:
        """One of the rule's arguments, or None when the rule has no such argument."""
        return argument(self.args, name)

    @property
    def end(self) -> tuple[int, int]:
        """(end line, end column), the start when the end is not known."""
        return (self.end_line, self.end_col) if self.end_line else (self.line, self.col)


@dataclass(frozen=True)
class FileResult:
    """What checking one file gave: its diagnostics, and why it could not be checked (if so)."""

    path: str
    diagnostics: tuple[Diagnostic, ...]
    #: Why the file could not be checked (also reported as SKP900 or SKP902), or None.
    error: Optional[str] = None


def error_text(error: BaseException) -> str:
    """`Type: first line of the message`, as SKP902 shows an analyzer bug (one line, always)."""
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
