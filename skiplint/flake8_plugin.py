"""The flake8 plugin: the same engine and findings as the CLI, under codes SKP."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from skiplint import __version__, engine, rules


class SkiplintChecker:
    """flake8 picks the source up from `lines`; `tree` must be accepted for flake8 to load us."""

    name = "skiplint"
    version = __version__

    def __init__(self, tree: Any, lines: Sequence[str], filename: str = "stdin") -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        # Opt-in codes are off unless selected, as flake8-bugbear's B9.
        option_manager.extend_default_ignore(sorted(rules.OPT_IN))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        if not engine.mentions_api(text):
            return
        try:
            result = engine.check_text(text, self.filename, engine.EVERYTHING, apply_noqa=False)
        except Exception:  # a linter never breaks the user's flake8 run
            return
        for diagnostic in result.diagnostics:
            if diagnostic.code == "SKP900":
                continue  # unparsable input is flake8's E999, not ours
            yield diagnostic.line, diagnostic.col, diagnostic.message, type(self)
