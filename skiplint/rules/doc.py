"""The rule reference, rendered from the rule units: docs/rules.md, `skiplint rule` and the hover;
and the snapshot of what skiplint says about each rule's examples.

`python -m skiplint.rules.doc --write` writes everything generated from the rules: docs/rules.md,
the `--help` blocks of docs/usage.md (which list the opt-in codes) and its sample of `skiplint rule`,
every rule's snapshot and the
code table skiplint/rules/codes.txt; tests keep them equal to this output (`python -m
skiplint.rules.doc` alone prints docs/rules.md). Each section is read from one `Rule`, its family
module (TITLE, BLURB) and its examples, `examples/skpNNN/bad.py` and `fixed.py` (shipped in the
wheel). A bad example marks each line where its rule reports with `# expect: SKPnnn`, which the
rendered examples leave out.

`import skiplint.rules` never imports this module: it is for people, not for the lint.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Optional, Sequence

from skiplint import rules
from skiplint.formats import HELP_URL

#: The example files: examples/<code in lower case>/bad.py and fixed.py.
EXAMPLES = Path(__file__).resolve().parent / "examples"

#: A marker comment at the end of a line of an example: `  # expect: SKP101, SKP112`.
MARKER = re.compile(r"[ \t]*#[ \t]*expect:[ \t]*(?P<codes>SKP\d{3}(?:[ \t]*,[ \t]*SKP\d{3})*)[ \t]*$", re.M)


def example_source(code: str, kind: str) -> str:
    """A rule's example ("bad" or "fixed") exactly as the file holds it, markers included."""
    return (EXAMPLES / code.lower() / f"{kind}.py").read_text(encoding="utf-8")


def markers(text: str) -> frozenset[tuple[int, str]]:
    """The (line, code) pairs an example's `# expect:` comments ask for."""
    found: set[tuple[int, str]] = set()
    for match in MARKER.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.update((line, code.strip()) for code in match.group("codes").split(","))
    return frozenset(found)


def example(code: str, kind: str) -> str:
    """A rule's example as the docs show it: without its `# expect:` comments."""
    return MARKER.sub("", example_source(code, kind))


def sentence(text: str) -> str:
    """A summary as a sentence: a capital letter, unless the summary begins with code whose case
    matters (`stash(name, ...)`, `pop(name)`, `.isolate(...)`), and a full stop."""
    first = text.split(" ", 1)[0]
    if not (set(first) & set("()[]=./_@") or first in _CODE_WORDS):
        text = text[0].upper() + text[1:]
    return text if text.endswith(".") else text + "."


#: First words of summaries that are code (a name of the API or of Python), never capitalised.
_CODE_WORDS = frozenset({"yield", "stash", "pop", "forward"})


def failure(rule: rules.Rule) -> str:
    """The run-time failure the rule predicts, with `x` for the skip's name."""
    return rule.failure.replace("{name}", "x") or "none: skiplint reports what it could not check"


def url(code: str) -> str:
    return f"{HELP_URL}#{code.lower()}"


def _listed(codes: Sequence[str]) -> str:
    """"A", "A and B", "A, B and C"."""
    return ", ".join(codes[:-1]) + " and " + codes[-1] if len(codes) > 1 else "".join(codes)


def _paragraphs(rule: rules.Rule, quote: str) -> list[str]:
    """What a rule's section says of it, code in `quote`s."""
    out = []
    if rule.opt_in:
        out.append(f"Opt-in: reported only when selected, e.g. {quote}--extend-select {rule.code}{quote}.")
    out += [f"Message: {quote}{rule.code} {rule.template}{quote}", f"Reported at: {rule.reported_at}."]
    if rule.when:
        out.append(f"When: {rule.when}.")
    return out + [f"Run-time failure it prevents: {failure(rule)}."]


def rule_text(code: str) -> str:
    """`skiplint rule CODE`: the rule's section of docs/rules.md as plain text."""
    rule = rules.RULES[code]
    out = [f"{code} {rule.name}" + (" (opt-in)" if rule.opt_in else ""), "",
           f"Finds: {sentence(rule.summary)}", *_paragraphs(rule, ""), ""]
    for title, kind in (("Bad:", "bad"), ("Fixed:", "fixed")):
        out += [title, "", textwrap.indent(example(code, kind).rstrip("\n"), "    ", lambda _line: True), ""]
    out += [f"Documentation: {url(code)}", ""]
    return "\n".join(line.rstrip() for line in out)


def rule_json(code: str) -> dict[str, object]:
    """`skiplint rule --format json`: the same facts as rule_text, as one object."""
    rule = rules.RULES[code]
    return {
        "code": code, "name": rule.name, "summary": rule.summary, "opt_in": rule.opt_in,
        "message": rule.template, "reported_at": rule.reported_at, "when": rule.when,
        "failure": rule.failure, "bad": example(code, "bad"), "fixed": example(code, "fixed"),
        "url": url(code),
    }


def _section(code: str) -> list[str]:
    rule = rules.RULES[code]
    out = [f'<a id="{code.lower()}"></a>', "", f"### {code} `{rule.name}`", "", sentence(rule.summary), ""]
    for paragraph in _paragraphs(rule, "`"):
        out += [paragraph, ""]
    for title, kind in (("Bad:", "bad"), ("Fixed:", "fixed")):
        out += [title, "", "```python", example(code, kind).rstrip("\n"), "```", ""]
    return out


_INTRO = """\
# skiplint rules

<!-- Generated by `python -m skiplint.rules.doc > docs/rules.md` from the rule units in
skiplint/rules/ and their examples in skiplint/rules/examples/. Do not edit by hand:
tests/test_ruledoc.py compares them. -->

Every code below is stable: put it in `# noqa: SKPnnn` comments (on the line where the
diagnostic is reported), in `--select`/`--ignore`/`--extend-select` lists and in CI
configuration. Each section shows a bad example, the fixed example, and the run-time failure the
rule prevents.

skiplint abstains when a fact cannot be known statically (names or declarations computed at run
time, layer classes it cannot see): it does not guess. One mistake gives one diagnostic; when a
declared name and a used name differ, both sides are reported, since either may be the one to fix.

Opt-in codes ({opt_in}) are off unless selected by their full code, as flake8-bugbear's
B9 codes: `skiplint --extend-select SKP116` or, in flake8, `--extend-select SKP116`.

`skiplint fix` and `skiplint check --fix` rewrite {fixable} (JSON and SARIF mark
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


def render() -> str:
    """The whole of docs/rules.md."""
    from skiplint.fix import FIXABLE

    lines = [_INTRO.format(opt_in=", ".join(sorted(rules.OPT_IN)), fixable=_listed(FIXABLE)).rstrip("\n")]
    for code, rule in rules.RULES.items():
        flag = " (opt-in)" if rule.opt_in else ""
        lines.append(f"| [{code}](#{code.lower()}) | `{rule.name}`{flag} | {rule.summary} |")
    lines.append("")
    for family in rules.FAMILIES:
        codes = [rule.code for rule in vars(family).values() if isinstance(rule, rules.Rule)]
        if codes:
            lines += [f"## {family.TITLE}", "", str(family.BLURB), ""]
            for code in codes:
                lines += _section(code)
    return "\n".join(lines).rstrip("\n") + "\n"


#: The file beside a rule's examples that holds what skiplint says about them.
SNAPSHOT = "snapshot.txt"
#: The command that writes every generated file (said in each of them).
WRITE = "python -m skiplint.rules.doc --write"


def snapshot_path(code: str) -> Path:
    return EXAMPLES / code.lower() / SNAPSHOT


def snapshot(code: str) -> str:
    """What the CLI prints for a rule's two examples with only that rule selected (`--select
    CODE`, the output piped: one finding per line), and, for a rule with a fix, the diff that
    `skiplint fix --select CODE --diff` makes of the bad example as the docs show it."""
    from skiplint import engine, fix, formats

    selection = rules.Selection(select=(code,))
    out = [f"# What skiplint says about these examples with {code} alone. Generated: {WRITE}"]
    for kind in ("bad", "fixed"):
        name = f"{kind}.py"
        out.append(f"$ skiplint --select {code} {name}")
        result = engine.check_text(example_source(code, kind), name, selection)
        out += formats.text(formats.Report([result])).splitlines()
    if rules.RULES[code].fixer is not None:
        out.append(f"$ skiplint fix --select {code} --diff bad.py  # the example without its markers")
        out += fix.diff(fix.fix_source(example(code, "bad"), "bad.py", codes=(code,))).splitlines()
    return "\n".join(out) + "\n"


#: The `--help` texts docs/usage.md shows, each between `<!-- BEGIN name -->` and `<!-- END name -->`.
HELP_BLOCKS = ((), ("check",), ("rule",), ("fix",), ("server",))
#: docs/usage.md, from a source checkout (None in an installed package).
USAGE = Path(__file__).resolve().parents[2] / "docs" / "usage.md"
RULES_MD = USAGE.parent / "rules.md"


def help_text(argv: Sequence[str]) -> str:
    """`skiplint ARGV` at 100 columns, as docs/usage.md shows it (argparse lays `--help` out on
    Python 3.11)."""
    import os
    import subprocess

    done = subprocess.run([sys.executable, "-m", "skiplint", *argv], capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="100"), check=True, timeout=60)
    return done.stdout.rstrip()


def usage_with_help(usage: str) -> str:
    """docs/usage.md with every `--help` block replaced by the current help, and the sample of
    `skiplint rule` by the first lines of the current listing (so a rule's name of any length
    changes the generated text only)."""
    blocks = [(" ".join(["skiplint", *argv, "--help"]), help_text([*argv, "--help"])) for argv in HELP_BLOCKS]
    listing = help_text(["rule"]).splitlines()
    blocks.append(("skiplint rule", "\n".join(["$ skiplint rule", *listing[:2], "..."])))
    for name, text in blocks:
        block = re.compile(rf"(<!-- BEGIN {re.escape(name)} -->\n```text\n).*?(\n```\n<!-- END {re.escape(name)} -->)",
                           re.S)
        usage = block.sub(lambda match: match.group(1) + text + match.group(2), usage)
    return usage


#: The table of the rules' codes that the flake8 plugin and the configuration read instead of
#: importing every rule module (`skiplint.config.code_table`).
CODE_TABLE = Path(__file__).resolve().parent / "codes.txt"


def code_table_text() -> str:
    """skiplint/rules/codes.txt: every code in the order of `rules.RULES`, opt-in ones marked."""
    head = ("# Every rule's code in the order of skiplint.rules.RULES, opt-in ones marked: read by the\n"
            "# flake8 plugin and the configuration, which need the codes but not the rule modules.\n"
            f"# Generated: {WRITE}\n")
    return head + "".join(f"{code}{' opt-in' if rule.opt_in else ''}\n" for code, rule in rules.RULES.items())


def write() -> None:
    """Write every file generated from the rules (see the module's docstring)."""
    RULES_MD.write_text(render(), encoding="utf-8")
    CODE_TABLE.write_text(code_table_text(), encoding="utf-8")
    if sys.version_info[:2] == (3, 11):  # the Python whose argparse layout the docs show
        USAGE.write_text(usage_with_help(USAGE.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print("docs/usage.md left as it is: its --help blocks are written on Python 3.11", file=sys.stderr)
    for code in rules.RULES:
        snapshot_path(code).write_text(snapshot(code), encoding="utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--write"]:
        write()
        return 0
    if args:
        print("usage: python -m skiplint.rules.doc [--write]", file=sys.stderr)
        return 2
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
