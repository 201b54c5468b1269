"""Inputs that must not reach libcst's native parser: nesting deep enough to overflow its stack.

libcst 1.x parses with recursive native code and no depth limit: about 1,200 nested parentheses,
or a few thousand nested unary operators, lambdas, conditional expressions or subscripts, end the
process with SIGSEGV. CPython's own parser has limits (200 nested brackets, a recursion budget)
and raises instead, so a text it rejects for depth is refused here with its reason; any other
syntax error is left to libcst, which also reads syntax newer than the running interpreter.
"""

from __future__ import annotations

import ast
import warnings
from typing import Optional

#: Every construct that crashed libcst 1.9 needed more nesting levels than this many characters
#: can hold (see tests/test_hostile.py), so shorter texts skip the check.
SAFE_LENGTH = 1000

_DEPTH_MESSAGES = ("too many nested parentheses", "too many statically nested blocks",
                   "too complex", "too many levels of indentation", "maximum recursion depth")


def parser_hazard(text: str) -> Optional[str]:
    """Why this text must not be given to libcst (one line), or None when it is safe to parse."""
    if len(text) < SAFE_LENGTH:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like are not our business
            compile(text, "<skiplint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except RecursionError:
        return "nested too deeply to parse (Python's parser: RecursionError)"
    except MemoryError:
        return "nested too deeply to parse (Python's parser: too complex)"
    except SyntaxError as error:
        message = str(getattr(error, "msg", "") or error)
        if any(known in message for known in _DEPTH_MESSAGES):
            return f"nested too deeply to parse (line {error.lineno}: {message})"
    except (ValueError, OverflowError):
        return None
    return None
