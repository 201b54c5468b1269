"""The Locator places reported nodes from the code of only the top-level statements that hold
them; where those statements begin comes from the guard's token scan."""

from __future__ import annotations

import textwrap


from skiplint import parsing, positions

MODULE = textwrap.dedent('''\
    """Doc."""
    import a; import b

    # a comment
    @dec
    # between decorators
    @other(
        1,
    )
    class C:
        x = """
    not a statement
    """


    if a:
        pass
    elif b:
        pass
    else:
        pass
    try:
        pass
    except E:
        pass
    finally:
        pass
    x = (1,
    2)
    y = 1 + \\
    2
    async def f():
        pass
    @d
    async def g(): pass
    while x: break
''')


def test_scan_starts_give_each_statement_its_first_line() -> None:
    module = parsing.parse_module(MODULE)
    scanned = parsing.StatementParts().top_level_starts(MODULE)
    assert scanned is not None and len(scanned) == len(module.body) == 10
    assert positions.scanned_lines(module, MODULE, scanned) == [1, 2, 3, 14, 22, 28, 30, 32, 34, 36]
    assert positions.scanned_lines(module, MODULE, scanned[:-1]) is None  # then the whole module's code


def test_the_scan_is_remembered_for_the_last_text_scanned() -> None:
    parts = parsing.StatementParts()
    parsing.parse_module(MODULE, parts)
    assert parts.scanned is not None and parts.scanned.text is MODULE
    assert parts.top_level_starts(MODULE.replace("Doc", "Doc")[:-1] + "\n") is not None  # equal, scanned again
    parsing.parse_module("x = 1\n", parts)
    assert parts.scanned.text == "x = 1\n"


def test_positions_from_the_scan() -> None:
    module = parsing.parse_module(MODULE)
    locator = positions.Locator(module, MODULE, parsing.StatementParts().top_level_starts(MODULE))
    cls, branch, last = module.body[2], module.body[3], module.body[-1]
    assert [locator.position(node) for node in (cls, branch, last)] == [(10, 0), (16, 0), (36, 0)]
