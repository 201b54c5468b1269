"""Read the libraries' own run-time failures back into skiplint codes (R1-R6, V1-V5 in
docs/runtime.md); no torch.

The failures each rule predicts are its own contract (`Rule.predicts`, in skiplint/rules/): a
failure is described as the library words it (`Type: message`, or one line of verify_skippables'
TypeError) and read by the first rule, in the order of the codes, that predicts it at that step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from skiplint.rules import RULES
from skiplint.rules.base import Fails


@dataclass(frozen=True)
class Failure:
    """One failure read from a library message: its code, layer and skip name when known."""

    code: str
    name: Optional[str]
    layer: Optional[str] = None
    #: The library's own words for this one failure.
    message: str = ""


VERIFY_HEADER = "one or more pairs of stash and pop do not match:"


@dataclass(frozen=True)
class _Reading:
    """One predicted failure of a rule, its pattern compiled."""

    code: str
    fails: Fails
    pattern: re.Pattern[str]


@lru_cache(maxsize=None)
def _readings() -> tuple[_Reading, ...]:
    """Every failure a rule predicts, in the order of the codes."""
    return tuple(_Reading(rule.code, fails, re.compile(fails.pattern, re.S))
                 for rule in sorted(RULES.values(), key=lambda r: r.code) for fails in rule.predicts)


def _read(described: str, verify_line: bool) -> Optional[tuple[str, dict[str, str]]]:
    """The code of the first rule that predicts this failure (a line of verify_skippables' error,
    or an exception of a later step), with what the rule's pattern read from it (name, names,
    layer, op); None when no rule predicts it."""
    for reading in _readings():
        if (reading.fails.step == "verify") != verify_line:
            continue
        match = reading.pattern.fullmatch(described)
        if match:
            return reading.code, {key: value for key, value in match.groupdict().items() if value is not None}
    return None


def steps(code: str) -> frozenset[str]:
    """The steps where the failures this code's rule predicts appear (its contract)."""
    rule = RULES.get(code)
    return frozenset(fails.step for fails in rule.predicts) if rule is not None else frozenset()


def subject(code: str) -> Optional[str]:
    """What tells whose failure of this code it is (one subject per rule); None: it predicts none."""
    rule = RULES.get(code)
    return rule.predicts[0].subject if rule is not None and rule.predicts else None


def names_skip(code: str) -> bool:
    """Whether the failures of this code name the skip (their patterns read a name)."""
    return any(reading.code == code and ({"name", "names"} & set(reading.pattern.groupindex))
               for reading in _readings())


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
        read = _read(line, verify_line=True)
        if read is not None:
            code, groups = read
            failures.append(Failure(code, groups.get("name"), groups.get("layer"), line[2:]))
    return failures


def innermost(error: BaseException) -> tuple[str, int]:
    """The file (with / separators) and line of the innermost frame of the error's traceback."""
    tb = error.__traceback__
    if tb is None:
        return "", 0
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.replace("\\", "/"), tb.tb_lineno


def _described(error: BaseException) -> str:
    """The failure as the rules' patterns read it: `Type: message`; a KeyError's key quoted as the
    library quotes names; an error with no message, `Type (raised in PATH)`."""
    kind = type(error).__name__
    if isinstance(error, KeyError) and error.args and isinstance(error.args[0], str):
        return f"{kind}: '{error.args[0]}'"
    text = str(error)
    if not text:
        return f"{kind} (raised in {innermost(error)[0]})"
    return f"{kind}: {text}"


def parse_forward(error: BaseException, poppable: frozenset[str] = frozenset()) -> list[Failure]:
    """The failures a skippable layer's forward (or a pipe's backward) raised, or [] when the error
    is no failure a rule predicts.

    `poppable` is the failing layer's declared pop names: a bare KeyError is a skip failure (the
    second pop of that name) only when it names one of them.
    """
    text = str(error)
    if isinstance(error, KeyError):
        name = error.args[0] if error.args else None
        if not (isinstance(name, str) and name in poppable):
            return []
    elif is_verify_error(error):
        return parse_verify(text)
    read = _read(_described(error), verify_line=False)
    if read is None:
        return []
    code, groups = read
    if isinstance(error, KeyError):
        return [Failure(code, error.args[0], message=f"KeyError: {error.args[0]!r}")]
    if "names" in groups:
        return [Failure(code, n, message=text) for n in sorted(re.findall(r"'([^']*)'", groups["names"]))]
    if "op" in groups:
        op = groups["op"].strip()
        if "\n" in op or len(op) > 60:
            op = op.splitlines()[0][:40].rstrip(", ") + " ...)"
        text = f"{op} is not a command from @skippable"
    if not text:  # the library said nothing: where it was raised is what tells the failure
        place = "/".join(innermost(error)[0].split("/")[-2:])
        text = f"{type(error).__name__} in {place}"
    return [Failure(code, groups.get("name"), groups.get("layer"), text)]
