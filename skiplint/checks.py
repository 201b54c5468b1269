"""SKP1xx checks: pure functions from one skippable class's facts to findings."""

from __future__ import annotations

import dataclasses
from typing import Iterator

import libcst as cst

from skiplint.findings import OwnerRef
from skiplint.facts import Command, Declaration, Finding, Kind, ModuleFacts, Site, SkippableClass

_VERB = {"stash": "stashed", "pop": "popped"}
_UNDECLARED = {"stash": "SKP101", "pop": "SKP102"}
_UNUSED = {"stash": "SKP103", "pop": "SKP104"}


def _finding(code: str, site: Site | None, **args: object) -> Finding:
    return Finding(code, tuple((k, str(v)) for k, v in args.items()), site)


def module_findings(facts: ModuleFacts) -> Iterator[Finding]:
    """Every finding of a module: those recorded while extracting, then each class's.

    A discarded pop that a pipe puts across partitions (SKP305, a certain failure) is not also
    the style warning SKP116 at the same call."""
    yield from facts.findings
    for command in facts.loose_commands:
        yield _not_yielded(command)
    certain = {id(f.site.node) for f in facts.findings if f.code == "SKP305" and f.site is not None}
    late: dict[tuple[int, str, str], tuple[Finding, list[str], list[OwnerRef]]] = {}
    for cls in facts.skippables:
        owner = class_owner(cls)
        for finding in class_findings(cls):
            finding = dataclasses.replace(finding, owners=(owner,))
            if finding.code == "SKP116" and finding.site is not None and id(finding.site.node) in certain:
                continue
            if finding.code == "SKP117" and finding.site is not None:
                args = dict(finding.args)
                key = (id(finding.site.node), args["var"], args["now"])
                entry = late.setdefault(key, (finding, [], []))
                entry[1].append(args["made"])
                entry[2].append(owner)
                continue
            yield finding
    for first, made, owners in late.values():  # one statement, one mistake: the classes it made early, together
        args = dict(first.args)
        yield dataclasses.replace(_finding("SKP117", first.site, var=args["var"], now=args["now"],
                                           made=", ".join(repr(name) for name in sorted(set(made)))),
                                  owners=tuple(owners))


def class_owner(cls: SkippableClass) -> OwnerRef:
    """The owner of a class's findings: the class, at its class statement."""
    return OwnerRef("class", cls.name, cls.site)


def _not_yielded(command: Command) -> Finding:
    """SKP107: a command that is built but never yielded does nothing."""
    shown = repr(command.name) if command.name is not None else "..."
    fix = "'yield stash(...)'" if command.kind == "stash" else "'x = yield pop(...)'"
    return _finding("SKP107", command.site, kind=command.kind, name=shown, fix=fix)


def _declaration_findings(decl: Declaration) -> Iterator[Finding]:
    if decl.bare_string is not None:
        chars = ", ".join(repr(c) for c in sorted(set(decl.bare_string))) or "nothing"
        yield _finding("SKP106", decl.site, arg=decl.kind, value=decl.bare_string, chars=chars)
    elif not decl.known:
        yield _finding("SKP901", decl.site, what=f"the {decl.kind}= declaration")


#: The codes by which a class's declared names and used names disagree.
_NAME_CODES = frozenset({"SKP101", "SKP102", "SKP103", "SKP104", "SKP105", "SKP110", "SKP111"})


def class_findings(cls: SkippableClass) -> Iterator[Finding]:
    """The SKP1xx findings of one class. When forward reads a variable rebound after the class
    was made (`cls.late`) and that makes names disagree, the one mistake is SKP117 at each
    command that reads it, not the disagreements it causes."""
    if not cls.late:
        yield from _class_findings(cls)
        return
    found = list(_class_findings(cls))
    if not any(f.code in _NAME_CODES for f in found):
        yield from found
        return
    yield from (f for f in found if f.code not in _NAME_CODES)
    late = {var: (made, now) for var, made, now in cls.late}
    for command in cls.forward.commands if cls.forward is not None else ():
        node = command.name_site.node if command.name_site is not None else None
        if isinstance(node, cst.Name) and node.value in late:
            made, now = late[node.value]
            yield _finding("SKP117", command.site, var=node.value, made=made, now=now)


def _class_findings(cls: SkippableClass) -> Iterator[Finding]:
    decls: dict[Kind, Declaration] = {"stash": cls.stash, "pop": cls.pop}
    for decl in decls.values():
        yield from _declaration_findings(decl)

    both: frozenset[str] = frozenset()
    if cls.stash.known and cls.pop.known:
        both = cls.stash.name_set & cls.pop.name_set
        for name in sorted(both):
            yield _second_declaration(cls, name)

    forward = cls.forward
    if forward is None:
        return
    if forward.required_inputs > 1:
        yield _finding("SKP114", forward.site, cls=cls.name, count=forward.required_inputs)
    for non_command in forward.non_commands:
        yield _finding("SKP108", non_command.site, what=non_command.what)

    used: dict[Kind, set[str]] = {"stash": set(), "pop": set()}
    for command in forward.commands:
        if command.arity_problem is not None:
            yield _finding("SKP112", command.site, kind=command.kind, problem=command.arity_problem)
        if not command.yielded:
            yield _not_yielded(command)
        if command.name is None:
            if command.name_site is not None:
                yield _finding("SKP901", command.name_site, what=f"the name of this {command.kind}()")
            continue
        used[command.kind].add(command.name)
        decl = decls[command.kind]
        if decl.known and command.name not in decl.name_set:
            yield _finding(_UNDECLARED[command.kind], command.site, name=command.name)
        if command.discarded:
            yield _finding("SKP116", command.site, name=command.name)

    repeated = {(c.kind, c.name) for c in forward.repeats}
    for command in forward.repeats:
        yield _finding("SKP110", command.site, name=command.name, verb=_VERB[command.kind])

    branch_of = dict(forward.branches)
    for kind, decl in decls.items():
        if not decl.known or kind in forward.unknown_kinds:
            continue
        for declared in decl.names or ():
            name = declared.name
            if name in both:
                continue
            if name not in used[kind]:
                yield _finding(_UNUSED[kind], declared.site, name=name)
                continue
            if forward.exits is None or not forward.exits or (kind, name) in repeated:
                continue
            on_path = [(kind, name) in exit_ for exit_ in forward.exits]
            if any(on_path) and not all(on_path):
                branch = branch_of.get((kind, name)) or forward.early_exit
                line = branch.position[0] if branch is not None else "?"
                yield _finding("SKP111", forward.site, name=name, verb=_VERB[kind], line=line)


def _second_declaration(cls: SkippableClass, name: str) -> Finding:
    """SKP105 at whichever of the two declarations of `name` comes later in the source."""
    sites = []
    for decl in (cls.stash, cls.pop):
        for declared in decl.names or ():
            if declared.name == name and declared.site is not None:
                sites.append(declared.site)
                break
    site = max(sites, key=lambda s: s.position) if sites else cls.site
    return _finding("SKP105", site, name=name)
