"""The rule table: every code skiplint reports, its symbolic name and message template.

This is the only place a code number is written down; docs, the flake8 plugin, the CLI's
--select/--ignore and the runtime companion all read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    #: str.format template; the reported text is "CODE " + template.format(**args).
    template: str
    #: One line: what the rule finds.
    summary: str
    #: The run-time failure the rule predicts (empty for the analyzer's own codes).
    failure: str
    opt_in: bool = False

    def format(self, **args: object) -> str:
        return f"{self.code} {self.template.format(**args)}"


_RULES = (
    # SKP1xx: one @skippable class
    Rule("SKP101", "undeclared-stash", "'{name}' is stashed but not declared in stash=[...]",
         "stash(name, ...) is yielded for a name not declared in stash=",
         "RuntimeError: '{name}' has not been declared as stashable"),
    Rule("SKP102", "undeclared-pop", "'{name}' is popped but not declared in pop=[...]",
         "pop(name) is yielded for a name not declared in pop=",
         "RuntimeError: '{name}' has not been declared as poppable"),
    Rule("SKP103", "unused-stash-declaration",
         "'{name}' is declared in stash=[...] but no path of forward stashes it",
         "a name declared in stash= is never stashed by forward",
         "RuntimeError: '{name}' must be stashed but have not"),
    Rule("SKP104", "unused-pop-declaration",
         "'{name}' is declared in pop=[...] but no path of forward pops it",
         "a name declared in pop= is never popped by forward",
         "RuntimeError: '{name}' must be popped but have not"),
    Rule("SKP105", "stash-and-pop-declaration",
         "'{name}' is declared both in stash=[...] and in pop=[...]",
         "a name is declared both in stash= and in pop=",
         "TypeError from verify_skippables: declared '{name}' both as stashable and as poppable"),
    Rule("SKP106", "bare-string-declaration",
         "{arg}= is a bare string: {value!r} declares its characters {chars}; write [{value!r}]",
         "stash=/pop= is given a bare string, which declares its characters",
         "the intended name fails as undeclared, with single letters in the message"),
    Rule("SKP107", "command-not-yielded",
         "{kind}({name}) builds a command but is not yielded, so it does nothing; write {fix}",
         "a stash(...)/pop(...) command is built but not yielded",
         "silent: the skip never moves; then 'must be stashed/popped but have not'"),
    Rule("SKP108", "non-command-yield",
         "forward of a @skippable class yields {what}, which is not a stash/pop command",
         "a skippable forward yields something that is not a stash/pop command",
         "TypeError: ... is not a command from @skippable"),
    Rule("SKP109", "yield-outside-skippable",
         "'{cls}' yields {kind}(...) but is not @skippable: its forward returns a generator",
         "yield stash/pop in a module class that is not @skippable",
         "silent: forward returns a generator object instead of a tensor"),
    Rule("SKP110", "repeated-command",
         "'{name}' is {verb} twice on one path through forward",
         "the same name is stashed twice, or popped twice, on one path through forward",
         "pop twice: KeyError; stash twice: the first tensor is lost"),
    Rule("SKP111", "conditional-command",
         "'{name}' is {verb} on some paths through forward but not all (line {line})",
         "a declared name is stashed/popped on some paths through forward but not all",
         "RuntimeError: '{name}' must be stashed/popped but have not, on the other paths"),
    Rule("SKP112", "command-arity", "{kind}() {problem}",
         "stash/pop called with the wrong arguments",
         "TypeError at the call"),
    Rule("SKP113", "skippable-misuse", "{problem}",
         "@skippable without its call parentheses, or applied to something that is not a class",
         "TypeError at import time"),
    Rule("SKP114", "forward-arity",
         "forward of @skippable '{cls}' requires {count} positional inputs; Skippable passes exactly one",
         "forward of a skippable class requires more than one positional input",
         "TypeError: forward() missing ... required positional argument"),
    Rule("SKP115", "isolate-unknown-name",
         "only= names '{name}', which '{cls}' never declares",
         ".isolate(ns, only=[...]) names a skip the class never declares",
         "silent: the namespace is not applied to the intended skip"),
    Rule("SKP116", "discarded-pop", "the tensor from yield pop('{name}') is discarded",
         "the tensor from yield pop(name) is discarded",
         "usually a forgotten merge of the skip", opt_in=True),
    Rule("SKP117", "late-bound-skip-name",
         "forward reads '{var}' when it runs, when it holds '{now}', not the {made} it held when the class "
         "was made: bind the name when the class is made (a class attribute, read as self.<attribute>)",
         "a class made in a loop or factory whose forward reads a variable rebound after the class "
         "was made",
         "RuntimeError: '{name}' has not been declared as stashable (or poppable), '{name}' being the "
         "name the variable holds when forward runs"),
    # SKP2xx: one composition
    Rule("SKP201", "pop-before-stash",
         "layer {layer} pops {skip} but no earlier layer stashes it",
         "a layer pops (ns, name) and no earlier layer of the composition stashed it",
         "TypeError: declared '{name}' as poppable but it was not stashed"),
    Rule("SKP202", "stash-never-popped",
         "layer {layer} stashes {skip} but no later layer pops it",
         "a layer stashes (ns, name) and no later layer pops it",
         "TypeError: no module declared '{name}' as poppable but stashed"),
    Rule("SKP203", "restash-without-namespace",
         "layer {layer} stashes {skip} again (first stashed by layer {first}); isolate it with a Namespace",
         "(ns, name) is stashed again by a second layer without namespace isolation",
         "TypeError: redeclared '{name}' as stashable but not isolated by namespace"),
    Rule("SKP204", "repop-without-namespace",
         "layer {layer} pops {skip} again (first popped by layer {first}); isolate it with a Namespace",
         "(ns, name) is popped again by a second layer without namespace isolation",
         "TypeError: redeclared '{name}' as poppable but not isolated by namespace"),
    Rule("SKP205", "nested-skippable",
         "skippable layer {layer} is nested in child {child} of a Sequential given to a pipe; {why}",
         "skippable layers nested inside a child container of a Sequential given to a Pipe",
         "TypeError from verify_skippables, or 'has not been stashed' in forward (a pop before its "
         "stash), or in backward (a skip between child Sequentials across partitions, recomputed by "
         "checkpointing)"),
    # SKP3xx: a pipe and its partitions
    Rule("SKP301", "balance-mismatch",
         "balance sums to {total} but the composition has {count} layers",
         "balance does not sum to the number of layers of the composition",
         "BalanceError: module and sum of balance have different length"),
    Rule("SKP302", "cross-partition-skip",
         "skip {skip} crosses from partition {src} (layer {src_layer}) to partition {dst} (layer {dst_layer})",
         "a skip crosses partitions (a device-to-device copy per micro-batch)",
         "none: a cost report", opt_in=True),
    Rule("SKP303", "profiled-skippable",
         "{func}() profiles layers in isolation; the skippable layers of this composition fail there",
         "balance_by_time applied to a composition in which a popped and used skip shares saved autograd "
         "history with its stashing layer's output",
         "RuntimeError: Trying to backward through the graph a second time, during profiling (each "
         "layer's backward runs alone, and a popped skip leads back into the stashing layer's graph)"),
    Rule("SKP304", "skippable-in-multiprocess-pipe",
         "{pipe} {problem}",
         "skippable layers in LazyModule lists of fairscale's multi-process pipes, or a skip that crosses "
         "the processes of fairscale's AsyncPipe",
         "ValueError: Can't use Skippable layers with multi-process pipe and lazy construction; or, for "
         "AsyncPipe over a Sequential, RuntimeError: 'x' has not been stashed in forward"),
    Rule("SKP305", "discarded-cross-partition-pop",
         "the tensor from yield pop('{name}') {how}, and this pipe stashes it in partition {src} "
         "and pops it in partition {dst}: backward() fails; use the popped tensor",
         "a yield pop(name) whose tensor is discarded (or used only detached), in a pipe that puts the pop in "
         "another partition than its stash",
         "AssertionError in skip/portal.py during backward() (forward and eval run fine)"),
    Rule("SKP306", "mixed-namespace-routes",
         "skip {default} (default namespace) and skip {isolated} both go from partition {src} to "
         "partition {dst}: the pipe's constructor fails comparing their namespaces; isolate both, or neither",
         "in one pipe, a default-namespace skip and an isolated skip whose routes share source and "
         "destination partition",
         "AttributeError: 'NoneType' object has no attribute 'id' from the pipe's constructor "
         "(inspect_skip_layout sorts the routes); verify_skippables and a plain run pass"),
    # SKP4xx: portability
    Rule("SKP401", "removed-torch-pipeline",
         "'{module}' was removed in PyTorch 2.4; {advice}",
         "import of torch.distributed.pipeline.sync, removed in PyTorch 2.4",
         "ModuleNotFoundError on torch >= 2.4"),
    # SKP9xx: the analyzer itself
    Rule("SKP900", "unchecked-file", "could not check this file: {reason}",
         "a file could not be read or parsed (CLI only)", ""),
    Rule("SKP901", "computed-skip-name",
         "{what} is computed at run time; skiplint cannot check it",
         "a skip name or declaration is computed at run time, so the checks abstain for it",
         "", opt_in=True),
    Rule("SKP902", "internal-error", "internal error while analysing {what}: {error}; please report",
         "an internal error of the analyzer: never silent, the CLI exits 2 and flake8 shows it", ""),
)

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}
OPT_IN: frozenset[str] = frozenset(rule.code for rule in _RULES if rule.opt_in)


def selected(code: str, select: tuple[str, ...] = (), ignore: tuple[str, ...] = (),
             extend_select: tuple[str, ...] = ()) -> bool:
    """flake8-style selection by prefix: the longest matching prefix of select/ignore wins."""
    chosen = select or ("SKP",)
    best_select = max((len(p) for p in (*chosen, *extend_select) if code.startswith(p)), default=-1)
    if code in OPT_IN:
        explicit = max((len(p) for p in (*select, *extend_select) if code.startswith(p)), default=-1)
        # Opt-in codes are on only when named in full, as flake8's extend_default_ignore does.
        if explicit < len(code):
            return False
        best_select = explicit
    best_ignore = max((len(p) for p in ignore if code.startswith(p)), default=-1)
    return best_select >= 0 and best_select > best_ignore
