"""The flake8 plugin: the same engine and findings as the CLI, under codes SKP."""

from __future__ import annotations

import inspect
import sys
from typing import Any, Iterator, Sequence

from skiplint import __version__, engine, imports, rules


class SkiplintChecker:
    """flake8 picks the source up from `lines`; `tree` must be accepted for flake8 to load us."""

    name = "skiplint"
    version = __version__

    def __init__(self, tree: Any, lines: Sequence[str], filename: str = "stdin") -> None:
        self.lines = lines
        self.filename = filename

    #: Settings from flake8's configuration (see parse_options); select/ignore/exclude and
    #: per-file-ignores are flake8's own options.
    api_aliases: tuple[tuple[str, str], ...] = ()
    max_unroll: Any = None

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        # Opt-in codes are off unless selected, as flake8-bugbear's B9.
        option_manager.extend_default_ignore(sorted(rules.OPT_IN))
        option_manager.add_option(
            "--skiplint-api-aliases", default="", parse_from_config=True, metavar="ALIAS=API,...",
            help="a project's re-exports of the skip API, e.g. "
                 "'mypkg.layers.skippable = torchgpipe.skip.skippable' (comma or newline separated)")
        option_manager.add_option(
            "--skiplint-max-unroll", default=None, parse_from_config=True, metavar="N",
            help="how many iterations of a constant-range loop the composition analysis unrolls")

    @classmethod
    def parse_options(cls, options: Any) -> None:
        from skiplint import config

        values = {}
        if getattr(options, "skiplint_api_aliases", ""):
            values["api-aliases"] = options.skiplint_api_aliases
        if getattr(options, "skiplint_max_unroll", None) not in (None, ""):
            values["max-unroll"] = options.skiplint_max_unroll
        settings, problems = config.config_from_values(values, "flake8 configuration", "flake8", ".")
        for problem in problems:
            print(str(problem).replace("[flake8] ", "[flake8] skiplint-"), file=sys.stderr)
        cls.api_aliases = settings.api_aliases
        cls.max_unroll = settings.max_unroll

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        with imports.using_aliases(self.api_aliases):
            if not engine.wanted(text, self.filename):
                return
            try:
                options = {"max_unroll": self.max_unroll} if self.max_unroll is not None and \
                    "max_unroll" in inspect.signature(engine.check_text).parameters else {}
                result = engine.check_text(text, self.filename, engine.EVERYTHING, apply_noqa=False, **options)
            except Exception:  # a linter never breaks the user's flake8 run
                return
        for diagnostic in result.diagnostics:
            if diagnostic.code == "SKP900":
                continue  # unparsable input is flake8's E999, not ours
            yield diagnostic.line, diagnostic.col, diagnostic.message, type(self)
