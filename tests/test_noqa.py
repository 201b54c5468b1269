"""`# noqa` comments as the CLI reads them (flake8 reads its own), and where they apply."""

from __future__ import annotations

import pytest

from skiplint import engine, noqa

SOURCE = '''\
from torchgpipe.skip import skippable, stash


@skippable(stash=["skip"])
class Stash:
    def forward(self, x):
        yield stash("skip", x)
        yield stash("extra", x){comment}
        return x
'''


@pytest.mark.parametrize("line, codes", [
    ("x = 1", None),
    ("x = 1  # a comment about noqa", None),
    ("x = 1  # noqa", ()),
    ("x = 1  # NOQA", ()),
    ("x = 1  # noqa: SKP101", ("SKP101",)),
    ("x = 1  # noqa:SKP101", ("SKP101",)),
    ("x = 1  # noqa: SKP101,SKP102", ("SKP101", "SKP102")),
    ("x = 1  # noqa: SKP101, SKP102", ("SKP101", "SKP102")),
    ("x = 1  # noqa: SKP101 SKP102", ("SKP101", "SKP102")),
    ("x = 1  # noqa: SKP1", ("SKP1",)),
    ("x = 1  # type: ignore  # noqa: E501", ("E501",)),
])
def test_suppressed_codes(line: str, codes: tuple[str, ...] | None) -> None:
    assert noqa.suppressed_codes(line) == codes


@pytest.mark.parametrize("line, suppressed", [
    ("x  # noqa", True),
    ("x  # noqa: SKP101", True),
    ("x  # noqa: SKP1", True),
    ("x  # noqa: SKP", True),
    ("x  # noqa: E501,SKP101", True),
    ("x  # noqa: SKP102", False),
    ("x  # noqa: SKP1010", False),
    ("x  # noqa: E501", False),
    ("x", False),
])
def test_a_lines_noqa_covers(line: str, suppressed: bool) -> None:
    assert noqa.covers(noqa.suppressed_codes(line), "SKP101") is suppressed


@pytest.mark.parametrize("comment, reported", [
    ("", True),
    ("  # noqa", False),
    ("  # noqa: SKP101", False),
    ("  # noqa: SKP102", True),
])
def test_check_text_applies_noqa_on_the_reported_line(comment: str, reported: bool) -> None:
    result = engine.check_text(SOURCE.format(comment=comment), "m.py")
    assert [d.code for d in result.diagnostics] == (["SKP101"] if reported else [])


def test_check_text_leaves_noqa_to_flake8_when_asked() -> None:
    result = engine.check_text(SOURCE.format(comment="  # noqa"), "m.py", apply_noqa=False)
    assert [(d.line, d.code) for d in result.diagnostics] == [(8, "SKP101")]


def test_noqa_on_a_docstring_line_does_not_leak() -> None:
    source = SOURCE.format(comment="").replace("class Stash:", 'class Stash:\n    """# noqa"""')
    result = engine.check_text(source, "m.py")
    assert [d.code for d in result.diagnostics] == ["SKP101"]
