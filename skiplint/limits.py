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


# -- the analysis budget ------------------------------------------------------------------------

from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class Budget:
    """Every limit of the composition analysis, and the only judge of what is too big to know.

    Past any of them a value, a loop or a call becomes unknown: the analysis abstains there, and
    it never guesses, raises or spends more than these sizes allow.
    """

    #: Interpreter steps (statements and expressions evaluated) per module.
    steps: int = 200_000
    #: Iterations of one loop or comprehension that are unrolled, and items of a repetition.
    unroll: int = 256
    #: Depth of helper calls followed.
    call_depth: int = 12
    #: Bits of an integer constant (a sign aside).
    int_bits: int = 63
    #: Characters of an integer literal that is read at all.
    literal_chars: int = 80
    #: Largest product of two integers.
    product: int = 10**9
    #: Length of a str, list, tuple or dict constant.
    length: int = 4096
    #: Layers of one composition (and partitions a balance is spread over).
    layers: int = 100_000
    #: Containers followed into when collecting the skippable layers nested in one.
    nesting: int = 8
    #: Helpers and classes followed when asking whether a class's own code builds skippables.
    code_depth: int = 6
    #: Containers followed into when asking whether constructor arguments hold layers.
    held_depth: int = 4

    def allows_steps(self, steps: int) -> bool:
        return steps <= self.steps

    def allows_unroll(self, count: int) -> bool:
        return count <= self.unroll

    def allows_call(self, depth: int) -> bool:
        return depth < self.call_depth

    def allows_literal(self, digits: str) -> bool:
        return len(digits) <= self.literal_chars

    def allows_int(self, value: int) -> bool:
        return value.bit_length() <= self.int_bits

    def allows_power(self, base: int, exponent: int) -> bool:
        """Whether base ** exponent is computed: a small exponent and a result within int_bits."""
        if not 0 <= exponent < 64:
            return False
        return base in (-1, 0, 1) or (abs(base).bit_length() - 1) * exponent <= self.int_bits

    def allows_product(self, value: int) -> bool:
        return abs(value) < self.product

    def allows_length(self, length: int) -> bool:
        return length <= self.length

    def allows_layers(self, count: int) -> bool:
        return count <= self.layers


#: The budget every analysis runs under unless it is given another (`max-unroll` changes unroll).
BUDGET = Budget()


# -- the project index's walk over other modules (skiplint.prefilter) ---------------------------

#: Depth of re-exports followed (`__init__` importing from a submodule importing from another).
MAX_REEXPORT = 6
#: Lines read for one import statement (a safety net: a candidate that is no import statement
#: stops at its first token that an import cannot hold).
MAX_STATEMENT_LINES = 10_000
#: How many re-exported modules (`from kit import parts` where kit's `__init__` says
#: `from . import parts`) the prefilter's walk looks through: each one widens the walk to all that
#: module re-exports, so a module imported whole (`import pkg`) is read for its own names only.
MODULE_HOPS = 1
