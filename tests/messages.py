"""A finding as tests outside the rule examples name it: by its code and arguments, rendered by
the rule itself, never by a copy of its message text (a message changes in one place, the rule,
and in the snapshots of its examples)."""

from __future__ import annotations

from skiplint import rules


def said(code: str, **args: str) -> str:
    """The message a diagnostic of `code` with these arguments carries, its code first."""
    return rules.RULES[code].format(**args)


def printed(path: str, row: int, col: int, code: str, **args: str) -> str:
    """The line the CLI (and flake8) prints for it: `path:row:col: CODE message`, col 1-based."""
    return f"{path}:{row}:{col}: {said(code, **args)}"
