"""Property tests: no valid Python crashes the analyzer (hypothesmith generates the programs)."""

from __future__ import annotations

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from skiplint import engine, skippables

pytestmark = pytest.mark.slow  # long property runs: CI runs them, `-m "not slow"` skips them

PREFIXES = (
    "from torchgpipe.skip import Namespace, pop, skippable, stash\n",
    "import fairscale.nn.pipe.skip as sk\nfrom fairscale.nn.pipe.skip import pop, skippable, stash\n",
    "from torch.distributed.pipeline.sync.skip import pop, skippable, stash\n",
)

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])


def analyse(source: str) -> None:
    """Extract facts and run the whole pipeline; only a ParseFailure (SKP900) may stop it."""
    try:
        module = cst.parse_module(source)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return
    try:
        skippables.extract(module, "generated.py", source)
    except RecursionError:
        pass  # engine turns this into SKP900
    result = engine.check_text(source, "generated.py", engine.EVERYTHING)
    for diagnostic in result.diagnostics:
        assert diagnostic.message.startswith(diagnostic.code + " ")
        assert diagnostic.line >= 1 and diagnostic.col >= 0
        assert diagnostic.code != "SKP902", diagnostic.message  # an analyzer bug


@SETTINGS
@given(prefix=st.sampled_from(PREFIXES), body=hypothesmith.from_grammar())
def test_generated_modules_never_crash(prefix: str, body: str) -> None:
    analyse(prefix + body)


@SETTINGS
@given(prefix=st.sampled_from(PREFIXES), body=hypothesmith.from_node())
def test_generated_syntax_trees_never_crash(prefix: str, body: str) -> None:
    analyse(prefix + body)


# Inside a skippable class's forward, where the path analysis runs.
TEMPLATE = '''\
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["a"], pop=["b"])
class Layer:
    def forward(self, x):
{body}
'''


def _indent(text: str) -> str:
    return "".join("        " + line + "\n" for line in text.splitlines() or ["pass"])


STATEMENTS = st.sampled_from([
    'yield stash("a", x)', 'b = yield pop("b")', 'yield pop("b")', "return x", "raise ValueError",
    "break", "continue", "pass", 'stash("a", x)', "yield from self.helper(x)", "yield x + 1", "yield",
    'cmd = stash("a", x)', "yield cmd", 'yield stash(name, x)', 'yield pop()', "x = x + 1",
])


@st.composite
def forward_bodies(draw: st.DrawFn, depth: int = 0) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["simple", "simple", "if", "for", "while", "try", "with"]
                                    if depth < 3 else ["simple"]))
        if kind == "simple":
            lines.append(draw(STATEMENTS))
            continue
        inner = draw(forward_bodies(depth + 1))
        body = "".join("    " + line + "\n" for line in inner.splitlines())
        if kind == "if":
            lines.append(f"if x:\n{body}" + (f"else:\n{body}" if draw(st.booleans()) else ""))
        elif kind == "for":
            lines.append(f"for i in {draw(st.sampled_from(['range(2)', 'xs', 'range(0)']))}:\n{body}")
        elif kind == "while":
            lines.append(f"while {draw(st.sampled_from(['True', 'x']))}:\n{body}")
        elif kind == "try":
            lines.append(f"try:\n{body}except E:\n{body}"
                         + (f"finally:\n{body}" if draw(st.booleans()) else ""))
        else:
            lines.append(f"with lock:\n{body}")
    return "\n".join(line.rstrip("\n") for line in lines)


@SETTINGS
@example(body='while True:\n    yield stash("a", x)\n    break')
@given(body=forward_bodies())
def test_generated_forwards_never_crash(body: str) -> None:
    source = TEMPLATE.format(body=_indent(body))
    try:
        compile(source, "generated.py", "exec")
    except SyntaxError:
        return  # `break` outside a loop and the like
    analyse(source)
