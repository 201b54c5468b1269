"""Read the libraries' own run-time failures back into skiplint codes (R1-R6, V1-V5 in
docs/runtime.md).

Pure string work: no torch. Each parser returns `Failure`s carrying the code the failure maps to,
the layer (child name in the Sequential) when the message names one, and the skip name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from skiplint.rules import RULES


def _code(code: str) -> str:
    return RULES[code].code


#: The code for a discarded pop whose skip crosses partitions, when this skiplint has the rule.
DISCARDED_POP: Optional[str] = RULES["SKP305"].code if "SKP305" in RULES else None


@dataclass(frozen=True)
class Failure:
    """One failure read from a library message: its code, layer and skip name when known."""

    code: str
    name: Optional[str]
    layer: Optional[str] = None
    #: The library's own words for this one failure.
    message: str = ""


#: Messages raised by Skippable.forward (R1-R6), each with the code it maps to.
_FORWARD = (
    (re.compile(r"^'(?P<name>.*)' has not been stashed$"), "SKP201"),
    (re.compile(r"^'(?P<name>.*)' has not been declared as stashable$"), "SKP101"),
    (re.compile(r"^'(?P<name>.*)' has not been declared as poppable$"), "SKP102"),
    (re.compile(r"^(?P<names>'.*') must be stashed but have not$"), "SKP103"),
    (re.compile(r"^(?P<names>'.*') must be popped but have not$"), "SKP104"),
    (re.compile(r"^(?P<op>.*) is not a command from @skippable$", re.S), "SKP108"),
)

#: Lines of verify_skippables' TypeError (V1-V5).
_VERIFY = (
    (re.compile(r"^'(?P<layer>.*)' declared '(?P<name>.*)' both as stashable and as poppable$"), "SKP105"),
    (re.compile(r"^'(?P<layer>.*)' redeclared '(?P<name>.*)' as stashable but not isolated by namespace$"),
     "SKP203"),
    (re.compile(r"^'(?P<layer>.*)' redeclared '(?P<name>.*)' as poppable but not isolated by namespace$"),
     "SKP204"),
    (re.compile(r"^'(?P<layer>.*)' declared '(?P<name>.*)' as poppable but it was not stashed$"), "SKP201"),
    (re.compile(r"^no module declared '(?P<name>.*)' as poppable but stashed$"), "SKP202"),
)

VERIFY_HEADER = "one or more pairs of stash and pop do not match:"

_ARITY = re.compile(r"^(?P<kind>stash|pop)\.__init__\(\) (missing|takes)")
_FORWARD_ARITY = re.compile(r"forward\(\) missing \d+ required positional argument")


def _split_names(text: str) -> list[str]:
    """`'a', 'b'` as the library joins several names."""
    return re.findall(r"'([^']*)'", text)


def is_verify_error(error: BaseException) -> bool:
    """The TypeError of verify_skippables that lists the mismatched pairs."""
    return isinstance(error, TypeError) and VERIFY_HEADER in str(error)


def parse_verify(message: str) -> list[Failure]:
    """Every line of verify_skippables' TypeError; [] when the message is not one of it."""
    if VERIFY_HEADER not in message:
        return []
    failures = []
    for line in message.splitlines():
        line = line.strip()
        if not line.startswith("* "):
            continue
        text = line[2:]
        for pattern, code in _VERIFY:
            match = pattern.match(text)
            if match:
                groups = match.groupdict()
                failures.append(Failure(_code(code), groups["name"], groups.get("layer"), text))
                break
    return failures


def parse_forward(error: BaseException, poppable: frozenset[str] = frozenset()) -> list[Failure]:
    """The failures a skippable layer's forward raised, or [] when the error is not one of them.

    `poppable` is the failing layer's declared pop names: a bare KeyError naming one of them is
    the second pop of that name (SKP110).
    """
    text = str(error)
    if isinstance(error, KeyError):
        name = error.args[0] if error.args else None
        if isinstance(name, str) and name in poppable:
            return [Failure(_code("SKP110"), name, message=f"KeyError: {name!r}")]
        return []
    if isinstance(error, TypeError):
        if _ARITY.match(text):
            return [Failure(_code("SKP112"), None, message=text)]
        if _FORWARD_ARITY.search(text):
            return [Failure(_code("SKP114"), None, message=text)]
        if VERIFY_HEADER in text:
            return parse_verify(text)
    if not isinstance(error, (RuntimeError, TypeError)):
        return []
    for pattern, code in _FORWARD:
        match = pattern.match(text)
        if not match:
            continue
        groups = match.groupdict()
        if "names" in groups:
            return [Failure(_code(code), n, message=text) for n in sorted(_split_names(groups["names"]))]
        if "op" in groups:
            op = groups["op"].strip()
            if "\n" in op or len(op) > 60:
                op = op.splitlines()[0][:40].rstrip(", ") + " ...)"
            text = f"{op} is not a command from @skippable"
        return [Failure(_code(code), groups.get("name"), message=text)]
    return []


def _raised_in(error: BaseException, suffix: str) -> bool:
    """The innermost frame of the error's traceback is in a file whose path ends with `suffix`."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.replace("\\", "/").endswith(suffix)


def parse_pipe(error: BaseException) -> list[Failure]:
    """Failures only a Pipe run shows, read from where they are raised: the bare AssertionError of
    skip/portal.py in backward when a popped tensor that crosses partitions is thrown away."""
    if (DISCARDED_POP is not None and isinstance(error, AssertionError) and not str(error)
            and _raised_in(error, "/skip/portal.py")):
        return [Failure(DISCARDED_POP, None, message="AssertionError in skip/portal.py during backward")]
    return []
