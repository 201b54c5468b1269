"""The static half of the join: skiplint's own diagnostics on the model's source files, each with
the subject it is about (the class for SKP1xx, the layer for SKP2xx) read back from its facts.

Each file is checked as the lint checks it: with the project's configuration found for that file
(selection, per-file-ignores, api-aliases, max-unroll), and reported under the path the lint prints."""

from __future__ import annotations

import re
import string
import sys
from functools import lru_cache
from typing import Iterable, Optional

from skiplint import checks, config, engine, imports, parallel, parsing, sources
from skiplint.rules import RULES
from skiplint.runtime.report import StaticFinding
from skiplint.runtime.target import shown_path


@lru_cache(maxsize=None)
def _template_pattern(code: str) -> re.Pattern[str]:
    """A regex that reads a rule's message back into its arguments."""
    parts = [re.escape(code + " ")]
    seen: set[str] = set()
    for literal, field_name, _spec, _conv in string.Formatter().parse(RULES[code].template):
        parts.append(re.escape(literal))
        if field_name is None:
            continue
        if field_name in seen:
            parts.append(f"(?P={field_name})")
        else:
            parts.append(f"(?P<{field_name}>.*?)")
            seen.add(field_name)
    return re.compile("^" + "".join(parts) + "$", re.S)


def message_args(code: str, message: str) -> dict[str, str]:
    """The arguments a diagnostic's message was formatted with ({} when it does not parse)."""
    match = _template_pattern(code).match(message)
    return match.groupdict() if match else {}


def _quoted(text: Optional[str]) -> Optional[str]:
    if text is None:
        return None
    found = re.findall(r"'([^']*)'", text)
    return found[-1] if found else text


def _class_of_findings(path: str, settings: config.Config) -> dict[tuple[str, int, int], str]:
    """(code, line, col) of every SKP1xx finding of a file -> the name of the class it is about."""
    try:
        text = sources.decode(sources.read_bytes(path))
        with imports.using_aliases(settings.api_aliases):
            facts = engine.analyze(text, path, max_unroll=settings.max_unroll)
    except (sources.SourceError, parsing.ParseFailure):
        return {}
    owners: dict[tuple[str, int, int], str] = {}
    for cls in facts.skippables if facts is not None else ():
        for finding in checks.class_findings(cls):
            site = finding.site or cls.site
            if site is not None:
                line, col = site.position
                owners[(finding.code, line, col)] = cls.name
    return owners


def static_findings(paths: Iterable[str], finder: Optional[config.Finder] = None) -> list[StaticFinding]:
    """The lint's diagnostics of the given files (configuration and noqa applied), with their subjects.
    A file the configuration excludes is left out, as the lint leaves it out."""
    finder = finder or config.Finder()
    out = []
    for path in sorted({shown_path(p) for p in paths}):
        settings = finder.for_file(path)
        if settings.excludes_named(path):
            continue
        result = parallel.check_one((path, settings))
        owners = _class_of_findings(result.path, settings) if result.diagnostics else {}
        for d in result.diagnostics:
            args = message_args(d.code, d.message)
            cls = owners.get((d.code, d.line, d.col)) or args.get("cls")
            name = args.get("name") or args.get("now") or _quoted(args.get("skip"))  # SKP117: the name at run time
            layer = args.get("layer")
            out.append(StaticFinding(d.path, d.line, d.col, d.code, d.message, cls=cls, layer=layer, name=name))
    for problem in finder.problems:
        print(problem, file=sys.stderr)
    return out
