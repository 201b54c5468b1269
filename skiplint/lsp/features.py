"""What the language server computes, on the engine the CLI uses; nothing here imports pygls.

A document is checked as `skiplint - --stdin-display-name PATH` checks the bytes of a file that
holds its text: the configuration the CLI would find for PATH (select/ignore, per-file-ignores,
api-aliases, max-unroll), the standard input door's own function (`parallel.checked` with the
prefilter's verdict on those bytes), `# noqa` and the file-level noqa. Quick fixes are `skiplint
fix`'s edits under its never-worse test, the hover is the rule's text of `skiplint rule`, the
layout is `skiplint layout`'s drawing.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

from skiplint import config, edits, filenoqa, noqa, parallel, prefilter, rules, sources
from skiplint.diagnostics import Diagnostic, FileResult
from skiplint.rules import doc
from skiplint.rules.analyzer import INTERNAL_ERROR, UNCHECKED_FILE
from skiplint.session import Session

if TYPE_CHECKING:
    from skiplint import layout as layout_module
    from skiplint.facts import ModelFacts, Pipe, Site
    from skiplint.parsing import Memo

# The engine (libcst), the fixer and the layout are imported on first use, so that the server
# answers `initialize` before they are loaded.

#: The codes `skiplint fix` rewrites (as fix.FIXABLE), and where an SKP401 import may move.
FIXABLE = frozenset(code for code, rule in rules.RULES.items() if rule.fixer is not None)
TARGETS = tuple(edits.TARGETS)
#: The codes a line's `# noqa` does not silence: a file that could not be checked (SKP900), or
#: whose analysis met a bug (SKP902), is reported whatever its lines say.
UNSUPPRESSIBLE = frozenset({UNCHECKED_FILE.code, INTERNAL_ERROR.code})


def check(text: str, path: str, settings: config.Config, memo: Optional["Memo"] = None,
          session: Optional[Session] = None) -> FileResult:
    """The findings of `skiplint - --stdin-display-name PATH` given the bytes a file holding the
    text has (sources.file_bytes), through the CLI's own door for such bytes (parallel.check_data);
    nothing for a file the project's own exclude patterns name, or with a file-level noqa. `memo`:
    the document's memo of its last parse (skiplint.reparse), for the parse of this text only.
    `session`: the server's (its project walk holds the open buffers), else one of its own."""
    session = (session if session is not None else Session()).remembering(memo).configured(settings.api_aliases)
    if settings.excludes_named(path):
        return FileResult(path, ())
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) > sources.MAX_BYTES // 4 else 0
    reason = sources.too_large(size)  # the CLI's limit, tested before the text is written out (a 50 MB buffer)
    if reason is not None:
        return parallel.checked(path, settings, lambda: prefilter.unchecked(path, reason), session)
    data = sources.file_bytes(text)

    def triage() -> Union[FileResult, str]:
        """parallel.check_data's, giving back the document's own text object where it reads the same
        (the reparse memo knows it)."""
        verdict = prefilter.judge(data, path, session)
        return text if isinstance(verdict, str) and verdict == text else verdict

    return filenoqa.honoured(parallel.checked(path, settings, triage, session), lambda _path: sources.decode(data))


def readable(text: str) -> bool:
    """Whether the CLI reads exactly this text from a file holding it (quick fixes' edits are made
    on the text, so they are offered only then)."""
    try:
        return sources.decode(sources.file_bytes(text)) == text
    except sources.SourceError:
        return False


# -- quick fixes ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Replacement:
    """Replace the characters [start, end) of the document's text with `text`."""

    start: int
    end: int
    text: str


def quick_fix(text: str, path: str, settings: config.Config, diagnostic: Diagnostic,
              target: str = "torchgpipe", session: Optional[Session] = None) -> Union[list[Replacement], str]:
    """The edits of `skiplint fix` for this one finding, when they make the file strictly better
    (the same test as `skiplint fix`: the file still parses and compiles, no finding of any code is
    added, this one is gone); else the reason there is none."""
    from skiplint import fix

    if diagnostic.code not in FIXABLE:
        return f"{diagnostic.code} has no automatic fix"
    session = session if session is not None else Session()
    state = fix._lint(text, path, settings, session)
    if state.error is not None:
        return f"the file could not be checked: {state.error}"
    key = (diagnostic.code, diagnostic.line, diagnostic.col, diagnostic.message)
    current = next((d for d in state.reported if (d.code, d.line, d.col, d.message) == key), None)
    if current is None:
        return "the finding is no longer reported"
    try:
        change = fix.plan(text, current, target)
    except edits.NotFixable as why:
        return str(why)
    outcome = fix._judged(current, state, change, path, settings, fix._compiles(text, path), session)
    if isinstance(outcome, str):
        return outcome
    return [Replacement(edit.start, edit.end, edit.text) for edit in change]


def fix_all(text: str, path: str, settings: config.Config, target: str = "torchgpipe",
            session: Optional[Session] = None) -> Optional[tuple[Replacement, tuple[Diagnostic, ...]]]:
    """`skiplint fix` on the text: one replacement of the span that changes, and the findings it
    fixed; None when nothing can be fixed."""
    from skiplint import fix

    outcome = fix.fix_source(text, path, settings, target, session=session)
    if outcome.error is not None or not outcome.changed:
        return None
    return _difference(text, outcome.fixed), outcome.applied


def _difference(old: str, new: str) -> Replacement:
    """The smallest single replacement that turns `old` into `new`."""
    start = len(os.path.commonprefix((old, new)))
    tail = len(os.path.commonprefix((old[start:][::-1], new[start:][::-1])))
    end_old, end_new = len(old) - tail, len(new) - tail
    # Never split a CR LF pair.
    if start > 0 and old[start - 1] == "\r" and start < len(old) and old[start] == "\n":
        start -= 1
    return Replacement(start, end_old, new[start:end_new])


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def suppression(text: str, diagnostic: Diagnostic) -> Union[Replacement, str]:
    """The edit that adds `# noqa: CODE` to the finding's line (or the code to the line's noqa
    list), or why the line cannot take one: it ends inside a string or with a continuation
    backslash, where a comment would change the program; or the code is one noqa does not silence."""
    if diagnostic.code in UNSUPPRESSIBLE:
        return f"a line's noqa does not silence {diagnostic.code}"
    starts = sources.line_starts(text)
    index = diagnostic.line - 1
    if not 0 <= index < len(starts) or (index == len(starts) - 1 and starts[index] == len(text) and index):
        return "the finding's line is not in the file"
    begin = starts[index]
    match = _LINE_BREAK.search(text, begin)
    end = match.start() if match is not None else len(text)
    line = text[begin:end]
    codes = noqa.suppressed_codes(line)
    if noqa.covers(codes, diagnostic.code):
        return "the line's noqa already covers this code"
    if line.rstrip().endswith("\\"):
        return "the line ends with a continuation backslash"
    if _ends_in_string(text, index + 1):
        return "the line ends inside a string"
    if codes:  # `# noqa: A,B`: add the code to the list
        found = noqa._NOQA.search(line)
        assert found is not None and found.group("codes")
        at = begin + found.end("codes")
        while text[at - 1] in ", \t":
            at -= 1
        return Replacement(at, at, f",{diagnostic.code}")
    body = line.rstrip()
    return Replacement(begin + len(body), end, f"{'  ' if body else ''}# noqa: {diagnostic.code}")


def _ends_in_string(text: str, line: int) -> bool:
    """Whether a string token (a triple-quoted string, an f-string) runs past the end of `line`."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.start[0] > line:
                return False
            if token.start[0] <= line < token.end[0] and token.type not in (
                    tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                if token.type == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", -1) == token.type:
                    return True
    except (tokenize.TokenError, SyntaxError):
        return True  # an unterminated string or bracket: no comment is safe to add
    return False


# -- hover -----------------------------------------------------------------------------------------

def hover_markdown(code: str) -> str:
    """The rule in Markdown: what it finds, the run-time failure it prevents, the fixed example."""
    rule = rules.RULES[code]
    lines = [f"**{code}** `{rule.name}`" + (" (opt-in)" if rule.opt_in else ""), "",
             f"Finds: {doc.sentence(rule.summary)}", "",
             f"Fails at run time: {doc.failure(rule)}.", "",
             "Fixed:", "", "```python", doc.example(code, "fixed").rstrip("\n"), "```", "",
             f"[{code} in docs/rules.md]({doc.url(code)})"]
    return "\n".join(lines)


# -- layout ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lens:
    """A pipe call (0-based line, code point columns) and the name of what it pipes."""

    line: int
    column: int
    end_line: int
    end_column: int
    name: str


def models(text: str, path: str, settings: config.Config, session: Optional[Session] = None) -> "ModelFacts":
    """The compositions and pipes of the text (ParseFailure when it does not parse)."""
    from skiplint import engine
    from skiplint.facts import ModelFacts

    session = (session if session is not None else Session()).configured(settings.api_aliases)
    both = engine.analyze_models(text, path, prefiltered=True, max_unroll=settings.max_unroll, session=session)
    return both[1] if both is not None else ModelFacts(path)


def _pipe(facts: "ModelFacts", model: "layout_module.Model") -> Optional["Pipe"]:
    return next((p for p in facts.pipes if p.composition is model.composition and p.name == model.name), None)


def _span(site: Optional["Site"]) -> Optional[tuple[int, int, int, int]]:
    """(first line, column, last line, end column) of a site, lines 1-based."""
    if site is None:
        return None
    line, column = site.position
    end_line, end_column = site.locator.end(site.node)
    return line, column, end_line, end_column


def lenses(facts: "ModelFacts") -> list[Lens]:
    """A lens on every pipe call whose composition `skiplint layout` can draw."""
    from skiplint import layout

    out = []
    for model in layout.models(facts):
        if model.pipe is None:
            continue
        pipe = _pipe(facts, model)
        span = _span(pipe.site if pipe is not None else None)
        if span is not None:
            out.append(Lens(span[0] - 1, span[1], span[2] - 1, span[3], model.name))
    return out


def layout_at(text: str, path: str, settings: config.Config, line: int, display: str,
              session: Optional[Session] = None) -> Optional[str]:
    """`skiplint layout`'s drawing of the composition under the 0-based `line`: the innermost pipe
    call or composition whose source spans the line, else the nearest one above it, else the
    first; None when the text builds none worth drawing. ParseFailure when it does not parse."""
    from skiplint import layout

    facts = models(text, path, settings, session)
    found = layout.models(facts)
    if not found:
        return None
    row = line + 1
    spans: list[tuple["layout_module.Model", tuple[int, int, int, int]]] = []
    for model in found:
        pipe = _pipe(facts, model)
        span = _span(pipe.site if pipe is not None and model.pipe is not None else model.composition.site)
        if span is not None:
            spans.append((model, span))
    inside = [(model, span) for model, span in spans if span[0] <= row <= span[2]]
    if inside:
        chosen = min(inside, key=lambda item: (item[1][2] - item[1][0], -item[1][0]))[0]
    else:
        above = [(model, span) for model, span in spans if span[0] <= row]
        chosen = max(above, key=lambda item: item[1][0])[0] if above else found[0]
    return layout.render_text(display, chosen, chosen.balance)
