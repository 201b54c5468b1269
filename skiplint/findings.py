"""A finding as the analysis makes it: its rule's code, its typed arguments, the node it is reported
at and what it belongs to. Nothing here reads libcst or the rule table, so every module can import it.

A finding keeps its structure to the end: the formats render its text (`Rule.format`), `fix`
edits from its arguments and node, and verify's join matches its arguments and owners. No module
reads a message back into what made it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

OwnerKind = Literal["class", "composition"]


@dataclass(frozen=True, order=True)
class Owner:
    """What a finding belongs to, as the join and verify's target need it: a @skippable class, or
    a composition (an nn.Sequential) with the module-level functions that return it."""

    kind: OwnerKind
    #: The class name; for a composition, how the source names it (a variable or the call's text).
    name: str
    #: 1-based line of the class statement or of the composition's expression (0: not known).
    line: int = 0
    #: For a composition: the module-level functions that return it (`skiplint verify FILE:NAME`).
    factories: tuple[str, ...] = ()


@dataclass(frozen=True)
class OwnerRef:
    """An owner before its line is known: the node it is read from (a `facts.Site`), located with
    the findings' own nodes in one pass (`engine`)."""

    kind: OwnerKind
    name: str
    site: Any = None
    factories: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """One finding: a rule's code, its arguments (name -> text, in the template's order), the node
    it is reported at (a `facts.Site`; None: the first line), and what it belongs to."""

    code: str
    args: tuple[tuple[str, str], ...]
    site: Optional[Any] = None
    #: Not compared: two findings of one code, place and arguments are one finding, whoever owns it.
    owners: tuple[OwnerRef, ...] = field(default=(), compare=False)

    def arg(self, name: str) -> Optional[str]:
        """One argument's value, or None when the rule has no such argument."""
        return argument(self.args, name)


@dataclass(frozen=True)
class At:
    """Where a file-level finding is reported when no node holds it: 1-based line, 0-based column."""

    line: int = 1
    col: int = 0


# -- facts about a file that was not (fully) checked: the rules of skiplint.rules.analyzer report them

@dataclass(frozen=True)
class Unchecked:
    """The file could not be checked (not readable, not decodable, not parsable, too big, its
    process died or ran too long): why, and where that shows."""

    reason: str
    line: int = 1
    col: int = 0


@dataclass(frozen=True)
class AnalyzerBug:
    """The analyzer failed while analysing `what` (the file, or a part of the analysis): its error."""

    what: str
    error: str


def argument(args: tuple[tuple[str, str], ...], name: str) -> Optional[str]:
    """The value of the argument `name` among a finding's (name, text) pairs, or None."""
    for key, value in args:
        if key == name:
            return value
    return None
