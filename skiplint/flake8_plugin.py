"""The flake8 plugin: the same engine and findings as the CLI, under codes SKP.

Loading the plugin costs flake8 almost nothing: the engine (and libcst) is imported only when a
file passes the prefilter, and the rules package only then too (the codes flake8 needs when the
plugin loads come from the table skiplint/rules/codes.txt, see `config.code_table`). Analysis
settings (api-aliases, max-unroll) come from the project's skiplint configuration nearest to the
checked file, as the CLI reads it, with flake8's own `--skiplint-*` options overriding; which codes
are reported (select, ignore, per-file-ignores, noqa) is flake8's business.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

from skiplint import __version__, config, filenoqa, prefilter, sources
from skiplint.session import Session

if TYPE_CHECKING:
    from skiplint.diagnostics import FileResult


class SkiplintChecker:
    """flake8 picks the source up from `lines`; `tree` must be accepted for flake8 to load us."""

    name = "skiplint"
    version = __version__

    def __init__(self, tree: Any, lines: Sequence[str], filename: str = "stdin") -> None:
        self.lines = lines
        self.filename = filename

    #: Settings from flake8's own configuration and command line (see parse_options): they
    #: override the project's skiplint configuration.
    overrides: dict[str, Any] = {}
    #: The project's configuration of each file, read once per directory in each process.
    finder: Optional[config.Finder] = None
    #: The analysis session of this flake8 process (its project walk and index, its parsed
    #: statements), made when flake8 hands the plugin its options (see parse_options).
    session: Optional[Session] = None
    #: What the plugin reports: every code, opt-in ones only when named in full in flake8's
    #: --select/--extend-select (so `flake8 --select SKP` reports what `skiplint` reports); () for
    #: every code. Kept as codes: the engine's Selection is built only for a file that needs it.
    selected_codes: tuple[str, ...] = ()
    #: The name flake8 gives the source it reads from standard input (--stdin-display-name).
    stdin_name: str = "stdin"

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        # Opt-in codes are off unless selected, as flake8-bugbear's B9.
        option_manager.extend_default_ignore(sorted(config.code_table()[1]))
        option_manager.add_option(
            "--skiplint-api-aliases", default="", parse_from_config=True, metavar="ALIAS=API,...",
            help="a project's re-exports of the skip API, e.g. "
                 "'mypkg.layers.skippable = torchgpipe.skip.skippable' (comma or newline separated); "
                 "overrides api-aliases of the project's skiplint configuration")
        option_manager.add_option(
            "--skiplint-max-unroll", default=None, parse_from_config=True, metavar="N",
            help="how many iterations of a constant-range loop the composition analysis unrolls; "
                 "overrides max-unroll of the project's skiplint configuration")

    @classmethod
    def parse_options(cls, options: Any) -> None:
        values = {}
        if getattr(options, "skiplint_api_aliases", ""):
            values["api-aliases"] = options.skiplint_api_aliases
        if getattr(options, "skiplint_max_unroll", None) not in (None, ""):
            values["max-unroll"] = options.skiplint_max_unroll
        settings, problems = config.config_from_values(values, "flake8 configuration", "flake8", ".")
        for problem in problems:
            print(str(problem).replace("[flake8] ", "[flake8] skiplint-"), file=sys.stderr)
        cls.overrides = {}
        if "api-aliases" in values:
            cls.overrides["api_aliases"] = settings.api_aliases
        if "max-unroll" in values:
            cls.overrides["max_unroll"] = settings.max_unroll
        cls.finder = None
        cls.session = Session()
        cls.stdin_name = getattr(options, "stdin_display_name", None) or "stdin"
        named = {code.strip() for option in ("select", "extend_select")
                 for code in (getattr(options, option, None) or ())}
        codes, opt_in = config.code_table()
        cls.selected_codes = tuple(code for code in codes if code not in opt_in or code in named)

    @classmethod
    def settings_for(cls, filename: str) -> config.Config:
        """The analysis settings of one file: its project's configuration, then flake8's options."""
        if cls.finder is None:
            cls.finder = config.Finder(overrides=cls.overrides)
        if filename in ("stdin", "-"):
            return cls.finder.for_directory(os.curdir)
        return cls.finder.for_file(filename)

    def size(self, text: str) -> int:
        """The bytes of the source, as the CLI counts them: the file's size on disk (flake8 hands
        the plugin decoded lines, CR LF read as LF), or, for standard input, the text's UTF-8."""
        if self.filename not in (self.stdin_name, "stdin", "-"):
            try:
                info = os.stat(self.filename)
                if stat.S_ISREG(info.st_mode):
                    return info.st_size
            except (OSError, ValueError):
                pass
        return len(text.encode("utf-8", "surrogatepass"))

    def refused_file(self, text: str) -> Optional[FileResult]:
        """The CLI's SKP900 for a file it cannot decode, or None. flake8 reads a file that its
        declared encoding (or UTF-8) cannot decode as latin-1, so `text` may read where the CLI,
        as Python, refuses the file (a `# coding: utf-16` cookie on ASCII lines, bytes that are
        not UTF-8): such a file, ASCII with a cookie or not ASCII, is judged from its bytes as
        the CLI judges it. Python refusing `text` too is flake8's E999, not repeated here."""
        if self.filename in (self.stdin_name, "stdin", "-"):
            return None
        if text.isascii() and "coding" not in "".join(self.lines[:2]):
            return None
        try:
            data = sources.read_bytes(self.filename)
        except sources.SourceError:
            return None
        verdict = prefilter.judge(data, self.filename)
        if isinstance(verdict, str) or verdict.error is None or not _python_accepts(text):
            return None
        return verdict

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        text = "".join(self.lines)
        too_large = sources.too_large(self.size(text))
        if too_large is not None:  # the CLI's finding, word for word: same file, same SKP900
            for diagnostic in prefilter.unchecked(self.filename, too_large).diagnostics:
                yield diagnostic.line, diagnostic.col, diagnostic.message, type(self)
            return
        settings = self.settings_for(self.filename)
        cls = type(self)
        if cls.session is None:  # flake8 always gives the options first; a direct caller may not
            cls.session = Session()
        session = cls.session.configured(settings.api_aliases)
        try:
            refused = self.refused_file(text)
            if refused is not None:
                for diagnostic in refused.diagnostics:
                    yield diagnostic.line, diagnostic.col, diagnostic.message, type(self)
                return
            if not prefilter.wanted(text, self.filename, session):
                return
            if filenoqa.skips_file(text, flake8=False):
                return  # `# skiplint: noqa` (flake8 reads its own `# flake8: noqa`)
            from skiplint import engine
            from skiplint.rules import Selection, analyzer

            selection = Selection(select=self.selected_codes)
            result = engine.check_text(text, self.filename, selection, apply_noqa=False, prefiltered=True,
                                       max_unroll=settings.max_unroll, session=session)
        except Exception as error:  # an analyzer bug: shown, never silent
            if os.environ.get("SKIPLINT_DEBUG"):
                raise
            for diagnostic in prefilter.internal_error(self.filename, "this file", error).diagnostics:
                yield diagnostic.line, diagnostic.col, diagnostic.message, type(self)
            return
        for diagnostic in result.diagnostics:
            if diagnostic.code == analyzer.UNCHECKED_FILE.code and not _python_accepts(text):
                continue  # flake8 reports what Python cannot compile itself (E999); the rest is ours to say
            yield diagnostic.line, diagnostic.col, diagnostic.message, type(self)


def _python_accepts(text: str) -> bool:
    """Whether the running Python compiles `text` (flake8 shows E999 for what it does not)."""
    from skiplint.parsing import python_syntax_error

    return python_syntax_error(text) is None
