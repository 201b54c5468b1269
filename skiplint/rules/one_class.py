"""SKP1xx: one @skippable class. What `Skippable.forward` raises when the layer runs."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator

import skiplint.rules.analyzer as analyzer
from skiplint.findings import Finding, OwnerRef
from skiplint.rules.base import Rule, checks, combines, fixes, run
from skiplint.rules.base import Accounts, Fails

if TYPE_CHECKING:
    from skiplint.diagnostics import Diagnostic
    from skiplint.facts import Command, Declaration, Kind, ModelFacts, ModuleFacts, SkippableClass
    from skiplint.edits import Edit, Source

#: The family's heading in docs/rules.md, and what its rules predict (rendered by skiplint.rules.doc).
TITLE = 'SKP1xx: one @skippable class'
BLURB = 'What `Skippable.forward` raises when the layer runs.'


UNDECLARED_STASH = Rule(
    code='SKP101', name='undeclared-stash',
    template="'{name}' is stashed but not declared in stash=[...]",
    summary='stash(name, ...) is yielded for a name not declared in stash=',
    failure="RuntimeError: '{name}' has not been declared as stashable",
    reported_at='the `stash(...)` call',
    predicts=(Fails("forward", r"RuntimeError: '(?P<name>.*)' has not been declared as stashable", "class"),),
)


UNDECLARED_POP = Rule(
    code='SKP102', name='undeclared-pop',
    template="'{name}' is popped but not declared in pop=[...]",
    summary='pop(name) is yielded for a name not declared in pop=',
    failure="RuntimeError: '{name}' has not been declared as poppable",
    reported_at='the `pop(...)` call',
    predicts=(Fails("forward", r"RuntimeError: '(?P<name>.*)' has not been declared as poppable", "class"),),
)


UNUSED_STASH_DECLARATION = Rule(
    code='SKP103', name='unused-stash-declaration',
    template="'{name}' is declared in stash=[...] but no path of forward stashes it",
    summary='a name declared in stash= is never stashed by forward',
    failure="RuntimeError: '{name}' must be stashed but have not",
    reported_at="the name in the decorator's `stash=` (its string or constant)",
    predicts=(Fails("forward", r"RuntimeError: (?P<names>'.*') must be stashed but have not", "class"),),
)


UNUSED_POP_DECLARATION = Rule(
    code='SKP104', name='unused-pop-declaration',
    template="'{name}' is declared in pop=[...] but no path of forward pops it",
    summary='a name declared in pop= is never popped by forward',
    failure="RuntimeError: '{name}' must be popped but have not",
    reported_at="the name in the decorator's `pop=` (its string or constant)",
    predicts=(Fails("forward", r"RuntimeError: (?P<names>'.*') must be popped but have not", "class"),),
)


STASH_AND_POP_DECLARATION = Rule(
    code='SKP105', name='stash-and-pop-declaration',
    template="'{name}' is declared both in stash=[...] and in pop=[...]",
    summary='a name is declared both in stash= and in pop=',
    failure="TypeError from verify_skippables: declared '{name}' both as stashable and as poppable",
    reported_at='the second of the two declarations',
    predicts=(Fails("verify", r"\* '(?P<layer>.*)' declared '(?P<name>.*)' both as stashable and as poppable",
                    "class"),),
)


BARE_STRING_DECLARATION = Rule(
    code='SKP106', name='bare-string-declaration',
    template='{arg}= is a bare string: {value!r} declares its characters {chars}; write [{value!r}]',
    summary='stash=/pop= is given a bare string, which declares its characters',
    failure='the intended name fails as undeclared, with single letters in the message',
    reported_at='the `stash=`/`pop=` argument',
    fix_title='Wrap `{value!r}` in a list',
)


COMMAND_NOT_YIELDED = Rule(
    code='SKP107', name='command-not-yielded',
    template='{kind}({name}) builds a command but is not yielded, so it does nothing; write {fix}',
    summary='a stash(...)/pop(...) command is built but not yielded',
    failure="silent: the skip never moves; then 'must be stashed/popped but have not'",
    reported_at='the call',
    fix_title='Add `yield`',
    # The command object itself reaching a tensor operation, as torch words it.
    predicts=tuple(Fails("forward", pattern, "class") for pattern in (
        r"TypeError: expected Tensor as element \d+ in argument \d+, but got (?:pop|stash)",
        r"TypeError: .*\(\): argument '.*' \(position \d+\) must be Tensor, not (?:pop|stash)",
        r"TypeError: unsupported operand type\(s\) for .*: (?:'(?:pop|stash)' and '.*'|'.*' and '(?:pop|stash)')",
        r"TypeError: .*\(\) received an invalid combination of arguments - got \((?:.*, )?(?:pop|stash)(?:, .*)?\)"
        r", but expected .*",
        r"AttributeError: '(?:pop|stash)' object has no attribute '.*'")),
    accounts_for=(Accounts("SKP103", when=(("kind", "stash"),), same_name=False),
                  Accounts("SKP104", when=(("kind", "pop"),), same_name=False)),
)


NON_COMMAND_YIELD = Rule(
    code='SKP108', name='non-command-yield',
    template='forward of a @skippable class yields {what}, which is not a stash/pop command',
    summary='a skippable forward yields something that is not a stash/pop command',
    failure='TypeError: ... is not a command from @skippable',
    reported_at='the `yield`',
    when='the yielded value is certainly no command where the yield runs, as the walk of forward follows it: '
         "a literal, arithmetic, forward's input, a torch function's or a torch.nn layer's result, an "
         'attribute, item or method call of such a value, a name holding one on every path there (a branch '
         'that runs only in eval mode included). A value from a call skiplint does not follow, a parameter '
         'other than the input, a name a loop, a handler or a context manager that may swallow an exception '
         'may have rebound, and a yield the walk does not reach with values (`match`, a `finally` after a '
         'return) may be a command: nothing is said, and the commands of forward count as not all known',
    predicts=(Fails("forward", r'TypeError: (?P<op>.*) is not a command from @skippable', "class"),),
)


YIELD_OUTSIDE_SKIPPABLE = Rule(
    code='SKP109', name='yield-outside-skippable',
    template="'{cls}' yields {kind}(...) but is not @skippable: its forward returns a generator",
    summary='yield stash/pop in a module class that is not @skippable',
    failure='silent: forward returns a generator object instead of a tensor',
    reported_at='the `yield`',
)


REPEATED_COMMAND = Rule(
    code='SKP110', name='repeated-command',
    template="'{name}' is {verb} twice on one path through forward",
    summary='the same name is stashed twice, or popped twice, on one path through forward',
    failure='pop twice: KeyError; stash twice: the first tensor is lost',
    reported_at='the second call',
    predicts=(Fails("forward", r"KeyError: '(?P<name>.*)'", "class", when=(("verb", "popped"),)),),
)


CONDITIONAL_COMMAND = Rule(
    code='SKP111', name='conditional-command',
    template="'{name}' is {verb} on some paths through forward but not all (line {line})",
    summary='a declared name is stashed/popped on some paths through forward but not all',
    failure="RuntimeError: '{name}' must be stashed/popped but have not, on the other paths",
    reported_at='the `def forward` line; the message names the line of the conditional',
    accounts_for=(Accounts("SKP103", when=(("verb", "stashed"),)), Accounts("SKP104", when=(("verb", "popped"),))),
)


COMMAND_ARITY = Rule(
    code='SKP112', name='command-arity',
    template='{kind}() {problem}',
    summary='stash/pop called with the wrong arguments',
    failure='TypeError at the call',
    reported_at='the call',
    predicts=(Fails("forward", r'TypeError: (?:stash|pop)\.__init__\(\) (?:missing|takes).*', "class"),),
)


SKIPPABLE_MISUSE = Rule(
    code='SKP113', name='skippable-misuse',
    template='{problem}',
    summary='@skippable without its call parentheses, or applied to something that is not a class',
    failure='TypeError at import time',
    reported_at='the decorator',
)


FORWARD_ARITY = Rule(
    code='SKP114', name='forward-arity',
    template="forward of @skippable '{cls}' requires {count} positional inputs; Skippable passes exactly one",
    summary='forward of a skippable class requires more than one positional input',
    failure='TypeError: forward() missing ... required positional argument',
    reported_at='the `def forward` line',
    predicts=(Fails("forward", r'TypeError: .*forward\(\) missing \d+ required positional argument.*', "class"),),
)


ISOLATE_UNKNOWN_NAME = Rule(
    code='SKP115', name='isolate-unknown-name',
    template="only= names '{name}', which '{cls}' never declares",
    summary='.isolate(ns, only=[...]) names a skip the class never declares',
    failure='silent: the namespace is not applied to the intended skip',
    reported_at='the `only=` argument',
    when="the class's declarations are known: a class written at module level, or each class that a factory's "
         "call or a loop's iteration makes (with the names that call or iteration gives). The composition "
         'holding the layer is not checked past it',
)


DISCARDED_POP = Rule(
    code='SKP116', name='discarded-pop',
    template="the tensor from yield pop('{name}') is discarded",
    summary='the tensor from yield pop(name) is discarded',
    failure='usually a forgotten merge of the skip',
    reported_at='the `pop(...)` call',
    opt_in=True,
)


LATE_BOUND_SKIP_NAME = Rule(
    code='SKP117', name='late-bound-skip-name',
    template="forward reads '{var}' when it runs, when it holds '{now}', not the {made} it held when the "
             'class was made: bind the name when the class is made (a class attribute, read as '
             'self.<attribute>)',
    summary='a class made in a loop or factory whose forward reads a variable rebound after the class was made',
    failure="RuntimeError: '{name}' has not been declared as stashable (or poppable), '{name}' being the name "
            'the variable holds when forward runs',
    reported_at='the `stash(...)`/`pop(...)` call that reads the variable',
    # One mistake: the names it makes disagree are not reported apart.
    supersedes=('SKP101', 'SKP102', 'SKP103', 'SKP104', 'SKP105', 'SKP110', 'SKP111'),
    accounts_for=(Accounts("SKP101"), Accounts("SKP102")),
    when="the module runs the class statement (the loop, or the factory's call) with names it can read, and "
         'the variable forward reads holds another name once the code that built the model has run; where the '
         'names agree (the last class of a loop), nothing is reported. A function that rebinds the variable '
         'through `nonlocal` or `global` counts where the module calls it directly in the body of the frame '
         "that owns the variable (the module's for `global`), outside any branch it cannot decide; a rebinder "
         'that is returned, stored, passed on, called from nested code or under an unknown condition makes '
         'the variable unknown, and the class abstains (SKP901)',
)


# -- checks ----------------------------------------------------------------------------------------

_VERB = {"stash": "stashed", "pop": "popped"}
_UNDECLARED = {"stash": UNDECLARED_STASH, "pop": UNDECLARED_POP}
_UNUSED = {"stash": UNUSED_STASH_DECLARATION, "pop": UNUSED_POP_DECLARATION}


def _not_yielded(command: Command) -> Finding:
    """SKP107: a command that is built but never yielded does nothing."""
    shown = repr(command.name) if command.name is not None else "..."
    fix = "'yield stash(...)'" if command.kind == "stash" else "'x = yield pop(...)'"
    return COMMAND_NOT_YIELDED.at(command.site, kind=command.kind, name=shown, fix=fix)


@checks("module", COMMAND_NOT_YIELDED)
def loose_commands(facts: ModuleFacts) -> Iterator[Finding]:
    """Commands built as whole statements outside any skippable forward."""
    for command in facts.loose_commands:
        yield _not_yielded(command)


@checks("module", SKIPPABLE_MISUSE)
def misuses(facts: ModuleFacts) -> Iterator[Finding]:
    """@skippable without its call, or on a function."""
    for misuse in facts.misuses:
        if misuse.function is None:
            problem = "@skippable must be called: write @skippable(stash=[...], pop=[...])"
        else:
            problem = f"@skippable decorates nn.Module classes, not the function '{misuse.function}'"
        yield SKIPPABLE_MISUSE.at(misuse.site, problem=problem)


@checks("module", YIELD_OUTSIDE_SKIPPABLE)
def undecorated_yields(facts: ModuleFacts) -> Iterator[Finding]:
    for found in facts.undecorated_yields:
        yield YIELD_OUTSIDE_SKIPPABLE.at(found.site, cls=found.cls, kind=found.kind)


@checks("module", ISOLATE_UNKNOWN_NAME)
def isolated_names(facts: ModuleFacts) -> Iterator[Finding]:
    """`Cls(...).isolate(ns, only=[...])` of a class the module declares."""
    for found in facts.isolate_names:
        yield ISOLATE_UNKNOWN_NAME.at(found.site, name=found.name, cls=found.cls)


@checks("model", ISOLATE_UNKNOWN_NAME, analyzer.COMPUTED_SKIP_NAME)
def isolated_layers(model: ModelFacts) -> Iterator[Finding]:
    """`.isolate(...)` of the layers the module builds: a name their class never declares, or a
    namespace or names that cannot be known."""
    for found in model.isolate_names:
        yield ISOLATE_UNKNOWN_NAME.at(found.site, name=found.name, cls=found.cls)
    for unknown in model.unknowns:
        yield analyzer.COMPUTED_SKIP_NAME.at(unknown.site, what=unknown.what)


def _declarations(cls: SkippableClass) -> dict[Kind, Declaration]:
    return {"stash": cls.stash, "pop": cls.pop}


@checks("class", BARE_STRING_DECLARATION, analyzer.COMPUTED_SKIP_NAME)
def declarations(cls: SkippableClass) -> Iterator[Finding]:
    for decl in _declarations(cls).values():
        if decl.bare_string is not None:
            chars = ", ".join(repr(c) for c in sorted(set(decl.bare_string))) or "nothing"
            yield BARE_STRING_DECLARATION.at(decl.site, arg=decl.kind, value=decl.bare_string, chars=chars)
        elif not decl.known:
            yield analyzer.COMPUTED_SKIP_NAME.at(decl.site, what=f"the {decl.kind}= declaration")


def _declared_both(cls: SkippableClass) -> frozenset[str]:
    """Names declared both in stash= and in pop= (verify_skippables skips them)."""
    if cls.stash.known and cls.pop.known:
        return cls.stash.name_set & cls.pop.name_set
    return frozenset()


@checks("class", STASH_AND_POP_DECLARATION)
def declared_both(cls: SkippableClass) -> Iterator[Finding]:
    """SKP105 at whichever of the two declarations of a name comes later in the source."""
    for name in sorted(_declared_both(cls)):
        sites = []
        for decl in (cls.stash, cls.pop):
            for declared in decl.names or ():
                if declared.name == name and declared.site is not None:
                    sites.append(declared.site)
                    break
        site = max(sites, key=lambda s: s.position) if sites else cls.site
        yield STASH_AND_POP_DECLARATION.at(site, name=name)


@checks("class", FORWARD_ARITY, NON_COMMAND_YIELD)
def forward_signature(cls: SkippableClass) -> Iterator[Finding]:
    forward = cls.forward
    if forward is None:
        return
    if forward.required_inputs > 1:
        yield FORWARD_ARITY.at(forward.site, cls=cls.name, count=forward.required_inputs)
    for non_command in forward.non_commands:
        yield NON_COMMAND_YIELD.at(non_command.site, what=non_command.what)


@checks("class", COMMAND_ARITY, COMMAND_NOT_YIELDED, analyzer.COMPUTED_SKIP_NAME, UNDECLARED_STASH,
        UNDECLARED_POP, DISCARDED_POP)
def commands(cls: SkippableClass) -> Iterator[Finding]:
    """Each command of forward: its arguments, whether it is yielded, its name and its tensor."""
    if cls.forward is None:
        return
    decls = _declarations(cls)
    for command in cls.forward.commands:
        if command.arity_problem is not None:
            yield COMMAND_ARITY.at(command.site, kind=command.kind, problem=command.arity_problem)
        if not command.yielded:
            yield _not_yielded(command)
        if command.name is None:
            if command.name_site is not None:
                yield analyzer.COMPUTED_SKIP_NAME.at(command.name_site, what=f"the name of this {command.kind}()")
            continue
        decl = decls[command.kind]
        if decl.known and command.name not in decl.name_set:
            yield _UNDECLARED[command.kind].at(command.site, name=command.name)
        if command.discarded:
            yield DISCARDED_POP.at(command.site, name=command.name)


@checks("class", REPEATED_COMMAND)
def repeats(cls: SkippableClass) -> Iterator[Finding]:
    for command in cls.forward.repeats if cls.forward is not None else ():
        yield REPEATED_COMMAND.at(command.site, name=command.name, verb=_VERB[command.kind])


@checks("class", UNUSED_STASH_DECLARATION, UNUSED_POP_DECLARATION, CONDITIONAL_COMMAND)
def declared_uses(cls: SkippableClass) -> Iterator[Finding]:
    """Each declared name: used by no path of forward, or by some paths but not all."""
    forward = cls.forward
    if forward is None:
        return
    both = _declared_both(cls)
    used: dict[Kind, set[str]] = {"stash": set(), "pop": set()}
    for command in forward.commands:
        if command.name is not None:
            used[command.kind].add(command.name)
    repeated = {(c.kind, c.name) for c in forward.repeats}
    branch_of = dict(forward.branches)
    for kind, decl in _declarations(cls).items():
        if not decl.known or kind in forward.unknown_kinds:
            continue
        for declared in decl.names or ():
            name = declared.name
            if name in both:
                continue
            if name not in used[kind]:
                yield _UNUSED[kind].at(declared.site, name=name)
                continue
            if forward.exits is None or not forward.exits or (kind, name) in repeated:
                continue
            on_path = [(kind, name) in exit_ for exit_ in forward.exits]
            if any(on_path) and not all(on_path):
                branch = branch_of.get((kind, name)) or forward.early_exit
                line = branch.position[0] if branch is not None else "?"
                yield CONDITIONAL_COMMAND.at(forward.site, name=name, verb=_VERB[kind], line=line)


@checks("class", LATE_BOUND_SKIP_NAME)
def late_bound(cls: SkippableClass) -> Iterator[Finding]:
    """When forward reads a variable rebound after the class was made (`cls.late`) and that makes
    names disagree (the class's other checks find what this rule supersedes), the one mistake is
    SKP117 at each command that reads it, not the disagreements it causes."""
    if not cls.late or cls.forward is None:
        return
    if not any(f.code in LATE_BOUND_SKIP_NAME.supersedes for f in run("class", cls, but=late_bound)):
        return
    import libcst as cst

    late = {var: (made, now) for var, made, now in cls.late}
    for command in cls.forward.commands:
        node = command.name_site.node if command.name_site is not None else None
        if isinstance(node, cst.Name) and node.value in late:
            made, now = late[node.value]
            yield LATE_BOUND_SKIP_NAME.at(command.site, var=node.value, made=made, now=now)


@combines(LATE_BOUND_SKIP_NAME)
def _made_together(found: list[Finding]) -> Iterator[Finding]:
    """One statement, one mistake: each (statement, variable, value) once, naming every class it
    made early (each class's finding holds the bare name it was made with), with each of them as
    an owner."""
    late: dict[tuple[int, str, str], tuple[Finding, list[str], list[OwnerRef]]] = {}
    for finding in found:
        key = (id(finding.site.node) if finding.site is not None else 0, finding.arg("var") or "",
               finding.arg("now") or "")
        entry = late.setdefault(key, (finding, [], []))
        entry[1].append(finding.arg("made") or "")
        entry[2].extend(finding.owners)
    for first, made, owners in late.values():
        yield LATE_BOUND_SKIP_NAME.at(first.site, *owners, var=first.arg("var"), now=first.arg("now"),
                                      made=", ".join(repr(name) for name in sorted(set(made))))


# -- fixes (`Rule.fixer`; `skiplint fix` keeps an edit only when the file gets strictly better) -------

@fixes(BARE_STRING_DECLARATION)
def _bracket_bare_string(source: Source, finding: Diagnostic, target: str) -> list[Edit]:
    """SKP106: the bare string the finding spans becomes a one-element list, `[...]` around it."""
    from skiplint.edits import Edit, NotFixable

    for node in source.nodes(finding, ast.expr):
        parent = source.parents.get(node)
        if isinstance(parent, ast.keyword) or (isinstance(parent, ast.Call) and node in parent.args):
            start, end = source.span(node)
            return [Edit(start, start, "["), Edit(end, end, "]")]
    raise NotFixable("the declaration is not a call argument")


@fixes(COMMAND_NOT_YIELDED)
def _yield_command(source: Source, finding: Diagnostic, target: str) -> list[Edit]:
    """SKP107: `yield ` before the command the finding spans, where it is a statement of its own
    or the value of an assignment."""
    from skiplint.edits import Edit, NotFixable

    for node in source.nodes(finding, ast.Call):
        parent = source.parents.get(node)
        statement = isinstance(parent, ast.Expr)
        if statement or (isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node):
            if not _yield_allowed(source, node):
                raise NotFixable("a yield here would change what the enclosing function is")
            # A pop whose tensor the code discards stays discarded: `yield pop(name)`. A name
            # for it would be a name nobody reads (pyflakes' F841), and would hide from SKP305
            # that the tensor is discarded.
            start = source.span(parent if statement and parent is not None else node)[0]
            return [Edit(start, start, "yield ")]
    raise NotFixable("the command is part of a larger expression")


#: The nodes that make a scope of their own: a yield inside one is not the enclosing function's.
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _yield_allowed(source: Source, node: ast.AST) -> bool:
    """Whether adding a yield at `node` keeps the program's meaning apart from the fix: inside a
    function that is already a generator, or the forward of a decorated class (@skippable)."""
    while node in source.parents and not isinstance(node, _SCOPES):
        node = source.parents[node]
    if not isinstance(node, ast.FunctionDef):
        return False
    stack: list[ast.AST] = list(node.body)  # the function's own nodes, not those of nested scopes
    while stack:
        inner = stack.pop()
        if isinstance(inner, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(inner, _SCOPES):
            stack.extend(ast.iter_child_nodes(inner))
    cls = source.parents.get(node)
    return node.name == "forward" and isinstance(cls, ast.ClassDef) and bool(cls.decorator_list)
