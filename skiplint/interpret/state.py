"""What one module's run keeps, in three parts: what it built (the raw material of the facts), the
entry points it runs and the skip tracker they share, and the executions of the class statements
it specializes."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from skiplint.facts import IsolateName, SkippableClass, Unknown
from skiplint.interpret.values import DirectCall, PipeRecord, SeqV, TrackedSkip

if TYPE_CHECKING:
    from skiplint.interpret.core import Definition


@dataclass
class Built:
    """What the run built: the Sequentials and pipe calls, the skippable layers called directly,
    and what `.isolate(...)` calls name wrongly or leave unknown."""

    sequences: list[SeqV] = field(default_factory=list)
    pipes: list[PipeRecord] = field(default_factory=list)
    #: Creation nodes of Sequentials used as inspect_skip_layout partitions (in any run).
    partition_nodes: builtins.set[int] = field(default_factory=builtins.set)
    #: Skippable layers called directly (`layer(x)`), in the order they ran.
    direct_calls: list[DirectCall] = field(default_factory=list)
    #: At `.isolate(...)` calls, each (call argument, name) once (`noted`): the names a class never
    #: declares, and what cannot be known.
    isolate_names: list[IsolateName] = field(default_factory=list)
    unknowns: list[Unknown] = field(default_factory=list)
    noted: builtins.set[tuple[int, str]] = field(default_factory=builtins.set)


@dataclass
class Entries:
    """The entry points (the module's code, then each function nobody calls) and the thread's
    default skip tracker that their direct calls share."""

    #: The entry point running (one per `Core.guarded` call), its kind ("module", "test" (a
    #: pytest test function), "other"), and the entry points that did not finish.
    serial: int = 0
    kind: str = "module"
    aborted: builtins.set[int] = field(default_factory=builtins.set)
    #: The skips that the running entry point may have stashed so far into the tracker its direct
    #: calls use (the thread's default one, unless a fixture gives each test its own); None: any.
    tracker: Optional[builtins.set[TrackedSkip]] = field(default_factory=builtins.set)
    #: The skips that some entry point may leave in the thread's default tracker, where an entry
    #: point run after it finds them; None: any.
    leaks: Optional[builtins.set[TrackedSkip]] = field(default_factory=builtins.set)
    #: Inside a `with` that may install another skip tracker (`use_skip_tracker(...)`, a context
    #: manager of the project): what a direct pop finds there cannot be known.
    other_tracker: int = 0
    #: An autouse fixture of the module runs each test inside `use_skip_tracker(...)` with a
    #: tracker of its own, so a test starts with an empty tracker whatever ran before it.
    fresh_test_trackers: bool = False

    def start(self, kind: str) -> None:
        """A new entry point: nothing stashed by itself yet."""
        self.serial += 1
        self.kind = kind
        self.tracker = builtins.set()

    def end(self) -> None:
        """What it may have stashed stays in the thread's default tracker for the entry points
        after it (anything, when it did not finish)."""
        if self.serial in self.aborted or self.tracker is None:
            self.leaks = None
        elif self.leaks is not None:
            self.leaks |= self.tracker


@dataclass
class Specializing:
    """Skippable classes whose names their code alone cannot tell (`open_classes`, by class
    statement), and each execution of their class statements (skiplint.interpret.specialize)."""

    open_classes: builtins.set[int] = field(default_factory=builtins.set)
    definitions: list["Definition"] = field(default_factory=list)
    #: How often each class statement ran.
    count: dict[int, int] = field(default_factory=dict)
    #: id(the class of one execution) -> that class with the forward its specialization made.
    refined: dict[int, SkippableClass] = field(default_factory=dict)
