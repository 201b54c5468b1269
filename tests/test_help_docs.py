"""The docs say what the code does: --help texts, configuration keys, options, rule codes."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import cli, config, fix, rules

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def help_text(*argv: str) -> str:
    env = dict(os.environ, COLUMNS="100")
    done = subprocess.run([sys.executable, "-m", "skiplint", *argv, "--help"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip()


def documented_block(name: str) -> str:
    text = (DOCS / "usage.md").read_text(encoding="utf-8")
    match = re.search(rf"<!-- BEGIN {re.escape(name)} -->\n```text\n(.*?)\n```\n<!-- END {re.escape(name)} -->",
                      text, re.S)
    assert match, f"docs/usage.md has no block for {name}"
    return match.group(1)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="argparse's layout differs between versions")
@pytest.mark.parametrize("argv, name", [((), "skiplint --help"), (("check",), "skiplint check --help"),
                                        (("rule",), "skiplint rule --help"), (("fix",), "skiplint fix --help"),
                                        (("server",), "skiplint server --help")])
def test_usage_shows_the_current_help(argv: tuple[str, ...], name: str) -> None:
    assert documented_block(name) == help_text(*argv), \
        f"docs/usage.md is out of date: paste `COLUMNS=100 skiplint {' '.join(argv)} --help` between the markers"


def test_usage_shows_the_current_rule_listing() -> None:
    listing = cli.rule_list().splitlines()
    assert documented_block("skiplint rule").splitlines() == ["$ skiplint rule", *listing[:2], "..."]


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings if s.startswith("--")}


def test_every_option_is_documented() -> None:
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    configuration = (DOCS / "configuration.md").read_text(encoding="utf-8")
    for option in _options(cli.check_parser()) - {"--help", "--version"}:
        assert f"`{option}" in usage + configuration, option
    for option in _options(fix.parser()) - {"--help"}:
        assert option in usage, option


def test_every_configuration_key_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    headings = re.findall(r"^### `([a-z-]+)`$", text, re.M)
    assert headings == list(config.KEYS)
    for name, section in config.CONFIG_FILES:
        assert f"`{name}`" in text and f"`[{section}]`" in text


def test_formats_and_fixable_codes_are_documented() -> None:
    usage = (DOCS / "usage.md").read_text(encoding="utf-8")
    for name in ("text", "json", "sarif", "github"):
        assert f"| `{name}`" in usage
    for code in fix.FIXABLE:
        assert f"| {code} |" in usage


def test_rule_reference_covers_every_code() -> None:
    reference = DOCS / "rules.md"
    if not reference.exists():
        pytest.skip("docs/rules.md is not written yet")
    text = reference.read_text(encoding="utf-8")
    for code in rules.RULES:
        assert code in text, code
