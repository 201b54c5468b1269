"""The analysis budget (skiplint.limits.Budget): constants past it become unknown and the analysis
abstains there; it never guesses, raises, hangs or exhausts memory.

Each hostile file names the API and builds a composition and a pipe, so the interpreter really
runs it. The CLI runs in a subprocess under an address-space limit of 1 GiB (a wall limit only
guards against a hang; nothing here measures speed), and each file also holds one composition
mistake that must still be reported, at its exact place. One run checks every case's file (a
directory per case), and each case's test reads its own file's lines.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from skiplint import engine, interpret, skippables
from skiplint.positions import Locator
from skiplint.limits import BUDGET, Budget

HEADER = textwrap.dedent("""\
    import torch.nn as nn
    from torchgpipe import GPipe
    from torchgpipe.skip import skippable, stash, pop


    @skippable(pop=["h"])
    class P(nn.Module):
        def forward(self, x):
            h = yield pop("h")
            return x + h


    broken = nn.Sequential(P())
""")
#: What the composition of HEADER reports, whatever follows it.
HEADER_FINDING = "bad.py:13:24: SKP201 layer 0 (P) pops 'h' but no earlier layer stashes it"
ONE_GIB = 1 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ONE_GIB, ONE_GIB))


#: The cases whose constants are past the budget: each reports HEADER's finding alone.
PAST_THE_BUDGET = {
    "repeated-power": """\
        x = 10
        for _ in range(9):
            x = x ** 63
        pipe = GPipe(nn.Sequential(nn.Linear(1, 1)), balance=[x])
    """,
    "list-doubled-40-times": """\
        s = [nn.Linear(1, 1)]
        for _ in range(40):
            s = s + s
        pipe = GPipe(nn.Sequential(*s), balance=[len(s)])
    """,
    "str-doubled-40-times": """\
        s = "ab"
        for _ in range(40):
            s = s + s
        pipe = GPipe(nn.Sequential(nn.Linear(1, 1)), balance=[len(s)])
    """,
    "tuple-doubled-in-place": """\
        s = (nn.Linear(1, 1),)
        for _ in range(40):
            s += s
        pipe = GPipe(nn.Sequential(*s), balance=[len(s)])
    """,
    "huge-balance-entries": """\
        model = nn.Sequential(nn.Linear(1, 1), nn.Linear(1, 1))
        a = GPipe(model, balance=[10**12, 2 - 10**12])
        b = GPipe(model, balance=[10**18, 2 - 10**18])
        c = GPipe(model, balance=[2**70, 2 - 2**70])
    """,
    "int-literal-past-4300-digits":
        "n = " + "7" * 5000 + "\n" + "pipe = GPipe(nn.Sequential(nn.Linear(1, 1)), balance=[n])\n",
    "str-of-a-computed-int": """\
        m = 10 ** 62 * 10 ** 62
        for _ in range(200):
            m = m * m + m
        name = str(m)
        pipe = GPipe(nn.Sequential(nn.Linear(1, 1)), balance=[m, len(name)])
    """,
    "huge-ranges-and-repetitions": """\
        layers = [nn.Linear(1, 1) for _ in range(10**12)]
        grid = [[i * j for i in range(256)] for j in range(256)]
        pipe = GPipe(nn.Sequential(*layers), balance=[1] * 10**15)
    """,
}
NEGATIVE_BALANCE = """\
    model = nn.Sequential(nn.Linear(1, 1), nn.Linear(1, 1))
    pipe = GPipe(model, balance=[1, -10**12])
"""
NEGATIVE_BALANCE_FINDING = "bad.py:15:8: SKP301 balance sums to -999999999999 but the composition has 2 layers"


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """`skiplint` once over every case, each its own CASE/bad.py."""
    root = tmp_path_factory.mktemp("budget")
    for case, body in {**PAST_THE_BUDGET, "negative-balance": NEGATIVE_BALANCE}.items():
        (root / case).mkdir()
        (root / case / "bad.py").write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-j", "1", "."], cwd=root,
                          capture_output=True, text=True, timeout=300, preexec_fn=_limit_memory)


def lines_of(done: subprocess.CompletedProcess[str], case: str) -> list[str]:
    """The lines of `case`'s file, named as when its bad.py is checked alone."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr == "", done.stderr
    return [line[len(f"./{case}/"):] for line in done.stdout.splitlines() if line.startswith(f"./{case}/")]


def test_the_run_over_every_case_exits_1_with_their_lines_alone(budget_run: subprocess.CompletedProcess[str]) -> None:
    # Findings, and no file left unchecked (SKP900, exit 2) or analysed wrongly (SKP902, exit 2).
    assert (budget_run.returncode, budget_run.stderr) == (1, "")
    assert sorted(budget_run.stdout.splitlines()) == sorted(
        [f"./{case}/{HEADER_FINDING}" for case in [*PAST_THE_BUDGET, "negative-balance"]]
        + ["./negative-balance/" + NEGATIVE_BALANCE_FINDING])


@pytest.mark.parametrize("case", PAST_THE_BUDGET)
def test_constants_past_the_budget_are_unknown(budget_run: subprocess.CompletedProcess[str], case: str) -> None:
    assert lines_of(budget_run, case) == [HEADER_FINDING]


def test_a_negative_balance_entry_is_a_balance_mismatch_not_an_allocation(
        budget_run: subprocess.CompletedProcess[str]) -> None:
    assert lines_of(budget_run, "negative-balance") == [HEADER_FINDING, NEGATIVE_BALANCE_FINDING]


def test_flake8_survives_the_budget_cases(tmp_path: Path) -> None:
    body = HEADER + textwrap.dedent("""\
        x = 10
        for _ in range(9):
            x = x ** 63
        s = "ab"
        for _ in range(40):
            s = s + s
        pipe = GPipe(nn.Sequential(nn.Linear(1, 1)), balance=[x, len(s), 1, -10**12])
    """)
    (tmp_path / "bad.py").write_text(body, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select", "SKP", "bad.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=_limit_memory)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines() == [
        "bad.py:13:24: SKP201 layer 0 (P) pops 'h' but no earlier layer stashes it",
    ]


def balance_of(source: str) -> object:
    """The balance the interpreter gives the module's only pipe."""
    text = textwrap.dedent(source)
    module = cst.parse_module(text)
    index = skippables.ModuleIndex(module)
    locator = Locator(module)
    facts = skippables.extract(module, "t.py", text, index, locator)
    model = interpret.extract(module, "t.py", facts, index, locator)
    (pipe,) = [p for p in model.pipes if p.kind == "GPipe"]
    return pipe.balance


@pytest.mark.parametrize("expression, expected", [
    ("[2 ** 62, 1]", (2 ** 62, 1)),
    ("[2 ** 63, 1]", None),
    ("[-(2 ** 62), 1]", (-(2 ** 62), 1)),
    ("[10 ** 18, 1]", (10 ** 18, 1)),
    ("[10 ** 19, 1]", None),
    ("[30000 * 30000, 1]", (900_000_000, 1)),
    ("[40000 * 40000, 1]", None),  # the product budget
    ("[" + "9" * 80 + ", 1]", None),  # the literal budget: never read
    ("[0x" + "f" * 15 + ", 1]", (16 ** 15 - 1, 1)),
    ("[sum([2 ** 62, 2 ** 62]), 1]", None),
    ("[len(range(2 ** 62)), 1]", None),  # a range longer than the unroll budget is not iterated
    ("[len(range(-(2 ** 62), 2 ** 62)), 1]", None),  # longer than sys.maxsize
])
def test_integer_budget(expression: str, expected: object) -> None:
    assert balance_of(f"""\
        import torch.nn as nn
        from torchgpipe import GPipe
        pipe = GPipe(nn.Sequential(nn.Linear(1, 1)), balance={expression})
    """) == expected


def test_lengths_past_the_budget_are_unknown() -> None:
    assert BUDGET.length == 4096
    assert balance_of("""\
        import torch.nn as nn
        from torchgpipe import GPipe
        s = "a" * 1
        t = "ab"
        for _ in range(11):
            t = t + t
        u = t + t
        pipe = GPipe(nn.Sequential(nn.Linear(1, 1)), balance=[len(t), len(u)])
    """) is None  # len(t) == 4096 is over the unroll budget (256) of len(); u is over the length budget


def test_step_budget_ends_the_module_run_not_the_analysis() -> None:
    result = engine.check_text(textwrap.dedent("""\
        import torch.nn as nn
        from torchgpipe.skip import skippable, pop


        @skippable(pop=["h"])
        class P(nn.Module):
            def forward(self, x):
                h = yield pop("h")
                return x + h


        early = nn.Sequential(P())
        total = 0
        for i in range(256):
            for j in range(256):
                for k in range(256):
                    total = total + 1
        late = nn.Sequential(P())
    """), "t.py")
    # The step budget runs out in the loop: what was built before it is checked, the rest is unknown.
    assert [(d.line, d.code) for d in result.diagnostics] == [(12, "SKP201")]


def test_budget_decisions() -> None:
    budget = Budget()
    assert budget.allows_int(2 ** 63 - 1) and not budget.allows_int(2 ** 63)
    assert budget.allows_power(2, 63) and not budget.allows_power(2, 64) and not budget.allows_power(10, 63)
    assert budget.allows_power(1, 63) and budget.allows_power(-1, 63) and not budget.allows_power(2, -1)
    assert budget.allows_length(4096) and not budget.allows_length(4097)
    assert budget.allows_unroll(256) and not budget.allows_unroll(257)
    assert budget.allows_call(11) and not budget.allows_call(12)
    assert budget.allows_literal("9" * 80) and not budget.allows_literal("9" * 81)
    assert budget.allows_steps(200_000) and not budget.allows_steps(200_001)
    assert budget.allows_layers(100_000) and not budget.allows_layers(100_001)
