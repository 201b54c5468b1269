"""What a rule is: one unit holding everything skiplint knows about one code.

A rule module (one per family: `one_class`, `composition`, `pipe`, `portability`, `analyzer`)
declares its rules as `Rule` values. docs/rules.md, `skiplint rule`, the flake8 plugin's
selection, SARIF's rule table, the runtime companion's join and `fix` all read them from there.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any, Optional

from skiplint.findings import Finding, OwnerRef


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    #: str.format template; the reported text is "CODE " + template.format(**args).
    template: str
    #: One line: what the rule finds.
    summary: str
    #: The run-time failure the rule predicts (empty for the analyzer's own codes), for people.
    failure: str
    #: Where the diagnostic is reported: the line to put `# noqa: CODE` on.
    reported_at: str
    #: When the rule reports, where that is narrower than its summary says.
    when: Optional[str] = None
    opt_in: bool = False
    #: Codes this rule replaces where both would be reported at one node (one mistake, one
    #: diagnostic): the more certain failure wins.
    supersedes: tuple[str, ...] = ()
    #: The library failures this rule predicts, what verify's join matches (skiplint.runtime.messages):
    #: regular expressions, each matched in full against one failure as the library words it:
    #: `Type: message` for an exception (`Type (raised in PATH)` for one with no message), or one
    #: `* ...` line of verify_skippables' TypeError. Named groups give the failure's `name` (or
    #: `names`, several quoted), `layer` and `op`.
    predicts: tuple[str, ...] = ()
    #: The template's fields, in order: the rule's arguments.
    fields: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names: list[str] = []
        for _literal, name, _spec, _conversion in string.Formatter().parse(self.template):
            if name is not None and name not in names:
                names.append(name)
        object.__setattr__(self, "fields", tuple(names))

    def format(self, **args: object) -> str:
        """The whole message: the code, then the template filled with the arguments."""
        return f"{self.code} {self.text(**args)}"

    def text(self, **args: object) -> str:
        """The message without its code."""
        return self.template.format(**args)

    def at(self, site: Optional[Any], *owners: OwnerRef, **args: object) -> Finding:
        """A finding of this rule at `site` (a `facts.Site`; None: the file's first line), with its
        arguments: every field of the template, and any the message does not show (the skip's bare
        name, for the join)."""
        missing = [name for name in self.fields if name not in args]
        if missing:
            raise TypeError(f"{self.code} needs {', '.join(missing)}")
        return Finding(self.code, tuple((key, str(value)) for key, value in args.items()), site, owners)


def selected(code: str, opt_in: frozenset[str], select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
             extend_select: tuple[str, ...] = ()) -> bool:
    """flake8-style selection by prefix: the longest matching prefix of select/ignore wins."""
    chosen = select or ("SKP",)
    best_select = max((len(p) for p in (*chosen, *extend_select) if code.startswith(p)), default=-1)
    if code in opt_in:
        explicit = max((len(p) for p in (*select, *extend_select) if code.startswith(p)), default=-1)
        # Opt-in codes are on only when named in full, as flake8's extend_default_ignore does.
        if explicit < len(code):
            return False
        best_select = explicit
    best_ignore = max((len(p) for p in ignore if code.startswith(p)), default=-1)
    return best_select >= 0 and best_select > best_ignore
