"""The rule reference (docs/rules.md), generated from the rule table and the examples below.

`python -m skiplint.ruledoc > docs/rules.md`; a test keeps the file equal to this output, and
checks that each bad example is reported under its code and each fixed example is not.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Optional, Sequence

from skiplint import rules

#: Where docs/rules.md is published; a rule's section is its code in lower case.
HELP_URL = "https://github.com/skiplint/skiplint/blob/main/docs/rules.md"

_TG = "from torch import nn\nfrom torchgpipe.skip import pop, skippable, stash\n"
_FS = "from torch import nn\nfrom fairscale.nn.pipe.skip import pop, skippable, stash\n"
_TG_PIPE = "from torch import nn\nfrom torchgpipe import GPipe\nfrom torchgpipe.skip import pop, skippable, stash\n"

# Two layers that most composition examples use.
_LAYERS = '''

@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Pop(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip

'''
_PIPE = ("from torch import nn\nfrom torchgpipe import GPipe\n"
         "from torchgpipe.skip import Namespace, pop, skippable, stash\n") + _LAYERS


# A layer that stashes what its own submodule computed: the skip carries that autograd graph.
_PROFILED = (
    "import torch\nfrom torch import nn\nfrom torchgpipe import GPipe\n"
    "from torchgpipe.skip import pop, skippable, stash\n" + '''

@skippable(stash=["skip"])
class Encode(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        x = self.lin(x)
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Pop(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip
''')


def _src(text: str) -> str:
    return textwrap.dedent(text).strip("\n") + "\n"


def _join(head: str, body: str) -> str:
    """A module: `head` (imports, layers), two blank lines, then `body`."""
    return head.rstrip("\n") + "\n\n\n" + _src(body)


#: code -> (bad example, fixed example); each a complete module.
EXAMPLES: dict[str, tuple[str, str]] = {
    "SKP101": (_join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                yield stash("extra", x * 2)
                return x
    '''), _join(_TG, '''

        @skippable(stash=["skip", "extra"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                yield stash("extra", x * 2)
                return x
    ''')),
    "SKP102": (_join(_FS, '''

        @skippable(pop=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                skip = yield pop("skip")
                extra = yield pop("extra")
                return x + skip + extra
    '''), _join(_FS, '''

        @skippable(pop=["skip", "extra"])
        class Layer(nn.Module):
            def forward(self, x):
                skip = yield pop("skip")
                extra = yield pop("extra")
                return x + skip + extra
    ''')),
    "SKP103": (_join(_TG, '''

        @skippable(stash=["1to2", "1to3"])
        class Layer1(nn.Module):
            def forward(self, x):
                yield stash("1to2", x)
                return x
    '''), _join(_TG, '''

        @skippable(stash=["1to2", "1to3"])
        class Layer1(nn.Module):
            def forward(self, x):
                yield stash("1to2", x)
                yield stash("1to3", x)
                return x
    ''')),
    "SKP104": (_join(_FS, '''

        @skippable(pop=["1to3", "2to3"])
        class Layer3(nn.Module):
            def forward(self, x):
                skip_1to3 = yield pop("1to3")
                return x + skip_1to3
    '''), _join(_FS, '''

        @skippable(pop=["1to3", "2to3"])
        class Layer3(nn.Module):
            def forward(self, x):
                skip_1to3 = yield pop("1to3")
                skip_2to3 = yield pop("2to3")
                return x + skip_1to3 + skip_2to3
    ''')),
    "SKP105": (_join(_TG, '''

        @skippable(stash=["skip"], pop=["skip"])
        class Relay(nn.Module):
            def forward(self, x):
                skip = yield pop("skip")
                yield stash("skip", x + skip)
                return x
    '''), _join(_TG, '''

        @skippable(stash=["skip_out"], pop=["skip_in"])
        class Relay(nn.Module):
            def forward(self, x):
                skip = yield pop("skip_in")
                yield stash("skip_out", x + skip)
                return x
    ''')),
    "SKP106": (_join(_TG, '''

        @skippable(stash="skip")  # declares 's', 'k', 'i' and 'p'
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x
    '''), _join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x
    ''')),
    "SKP107": (_join(_FS, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                stash("skip", x)
                return x
    '''), _join(_FS, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x
    ''')),
    "SKP108": (_join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                yield x * 2
    '''), _join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x * 2
    ''')),
    "SKP109": (_join(_TG, '''

        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x
    '''), _join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x
    ''')),
    "SKP110": (_join(_FS, '''

        @skippable(pop=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                skip = yield pop("skip")
                x = x + skip
                skip = yield pop("skip")
                return x * skip
    '''), _join(_FS, '''

        @skippable(pop=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                skip = yield pop("skip")
                x = x + skip
                return x * skip
    ''')),
    "SKP111": (_join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                if self.training:
                    yield stash("skip", x)
                return x
    '''), _join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                if self.training:
                    yield stash("skip", x)
                else:
                    yield stash("skip", None)  # a stash of None is a valid stash
                return x
    ''')),
    "SKP112": (_join(_TG, '''

        @skippable(stash=["foo"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("foo")
                return x
    '''), _join(_TG, '''

        @skippable(stash=["foo"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("foo", x)
                return x
    ''')),
    "SKP113": (_join(_FS, '''

        @skippable
        class Layer(nn.Module):
            def forward(self, x):
                return x
    '''), _join(_FS, '''

        @skippable()
        class Layer(nn.Module):
            def forward(self, x):
                return x
    ''')),
    "SKP114": (_join(_TG, '''

        @skippable(pop=["skip"])
        class Layer(nn.Module):
            def forward(self, x, mask):
                skip = yield pop("skip")
                return x * mask + skip
    '''), _join(_TG, '''

        @skippable(pop=["skip"])
        class Layer(nn.Module):
            def __init__(self, mask):
                super().__init__()
                self.mask = mask

            def forward(self, x):
                skip = yield pop("skip")
                return x * self.mask + skip
    ''')),
    "SKP115": (_join(_TG.replace("pop, ", "Namespace, pop, "), '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x


        layer = Layer().isolate(Namespace(), only=["skp"])
    '''), _join(_TG.replace("pop, ", "Namespace, pop, "), '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x


        layer = Layer().isolate(Namespace(), only=["skip"])
    ''')),
    "SKP116": (_join(_FS, '''

        @skippable(pop=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield pop("skip")
                return x
    '''), _join(_FS, '''

        @skippable(pop=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                skip = yield pop("skip")
                return x + skip
    ''')),
    "SKP117": (_join(_TG, '''

        STASHERS = {}
        for name in ("enc0", "enc1"):
            @skippable(stash=[name])
            class Stasher(nn.Module):
                def forward(self, x):
                    yield stash(name, x)  # runs after the loop: name is "enc1"
                    return x

            STASHERS[name] = Stasher
    '''), _join(_TG, '''

        STASHERS = {}
        for name in ("enc0", "enc1"):
            @skippable(stash=[name])
            class Stasher(nn.Module):
                skip_name = name  # read when the class is made

                def forward(self, x):
                    yield stash(self.skip_name, x)
                    return x

            STASHERS[name] = Stasher
    ''')),
    "SKP201": (_join(_PIPE, '''
        model = GPipe(nn.Sequential(Pop(), nn.ReLU(), Stash()), balance=[2, 1], chunks=4)
    '''), _join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[2, 1], chunks=4)
    ''')),
    "SKP202": (_join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU()), balance=[1, 1], chunks=4)
    '''), _join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[2, 1], chunks=4)
    ''')),
    "SKP203": (_join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), Stash(), Pop()), balance=[2, 1], chunks=4)
    '''), _join(_PIPE, '''
        ns1, ns2 = Namespace(), Namespace()
        model = GPipe(
            nn.Sequential(
                Stash().isolate(ns1), Pop().isolate(ns1),
                Stash().isolate(ns2), Pop().isolate(ns2),
            ),
            balance=[2, 2], chunks=4,
        )
    ''')),
    "SKP204": (_join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), Pop(), Pop()), balance=[2, 1], chunks=4)
    '''), _join(_PIPE, '''
        ns1, ns2 = Namespace(), Namespace()
        model = GPipe(
            nn.Sequential(
                Stash().isolate(ns1), Pop().isolate(ns1),
                Stash().isolate(ns2), Pop().isolate(ns2),
            ),
            balance=[2, 2], chunks=4,
        )
    ''')),
    "SKP205": (_join(_PIPE, '''
        block = nn.Sequential(nn.ReLU(), Pop())
        model = GPipe(nn.Sequential(Stash(), block), balance=[1, 1], chunks=4)
    '''), _join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[2, 1], chunks=4)
    ''')),
    "SKP301": (_join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[1, 1], chunks=4)
    '''), _join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[2, 1], chunks=4)
    ''')),
    "SKP302": (_join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[1, 2], chunks=4)
    '''), _join(_PIPE, '''
        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Pop(), nn.ReLU()), balance=[3, 1], chunks=4)
    ''')),
    "SKP303": (_join(_PROFILED.replace("from torchgpipe import GPipe\n",
                                       "from torchgpipe import GPipe\nfrom torchgpipe.balance import balance_by_time\n"),
                     '''
        layers = nn.Sequential(Encode(), nn.ReLU(), Pop())
        balance = balance_by_time(2, layers, torch.empty(64, 16), device=torch.device("cpu"))
        model = GPipe(layers, balance=balance, chunks=4)
    '''), _join(_PROFILED, '''
        layers = nn.Sequential(Encode(), nn.ReLU(), Pop())
        model = GPipe(layers, balance=[2, 1], chunks=4)
    ''')),
    "SKP304": (_join(_PIPE.replace("from torchgpipe import GPipe\n", "from fairscale.nn.pipe import AsyncPipe\n")
               .replace("torchgpipe.skip", "fairscale.nn.pipe.skip"), '''
        model = AsyncPipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[2, 1], chunks=4)
    '''), _join(_PIPE.replace("from torchgpipe import GPipe\n", "from fairscale.nn import Pipe\n")
               .replace("torchgpipe.skip", "fairscale.nn.pipe.skip"), '''
        model = Pipe(nn.Sequential(Stash(), nn.ReLU(), Pop()), balance=[2, 1], chunks=4)
    ''')),
    "SKP305": (_join(_TG_PIPE, '''

        @skippable(stash=["skip"])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x


        @skippable(pop=["skip"])
        class Drop(nn.Module):
            def forward(self, x):
                yield pop("skip")
                return x


        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Drop()), balance=[2, 1], chunks=4)
    '''), _join(_TG_PIPE, '''

        @skippable(stash=["skip"])
        class Stash(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x


        @skippable(pop=["skip"])
        class Merge(nn.Module):
            def forward(self, x):
                skip = yield pop("skip")
                return x + skip


        model = GPipe(nn.Sequential(Stash(), nn.ReLU(), Merge()), balance=[2, 1], chunks=4)
    ''')),
    "SKP306": (_join(_PIPE, '''
        ns = Namespace()
        layers = nn.Sequential(Stash(), Stash().isolate(ns), Pop().isolate(ns), Pop())
        model = GPipe(layers, balance=[2, 2], chunks=4)
    '''), _join(_PIPE, '''
        ns, other = Namespace(), Namespace()
        layers = nn.Sequential(Stash().isolate(other), Stash().isolate(ns), Pop().isolate(ns),
                               Pop().isolate(other))
        model = GPipe(layers, balance=[2, 2], chunks=4)
    ''')),
    "SKP401": (_src('''
        from torch import nn
        from torch.distributed.pipeline.sync.skip import pop, skippable, stash
    '''), _src('''
        from torch import nn
        from torchgpipe.skip import pop, skippable, stash  # or fairscale.nn.pipe.skip
    ''')),
    "SKP900": (_src('''
        from torchgpipe.skip import skippable

        @skippable(stash=["skip"]
        class Layer:
            pass
    '''), _src('''
        from torchgpipe.skip import skippable

        @skippable(stash=["skip"])
        class Layer:
            pass
    ''')),
    "SKP901": (_join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.name = name

            def forward(self, x):
                yield stash(self.name, x)
                return x
    '''), _join(_TG, '''

        @skippable(stash=["skip"])
        class Layer(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x
    ''')),
    # No source has an internal error on purpose: the examples show the report and what to do.
    "SKP902": (_src('''
        # model.py:1:1: SKP902 internal error while analysing compositions: KeyError: 'enc'; please report
        # The other findings of model.py are still reported; the run exits with status 2.
    '''), _src('''
        # Nothing to change in model.py: report the message (and the file, if it can be shared).
        # Until a fixed skiplint is out, ignoring SKP902 (`--ignore SKP902`) keeps the rest of the run.
    ''')),
}

_GROUPS = (
    ("SKP1", "SKP1xx: one @skippable class", "What `Skippable.forward` raises when the layer runs."),
    ("SKP2", "SKP2xx: one composition",
     "What `verify_skippables` (called by every pipe's constructor) and the skip tracker raise."),
    ("SKP3", "SKP3xx: a pipe and its partitions", "GPipe, fairscale's Pipe, torch's Pipe and the balancers."),
    ("SKP4", "SKP4xx: portability", "Code that stops importing on a newer PyTorch."),
    ("SKP9", "SKP9xx: the analyzer itself", "What skiplint could not check."),
)

_INTRO = """\
# skiplint rules

<!-- Generated by `python -m skiplint.ruledoc > docs/rules.md` from skiplint/rules.py and the
examples in skiplint/ruledoc.py. Do not edit by hand: tests/test_ruledoc.py compares them. -->

Every code below is stable: put it in `# noqa: SKPnnn` comments (on the line where the
diagnostic is reported), in `--select`/`--ignore`/`--extend-select` lists and in CI
configuration. Each section shows a bad example, the fixed example, and the run-time failure the
rule prevents.

skiplint abstains when a fact cannot be known statically (names or declarations computed at run
time, layer classes it cannot see): it does not guess. One mistake gives one diagnostic; when a
declared name and a used name differ, both sides are reported, since either may be the one to fix.

Opt-in codes ({opt_in}) are off unless selected by their full code, as flake8-bugbear's
B9 codes: `skiplint --extend-select SKP116` or, in flake8, `--extend-select SKP116`.

`skiplint fix` and `skiplint check --fix` rewrite SKP106, SKP107 and SKP401 (JSON and SARIF mark
those findings fixable). A fix only makes a file strictly better: it is kept when the fixed file
lints with no finding, of any code, that the original did not have, flake8's default checks
(pyflakes, pycodestyle) report nothing new, and every byte outside the edit is kept; otherwise
the file is left as it was and the reason is printed. SKP902 is the analyzer's own bug, never a finding
about your model: the file counts as not checked (exit 2), the rest of it is still reported.

A note on flake8-bugbear and ruff: a forward that only stashes is a generator that returns a
value, which their rule B901 (`return` in a generator) flags. For a skippable layer that `return`
is the layer's output and is correct; projects silence it on that line with `# noqa: B901`.

| code | name | finds |
|---|---|---|
"""


def _section(code: str) -> list[str]:
    rule = rules.RULES[code]
    bad, fixed = EXAMPLES[code]
    out = [f'<a id="{code.lower()}"></a>', "", f"### {code} `{rule.name}`", "", _sentence(rule.summary), ""]
    if rule.opt_in:
        out += [f"Opt-in: reported only when selected, e.g. `--extend-select {code}`.", ""]
    out += [f"Message: `{rule.code} {rule.template}`", ""]
    out += [f"Reported at: {rule.reported_at}.", ""]
    if rule.when:
        out += [f"When: {rule.when}.", ""]
    out += [f"Run-time failure it prevents: {_failure(rule)}.", ""]
    out += ["Bad:", "", "```python", bad.rstrip("\n"), "```", "", "Fixed:", "", "```python",
            fixed.rstrip("\n"), "```", ""]
    return out


#: First words of summaries that are code (a name of the API or of Python), never capitalised.
_CODE_WORDS = frozenset({"yield", "stash", "pop", "forward"})


def _sentence(text: str) -> str:
    """A summary as a sentence: a capital letter, unless the summary begins with code whose case
    matters (`stash(name, ...)`, `pop(name)`, `.isolate(...)`), and a full stop."""
    first = text.split(" ", 1)[0]
    if not (set(first) & set("()[]=./_@") or first in _CODE_WORDS):
        text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


def _failure(rule: rules.Rule) -> str:
    return rule.failure.replace("{name}", "x") or "none: skiplint reports what it could not check"


def rule_text(code: str) -> str:
    """`skiplint rule CODE`: the rule's section of docs/rules.md as plain text."""
    rule = rules.RULES[code]
    bad, fixed = EXAMPLES[code]
    out = [f"{code} {rule.name}" + (" (opt-in)" if rule.opt_in else ""), "",
           f"Finds: {_sentence(rule.summary)}"]
    if rule.opt_in:
        out.append(f"Opt-in: reported only when selected, e.g. --extend-select {code}.")
    out.append(f"Message: {rule.code} {rule.template}")
    out.append(f"Reported at: {rule.reported_at}.")
    if rule.when:
        out.append(f"When: {rule.when}.")
    out += [f"Run-time failure it prevents: {_failure(rule)}.", "",
            "Bad:", "", textwrap.indent(bad.rstrip("\n"), "    ", lambda _line: True), "",
            "Fixed:", "", textwrap.indent(fixed.rstrip("\n"), "    ", lambda _line: True), "",
            f"Documentation: {HELP_URL}#{code.lower()}", ""]
    return "\n".join(line.rstrip() for line in out)


def rule_json(code: str) -> dict[str, object]:
    """`skiplint rule --format json`: the same facts as rule_text, as one object."""
    rule = rules.RULES[code]
    bad, fixed = EXAMPLES[code]
    return {
        "code": code, "name": rule.name, "summary": rule.summary, "opt_in": rule.opt_in,
        "message": rule.template, "reported_at": rule.reported_at, "when": rule.when,
        "failure": rule.failure, "bad": bad, "fixed": fixed, "url": f"{HELP_URL}#{code.lower()}",
    }


def render() -> str:
    """The whole of docs/rules.md."""
    lines = [_INTRO.format(opt_in=", ".join(sorted(rules.OPT_IN))).rstrip("\n")]
    for code, rule in rules.RULES.items():
        flag = " (opt-in)" if rule.opt_in else ""
        lines.append(f"| [{code}](#{code.lower()}) | `{rule.name}`{flag} | {rule.summary} |")
    lines.append("")
    for prefix, title, blurb in _GROUPS:
        codes = [code for code in rules.RULES if code.startswith(prefix)]
        if not codes:
            continue
        lines += [f"## {title}", "", blurb, ""]
        for code in codes:
            lines += _section(code)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
