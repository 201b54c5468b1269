"""Scopes of the running code (one Env per frame, overlays for branches) and the signals that
unwind it: return, break, continue, an exhausted budget, a loop whose control flow is unknown."""

from __future__ import annotations

from typing import Any, Optional

import libcst as cst

from skiplint.imports import Scope


class Return(Exception):
    """`return` (or `raise`: an unknown result) leaves the running function."""

    def __init__(self, value: Any) -> None:
        self.value = value


class Break(Exception):
    """`break` leaves the innermost loop."""


class Continue(Exception):
    """`continue` starts the next iteration."""


class OutOfBudget(Exception):
    """The module's step budget is spent: the rest of its code is unknown."""


class LoopUnknown(Exception):
    """Control flow of a loop (break/continue/return under an unknown condition) cannot be known."""


class Env:
    """Variables of one running frame; a fork overlay writes locally and reads through."""

    __slots__ = ("vars", "parent", "scope", "func", "overlay", "branching")

    def __init__(self, parent: Optional[Env], scope: Scope, func: Optional[cst.FunctionDef] = None,
                 overlay: bool = False) -> None:
        self.vars: dict[str, Any] = {}
        self.parent = parent
        self.scope = scope
        self.func = func
        self.overlay = overlay
        #: How many branches under unknown conditions were running when this frame began
        #: (len(Core.branches)): a later write from a nested function under more is not certain.
        self.branching = 0

    def find(self, name: str) -> tuple[bool, Any]:
        env: Optional[Env] = self
        while env is not None:
            if name in env.vars:
                return True, env.vars[name]
            env = env.parent
        return False, None

    def frame(self) -> Env:
        """The function (or module) frame this env belongs to: where assignments go."""
        env = self
        while env.overlay and env.parent is not None:
            env = env.parent
        return env

