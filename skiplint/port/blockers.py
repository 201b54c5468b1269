"""What blocks a port, said before anything runs: the findings of the opt-in SKP5xx family
(skiplint.rules.port) in the target's file, in the words of the rules."""

from __future__ import annotations

from skiplint.runtime.options import is_file_target, split_target

#: The rules whose findings block a port: the SKP5xx family.
FAMILY = "SKP5"


def static(target: str) -> list[str]:
    """The SKP5xx findings of the target's file, one `path:line:col: SKPnnn message` line each
    (noqa comments apply); [] for a module target, whose file is not named."""
    from skiplint import engine, rules

    where, _ = split_target(target)
    if not is_file_target(where):
        return []
    codes = tuple(code for code in rules.RULES if code.startswith(FAMILY))
    result = engine.check_file(where, engine.Selection(select=codes))
    return [f"{d.path}:{d.line}:{d.col + 1}: {d.message}" for d in result.diagnostics if d.code.startswith(FAMILY)]
