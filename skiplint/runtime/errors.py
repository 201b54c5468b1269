"""The one exception a run raises when it cannot happen: its message is the one line shown."""

from __future__ import annotations


class CannotRun(Exception):
    """The run could not happen (exit status 2); str() is the reason in one line."""
