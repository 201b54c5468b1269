"""The flake8 plugin: the same engine and findings as the CLI, under codes SKP."""

from __future__ import annotations

import sys
from typing import Any, Iterator, Sequence

from skiplint import __version__, engine, imports, rules, sources


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
    #: What the plugin reports: every code, opt-in ones only when named in full in flake8's
    #: --select/--extend-select (so `flake8 --select SKP` reports what `skiplint` reports).
    selection: engine.Selection = engine.Selection()

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
        named = {code.strip() for option in ("select", "extend_select")
                 for code in (getattr(options, option, None) or ())}
        cls.selection = engine.Selection(select=tuple(
            code for code in rules.RULES if code not in rules.OPT_IN or code in named))

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        if len(text) > sources.MAX_BYTES:
            return  # the CLI reports SKP900 for it; flake8 has no such code to show, so: silence
        with imports.using_aliases(self.api_aliases):
            if not engine.wanted(text, self.filename):
                return
            try:
                result = engine.check_text(text, self.filename, self.selection, apply_noqa=False,
                                           max_unroll=self.max_unroll)
            except Exception:  # a linter never breaks the user's flake8 run
                return
        for diagnostic in result.diagnostics:
            if diagnostic.code == "SKP900":
                continue  # unparsable input is flake8's E999, not ours
            yield diagnostic.line, diagnostic.col, diagnostic.message, type(self)
