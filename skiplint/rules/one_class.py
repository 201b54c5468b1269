"""SKP1xx: one @skippable class. What `Skippable.forward` raises when the layer runs."""

from __future__ import annotations

from skiplint.rules.base import Rule


UNDECLARED_STASH = Rule(
    code='SKP101', name='undeclared-stash',
    template="'{name}' is stashed but not declared in stash=[...]",
    summary='stash(name, ...) is yielded for a name not declared in stash=',
    failure="RuntimeError: '{name}' has not been declared as stashable",
    reported_at='the `stash(...)` call',
    predicts=(r"RuntimeError: '(?P<name>.*)' has not been declared as stashable",),
)


UNDECLARED_POP = Rule(
    code='SKP102', name='undeclared-pop',
    template="'{name}' is popped but not declared in pop=[...]",
    summary='pop(name) is yielded for a name not declared in pop=',
    failure="RuntimeError: '{name}' has not been declared as poppable",
    reported_at='the `pop(...)` call',
    predicts=(r"RuntimeError: '(?P<name>.*)' has not been declared as poppable",),
)


UNUSED_STASH_DECLARATION = Rule(
    code='SKP103', name='unused-stash-declaration',
    template="'{name}' is declared in stash=[...] but no path of forward stashes it",
    summary='a name declared in stash= is never stashed by forward',
    failure="RuntimeError: '{name}' must be stashed but have not",
    reported_at="the name in the decorator's `stash=` (its string or constant)",
    predicts=(r"RuntimeError: (?P<names>'.*') must be stashed but have not",),
)


UNUSED_POP_DECLARATION = Rule(
    code='SKP104', name='unused-pop-declaration',
    template="'{name}' is declared in pop=[...] but no path of forward pops it",
    summary='a name declared in pop= is never popped by forward',
    failure="RuntimeError: '{name}' must be popped but have not",
    reported_at="the name in the decorator's `pop=` (its string or constant)",
    predicts=(r"RuntimeError: (?P<names>'.*') must be popped but have not",),
)


STASH_AND_POP_DECLARATION = Rule(
    code='SKP105', name='stash-and-pop-declaration',
    template="'{name}' is declared both in stash=[...] and in pop=[...]",
    summary='a name is declared both in stash= and in pop=',
    failure="TypeError from verify_skippables: declared '{name}' both as stashable and as poppable",
    reported_at='the second of the two declarations',
    predicts=(r"\* '(?P<layer>.*)' declared '(?P<name>.*)' both as stashable and as poppable",),
)


BARE_STRING_DECLARATION = Rule(
    code='SKP106', name='bare-string-declaration',
    template='{arg}= is a bare string: {value!r} declares its characters {chars}; write [{value!r}]',
    summary='stash=/pop= is given a bare string, which declares its characters',
    failure='the intended name fails as undeclared, with single letters in the message',
    reported_at='the `stash=`/`pop=` argument',
)


COMMAND_NOT_YIELDED = Rule(
    code='SKP107', name='command-not-yielded',
    template='{kind}({name}) builds a command but is not yielded, so it does nothing; write {fix}',
    summary='a stash(...)/pop(...) command is built but not yielded',
    failure="silent: the skip never moves; then 'must be stashed/popped but have not'",
    reported_at='the call',
)


NON_COMMAND_YIELD = Rule(
    code='SKP108', name='non-command-yield',
    template='forward of a @skippable class yields {what}, which is not a stash/pop command',
    summary='a skippable forward yields something that is not a stash/pop command',
    failure='TypeError: ... is not a command from @skippable',
    reported_at='the `yield`',
    predicts=(r'TypeError: (?P<op>.*) is not a command from @skippable',),
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
    predicts=(r"KeyError: '(?P<name>.*)'",),
)


CONDITIONAL_COMMAND = Rule(
    code='SKP111', name='conditional-command',
    template="'{name}' is {verb} on some paths through forward but not all (line {line})",
    summary='a declared name is stashed/popped on some paths through forward but not all',
    failure="RuntimeError: '{name}' must be stashed/popped but have not, on the other paths",
    reported_at='the `def forward` line; the message names the line of the conditional',
)


COMMAND_ARITY = Rule(
    code='SKP112', name='command-arity',
    template='{kind}() {problem}',
    summary='stash/pop called with the wrong arguments',
    failure='TypeError at the call',
    reported_at='the call',
    predicts=(r'TypeError: (?:stash|pop)\.__init__\(\) (?:missing|takes).*',),
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
    predicts=(r'TypeError: .*forward\(\) missing \d+ required positional argument.*',),
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
    when="the module runs the class statement (the loop, or the factory's call) with names it can read, and "
         'the variable forward reads holds another name once the code that built the model has run; where the '
         'names agree (the last class of a loop), nothing is reported. A function that rebinds the variable '
         'through `nonlocal` or `global` counts where the module calls it directly in the body of the frame '
         "that owns the variable (the module's for `global`), outside any branch it cannot decide; a rebinder "
         'that is returned, stored, passed on, called from nested code or under an unknown condition makes '
         'the variable unknown, and the class abstains (SKP901)',
)
