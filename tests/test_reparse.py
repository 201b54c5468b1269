"""The language server's parse by statements (skiplint.reparse) gives, for every edit, the module a
whole parse gives, node for node, or leaves the text to a whole parse; the findings are the same."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Callable, Optional

import pytest

from skiplint import engine, parsing, reparse

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for p in (REPO / "fixtures").rglob("*.py") if p.stat().st_size < 20_000)

#: Lines whose typing or removal moves statement boundaries: an indented line after a block, a
#: decorator, comments at both levels, blank lines, brackets and strings left open, a backslash.
_LINES = ("    x = 1\n", "@decorator\n", "# note\n", "    # note\n", "\n", "  \n", "def f():\n", "class C:\n",
          "x = (\n", ")\n", '"""\n', "pass\n", "else:\n", "y = 2; z = 3\n", "\tx = 1\n", "if x:\n", "\\\n")
_CHARS = "()[]{}'\"\\:#@ \t\nxy=.,;"


def _line_starts(text: str) -> list[int]:
    return [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]


def _edit(rng: random.Random, text: str) -> str:
    """One edit: half of them as typing goes (a line copied or removed, a comment, a name changed),
    half anywhere with the characters and lines that move statement boundaries."""
    starts = _line_starts(text)
    at = rng.choice(starts)
    if rng.random() < 0.5:
        index = rng.randrange(len(starts))
        line = text[starts[index]:starts[index + 1]] if index + 1 < len(starts) else ""
        choice = rng.randrange(4)
        if choice == 0:
            return text[:at] + line + text[at:]
        if choice == 1:
            return text[:starts[index]] + text[starts[index] + len(line):]
        if choice == 2:
            indent = line[:len(line) - len(line.lstrip())]
            return text[:starts[index]] + indent + "# typed\n" + text[starts[index]:]
        offset = text.find("x", rng.randrange(len(text) + 1))
        return text if offset < 0 else text[:offset] + "renamed" + text[offset + 1:]
    kind = rng.randrange(6)
    if kind == 0:
        return text[:at] + rng.choice(_LINES) + text[at:]
    if kind == 1 and len(starts) > 2:
        index = rng.randrange(len(starts) - 1)
        return text[:starts[index]] + text[starts[index + 1]:]
    offset = rng.randrange(len(text) + 1)
    if kind == 2:
        return text[:offset] + rng.choice(_CHARS) + text[offset:]
    if kind == 3:
        return text[:offset] + text[offset + rng.randrange(1, 40):]
    if kind == 4:
        return text[:offset] + "".join(rng.choice(_CHARS) for _ in range(rng.randrange(1, 8))) + text[offset:]
    return text + f"# edit {rng.randrange(1000)}\n"


def _whole(text: str) -> Optional[object]:
    try:
        return parsing.parse_module(text)
    except parsing.ParseFailure as failure:
        return str(failure)


def _by_memo(memo: reparse.Memo, text: str) -> Optional[object]:
    memo.target = text
    try:
        return parsing.parse_module(text, memo=memo)
    except parsing.ParseFailure as failure:
        return str(failure)


@pytest.mark.parametrize("path", SOURCES[::5], ids=lambda p: str(p.relative_to(REPO)))
def test_every_edit_parses_as_a_whole_parse_does(path: Path) -> None:
    _edits_agree(path, 30, "")


@pytest.mark.slow
@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_edit_parses_as_a_whole_parse_does_long(path: Path) -> None:
    """The same, 100 edits on every fixture, with other seeds."""
    _edits_agree(path, 100, "long")


def _edits_agree(path: Path, edits: int, seed: str) -> int:
    """Edit the file `edits` times at random; each parse by statements is the whole parse. Returns
    how many parses were answered by statements."""
    rng = random.Random(seed + str(path.relative_to(REPO)))
    text = path.read_text(encoding="utf-8")
    memo = reparse.Memo()
    _by_memo(memo, text)
    for _ in range(edits):
        previous, text = text, _edit(rng, text)
        got, want = _by_memo(memo, text), _whole(text)
        if isinstance(want, str):
            assert got == want  # the same refusal, said the same way
            if rng.random() < 0.9:
                text = previous  # undone, as most slips are: the next edits start from valid text
        else:
            assert not isinstance(got, str), got
            assert got.deep_equals(want), text  # type: ignore[union-attr]
            assert got.code == want.code  # type: ignore[union-attr]
    return memo.reused


def test_the_random_edits_reach_the_reuse() -> None:
    """The random edits are not all left to a whole parse: over a few fixtures (its own edits, so
    that it holds whatever ran before it), more than a quarter are answered by statements."""
    paths = SOURCES[2::15]
    reused = sum(_edits_agree(path, 30, "reach") for path in paths)
    assert reused > 30 * len(paths) // 4, (reused, len(paths))


def test_the_servers_check_reuses_the_parse_of_the_previous_edit() -> None:
    """The language server's analysis (features.check: the CLI's door for the bytes of the
    buffer) hands the parse the document's own text, which the memo was told to expect."""
    from skiplint import config
    from skiplint.lsp import features

    text = (REPO / "fixtures" / "compositions" / "unet.py").read_text(encoding="utf-8")
    memo = reparse.Memo()
    at = text.rindex("class ")
    for n in range(4):
        text = text[:at] + f"# typing {n}\n" + text[at:]
        memo.target = text
        features.check(text, str(REPO / "fixtures" / "compositions" / "unet.py"), config.Config(), memo)
    assert memo.reused == 3


def test_most_edits_reuse_statements() -> None:
    """A run of typical edits in the middle of a model file is parsed by statements, not whole."""
    text = (REPO / "fixtures" / "compositions" / "unet.py").read_text(encoding="utf-8")
    memo = reparse.Memo()
    _by_memo(memo, text)
    at = text.rindex("class ")
    for n in range(10):
        text = text[:at] + f"# typing {n}\n" + text[at:]
        _by_memo(memo, text)
    assert memo.reused == 10


@pytest.mark.parametrize("edit", [
    lambda t: t.replace("class Up", "    x = 1\nclass Up", 1),  # an indented line joins the block above
    lambda t: t.replace("class Up", "@decorated\nclass Up", 1),  # a decorator joins the class below
    lambda t: t.replace("class Up", "x = (\nclass Up", 1),  # a bracket left open: refused as a whole parse does
    lambda t: t.replace("        return x + 1\n", "        return x + 1\n    # inside\n# outside\n", 1),
    lambda t: t[:-1],  # the last line break removed
    lambda t: t + "\n\n# trailing\n",
], ids=["indented", "decorator", "open-bracket", "comments", "last-break", "trailing"])
def test_edits_at_statement_boundaries(edit: Callable[[str], str]) -> None:
    text = (REPO / "fixtures" / "compositions" / "unet.py").read_text(encoding="utf-8")
    memo = reparse.Memo()
    _by_memo(memo, text)
    new = edit(text)
    assert new != text
    got, want = _by_memo(memo, new), _whole(new)
    if isinstance(want, str):
        assert got == want
    else:
        assert got.deep_equals(want)  # type: ignore[union-attr]


def test_findings_are_the_same_by_statements() -> None:
    text = (REPO / "fixtures" / "compositions" / "unet.py").read_text(encoding="utf-8")
    path = str(REPO / "fixtures" / "compositions" / "unet.py")
    memo = reparse.Memo()
    rng = random.Random(7)
    for _ in range(15):
        text = _edit(rng, text)
        memo.target = text
        got = engine.check_text(text, path, session=engine.Session(memo=memo))
        assert got == engine.check_text(text, path)
