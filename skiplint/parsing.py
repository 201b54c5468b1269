"""The one way skiplint parses source: every libcst parse (engine, project index, fix, layout,
verify's static step) goes through `parse_module`, which refuses what would hang or crash libcst."""

from __future__ import annotations

import re

import libcst as cst

from skiplint import limits


class ParseFailure(Exception):
    """The source could not be parsed; the message is the one-line reason."""


_PARSER_PREFIX = re.compile(r"^(?:parser error: |tokenizer error: )?(?:error at \d+:\d+: )?")


def parse_module(text: str) -> cst.Module:
    """The libcst module of `text`, or ParseFailure with a one-line reason."""
    hazard = limits.parser_hazard(text)
    if hazard is not None:  # libcst's native parser would overflow its stack and kill the process
        raise ParseFailure(hazard)
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        first = str(error.message).splitlines()[0] if error.message else ""
        message = _PARSER_PREFIX.sub("", first) or "invalid syntax"
        raise ParseFailure(f"syntax error at {error.raw_line}:{error.raw_column + 1}: {message}") from None
    except RecursionError:
        raise ParseFailure("nested too deeply for the parser (RecursionError)") from None
    except (ValueError, TypeError) as error:
        raise ParseFailure(f"cannot parse: {error}") from None
