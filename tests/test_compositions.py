"""Composition facts and SKP2xx/SKP3xx checks, on small sources (no fixtures, no subprocesses)."""

from __future__ import annotations

import textwrap

import pytest

from skiplint import checks, engine, pipes
from tests import profiling_shapes

HEADER = '''
from collections import OrderedDict
from torch import nn
from torchgpipe import GPipe
from torchgpipe.skip import Namespace, pop, skippable, stash

@skippable(stash=["skip"])
class S(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x

@skippable(pop=["skip"])
class P(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip
'''


def models(body: str):
    text = HEADER + textwrap.dedent(body)
    both = engine.analyze_models(text, "t.py")
    assert both is not None
    return both[1]


def codes(body: str) -> list[tuple[int, str]]:
    text = HEADER + textwrap.dedent(body)
    offset = HEADER.count("\n")
    result = engine.check_text(text, "t.py", engine.Selection(extend_select=("SKP302",)))
    return sorted((d.line - offset, d.code) for d in result.diagnostics)


def only(body: str):
    found = [c for c in models(body).compositions if c.name == "model"]
    assert len(found) == 1, [c.name for c in models(body).compositions]
    return found[0]


def test_literal_children_and_kinds():
    comp = only("model = nn.Sequential(S(), nn.ReLU(), P())\n")
    assert [layer.kind for layer in comp.layers] == ["skippable", "plain", "skippable"]
    assert comp.layers[0].stash == ((None, "skip"),)
    assert comp.layers[2].pop == ((None, "skip"),)
    assert comp.complete


def test_a_layer_reads_its_class_facts_for_the_names_it_declares():
    """One record of what a class does (issue 37): a skippable layer holds its class's facts
    (no copy); what its stashes share with its output counts only the names it declares."""
    text = HEADER + textwrap.dedent('''
        @skippable(stash=["a", "c"])
        class Two(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(2, 2)

            def forward(self, x):
                h = self.lin(x)
                g = x * 2
                yield stash("a", h)
                yield stash("b", h)
                yield stash("c", g)
                return h + g

        model = nn.Sequential(Two(), nn.ReLU(), P())
    ''')
    both = engine.analyze_models(text, "t.py")
    assert both is not None
    two, relu, popping = next(c for c in both[1].compositions if c.name == "model").layers
    assert two.cls is both[0].skippables[-1] and popping.cls is both[0].skippables[1] and relu.cls is None
    assert two.cls.output_stashes == {"a", "b"} and two.cls.input_output_stashes == {"c"}
    assert two.shares_output() == {"a"}
    assert two.shares_output(input_grad=True) == {"a", "c"}


def test_namespace_identity_through_list_and_reversed_loop():
    comp = only('''
        nss = [Namespace() for _ in range(3)]
        layers = []
        for i in range(1, 4):
            layers.append(S().isolate(nss[i - 1]))
        for i in reversed(range(1, 4)):
            layers.append(P().isolate(nss[i - 1]))
        model = nn.Sequential(*layers)
    ''')
    stash_ns = [layer.stash[0][0] for layer in comp.layers[:3]]
    pop_ns = [layer.pop[0][0] for layer in comp.layers[3:]]
    assert len(set(stash_ns)) == 3 and pop_ns == stash_ns[::-1]
    assert list(checks.composition_findings(comp)) == []


def test_each_namespace_call_is_distinct_in_a_helper():
    comp = only('''
        def block():
            ns = Namespace()
            return [S().isolate(ns), P().isolate(ns)]
        model = nn.Sequential(*block(), *block())
    ''')
    assert comp.layers[0].stash[0][0] != comp.layers[2].stash[0][0]
    assert list(checks.composition_findings(comp)) == []


def test_ordered_dict_keys_and_add_module():
    comp = only('''
        d = OrderedDict()
        d["a"] = S()
        model = nn.Sequential(d)
        model.add_module("b", P())
    ''')
    assert [layer.key for layer in comp.layers] == ["a", "b"]


def test_subclass_init_with_defaults_and_call_arguments():
    found = models('''
        class Stack(nn.Sequential):
            def __init__(self, n=2):
                layers = []
                for _ in range(n):
                    layers += [S(), P()]
                super().__init__(*layers)
        model = Stack(1)
    ''')
    assert [len(c.layers) for c in found.compositions] == [2]  # Stack(1); __init__ already ran
    alone = models('''
        class Stack(nn.Sequential):
            def __init__(self, n=2):
                super().__init__(*[S() if i % 2 == 0 else P() for i in range(2 * n)])
    ''')
    assert [(c.name, len(c.layers)) for c in alone.compositions] == [("Stack", 4)]


def test_verify_order_and_codes():
    assert codes("model = nn.Sequential(P(), S())\nGPipe(model, [1, 1])\n") == [(1, "SKP201"), (1, "SKP202")]
    # A module-level model can be imported and piped elsewhere: the stash nobody pops counts.
    assert codes("model = nn.Sequential(P(), S())\n") == [(1, "SKP201"), (1, "SKP202")]
    # So can a builder's result.
    assert codes("def build():\n    return nn.Sequential(P(), S())\n") == [(2, "SKP201"), (2, "SKP202")]
    # A local that is only ever run plainly: only the pop fails; the stash nobody pops is tolerated.
    assert codes("def test(x):\n    model = nn.Sequential(P(), S())\n    model(x)\n") == [(2, "SKP201")]
    assert codes("model = nn.Sequential(S(), P(), S(), P())\n") == [(1, "SKP203"), (1, "SKP204")]


def test_namespace_mismatch_is_one_diagnostic_at_the_pop():
    found = codes('''
        ns = Namespace()
        model = nn.Sequential(
            S().isolate(ns),
            P(),
        )
    ''')
    assert found == [(5, "SKP201")]


def test_unknown_child_stops_the_check():
    assert codes("from elsewhere import X\nmodel = nn.Sequential(S(), X(), S())\n") == []
    assert codes("from elsewhere import X\nmodel = nn.Sequential(P(), X())\n") == [(2, "SKP201")]


def test_conditional_mutation_abstains():
    assert codes('''
        import random
        layers = [S()]
        if random.random() > 0.5:
            layers.append(P())
        model = nn.Sequential(*layers)
    ''') == []


def test_unbounded_loop_abstains():
    assert codes('''
        def build(depth):
            return nn.Sequential(*[P() for _ in range(depth)])
    ''') == []


def test_nested_skippables_only_reported_when_piped():
    assert codes("model = nn.Sequential(nn.Sequential(S()), P())\n") == []
    assert codes("model = nn.Sequential(nn.Sequential(S()), P())\npipe = GPipe(model, [1, 1])\n") == [
        (1, "SKP205")]


def test_balance_and_crossing():
    assert codes("pipe = GPipe(nn.Sequential(S(), P()), balance=[1, 2])\n") == [(1, "SKP301")]
    assert codes("pipe = GPipe(nn.Sequential(S(), P()), balance=[1, 1])\n") == [(1, "SKP302")]
    assert codes("pipe = GPipe(nn.Sequential(S(), P()), balance=[2])\n") == []


def test_routes_match_inspect_skip_layout_semantics():
    comp = only("ns = Namespace()\nmodel = nn.Sequential(S(), nn.ReLU(), P(), S().isolate(ns), P().isolate(ns))\n")
    found = pipes.routes(comp, [2, 3])
    assert [(r.stash_layer, r.pop_layer, r.stash_partition, r.pop_partition) for r in found] == [
        (0, 2, 0, 1), (3, 4, 1, 1)]


def test_budget_keeps_the_analyzer_finite():
    # A loop too long to unroll: unknown, so nothing is reported, and it returns promptly.
    assert codes("layers = [P() for _ in range(10**6)]\nmodel = nn.Sequential(*layers)\n") == []


def test_cross_partition_cost_report_names_every_crossing_skip() -> None:
    """SKP302 is per skip: the depth-3 U-Net at [3, 2, 2] crosses three times, depth 4 four."""
    from skiplint import engine

    path = "fixtures/compositions/unet.py"
    text = open(path, encoding="utf-8").read()
    result = engine.check_text(text, path, engine.Selection(select=("SKP302",)))
    by_line: dict[int, list[str]] = {}
    for diagnostic in result.diagnostics:
        by_line.setdefault(diagnostic.line, []).append(diagnostic.message)
    assert {line: len(messages) for line, messages in by_line.items()} == {53: 3, 54: 4}
    assert "namespaces[0] crosses from partition 0 (layer 0) to partition 2 (layer 6)" in by_line[53][0]


# -- SKP202 only where verify_skippables runs -------------------------------------------------

def test_stash_nobody_pops_is_reported_where_it_may_be_verified():
    # A local model only run plainly: the skip tracker tolerates the stash nobody pops.
    assert codes("def run(x):\n    model = nn.Sequential(S(), nn.ReLU())\n    return model(x)\n") == []
    # A module-level model or a builder's result may be piped by an importer: V5 there.
    assert codes("model = nn.Sequential(S(), nn.ReLU())\n") == [(1, "SKP202")]
    verify = "from torchgpipe.skip import verify_skippables\n"
    assert codes(verify + "model = nn.Sequential(S(), nn.ReLU())\nverify_skippables(model)\n") == [(2, "SKP202")]
    # Through a builder's return value and a variable, to the pipe.
    assert codes('''
        def build():
            return nn.Sequential(S(), nn.ReLU())
        model = build()
        pipe = GPipe(model, balance=[1, 1])
    ''') == [(3, "SKP202")]
    # The historical spelling of torchgpipe's own tests.
    old = "from torchgpipe.skip.analysis import verify_skippables\n"
    assert codes(old + "verify_skippables(nn.Sequential(S()))\n") == [(2, "SKP202")]


def test_second_stash_and_second_pop_are_reported_on_plain_compositions():
    assert codes("model = nn.Sequential(S(), S(), P())\n") == [(1, "SKP203")]
    assert codes("model = nn.Sequential(S(), P(), P())\n") == [(1, "SKP204")]


def message_texts(body: str) -> list[str]:
    text = HEADER + textwrap.dedent(body)
    return sorted(d.message for d in engine.check_text(text, "t.py").diagnostics)


def test_a_second_pop_isolated_in_the_wrong_namespace_names_the_stash_it_is_likely_meant_for():
    # Layer 4 should be in ns1, where layer 0's stash waits: SKP204 says where the stash is, and
    # the stash's SKP202 points back to the pop.
    assert message_texts("ns1, ns2 = Namespace(), Namespace()\n"
                    "model = nn.Sequential(S().isolate(ns1), S().isolate(ns2), nn.ReLU(), P().isolate(ns2),"
                    " P().isolate(ns2))\n") == [
        "SKP202 layer 0 (S) stashes 'skip' in namespace ns1 but no later layer pops it; "
        "layer 4 (P) pops 'skip' in namespace ns2 instead",
        "SKP204 layer 4 (P) pops 'skip' in namespace ns2 again (first popped by layer 3 (P)); "
        "the stash no layer pops is layer 0 (S)'s, in namespace ns1"]
    assert message_texts("ns2 = Namespace()\n"
                    "model = nn.Sequential(S(), S().isolate(ns2), P().isolate(ns2), P().isolate(ns2))\n") == [
        "SKP202 layer 0 (S) stashes 'skip' but no later layer pops it; "
        "layer 3 (P) pops 'skip' in namespace ns2 instead",
        "SKP204 layer 3 (P) pops 'skip' in namespace ns2 again (first popped by layer 2 (P)); "
        "the stash no layer pops is layer 0 (S)'s, in the default namespace"]


def test_a_second_pop_with_no_stash_waiting_is_told_how_to_isolate_it():
    assert message_texts("model = nn.Sequential(S(), P(), P())\n") == [
        "SKP204 layer 2 (P) pops 'skip' again (first popped by layer 1 (P)); isolate it with a Namespace"]
    assert message_texts("ns = Namespace()\n"
                         "model = nn.Sequential(S().isolate(ns), P().isolate(ns), P().isolate(ns))\n") == [
        "SKP204 layer 2 (P) pops 'skip' in namespace ns again (first popped by layer 1 (P)); "
        "isolate it, and a stash for it, in a Namespace of its own"]
    # A stash in another namespace that a later layer pops is not the one the second pop wants.
    assert message_texts("ns1, ns2 = Namespace(), Namespace()\n"
                    "model = nn.Sequential(S().isolate(ns1), S().isolate(ns2), P().isolate(ns2), P().isolate(ns2),"
                    " P().isolate(ns1))\n") == [
        "SKP204 layer 3 (P) pops 'skip' in namespace ns2 again (first popped by layer 2 (P)); "
        "isolate it, and a stash for it, in a Namespace of its own"]


# -- partitions given to inspect_skip_layout --------------------------------------------------

LAYOUT = "from torchgpipe.skip.layout import inspect_skip_layout\n"


def test_partitions_are_checked_together_not_alone():
    body = LAYOUT + "p1 = nn.Sequential(S())\np2 = nn.Sequential(P())\nlayout = inspect_skip_layout([p1, p2])\n"
    assert codes(body) == []
    facts = models(body)
    assert [c.name for c in facts.compositions] == ["layout"]  # the list, not p1 and p2
    whole = facts.compositions[0]
    assert [layer.label for layer in whole.layers] == ["S", "P"]
    record = [p for p in facts.pipes if p.kind == "inspect_skip_layout"]
    assert len(record) == 1 and record[0].balance == (1, 1) and record[0].composition is whole
    assert pipes.routes(whole, record[0].balance)[0].pop_partition == 1


def test_partitions_through_a_list_variable_and_a_test_function():
    assert codes(LAYOUT + textwrap.dedent('''
        def test_far():
            partitions = [nn.Sequential(S()), nn.Sequential(nn.ReLU())]
            partitions.append(nn.Sequential(P()))
            return inspect_skip_layout(partitions)
    ''')) == []


def test_partition_list_still_reports_what_fails_for_the_list():
    # inspect_skip_layout raises KeyError on a pop with no earlier stash in any partition.
    assert codes(LAYOUT + "p1 = nn.Sequential(P())\np2 = nn.Sequential(S())\ninspect_skip_layout([p1, p2])\n") == [
        (2, "SKP201")]
    # A stash nobody pops is fine there (no verify_skippables).
    assert codes(LAYOUT + "inspect_skip_layout([nn.Sequential(S()), nn.Sequential(nn.ReLU())])\n") == []


def test_partition_also_given_to_a_pipe_is_checked_as_a_model():
    assert codes(LAYOUT + "p1 = nn.Sequential(S(), nn.ReLU())\ninspect_skip_layout([p1])\nGPipe(p1, [1, 1])\n") == [
        (2, "SKP202")]


# -- SKP205: only skips that leave their child container --------------------------------------

def test_skip_kept_inside_one_child_is_not_reported():
    assert codes('''
        block = nn.Sequential(S(), nn.Linear(4, 4), P())
        model = GPipe(nn.Sequential(block, nn.Linear(4, 4)), balance=[1, 1])
    ''') == []


def test_skip_leaving_its_child_is_reported_once():
    assert codes('''
        model = GPipe(nn.Sequential(
            nn.Sequential(S(), nn.Linear(4, 4)),
            nn.Sequential(P(), nn.Linear(4, 4)),
        ), balance=[1, 1], chunks=2)
    ''') == [(3, "SKP205")]
    # A nested pop with no stash anywhere fails too; a nested stash nobody pops runs.
    assert codes("model = GPipe(nn.Sequential(nn.ReLU(), nn.Sequential(P())), balance=[1, 1])\n") == [(1, "SKP205")]
    assert codes("model = GPipe(nn.Sequential(nn.Sequential(S()), nn.ReLU()), balance=[1, 1])\n") == []


SPLIT = "model = GPipe(nn.Sequential(nn.Sequential(S(), nn.ReLU()), nn.Sequential(nn.ReLU(), P())), {})\n"


def test_a_skip_between_child_sequentials_fails_only_where_checkpointing_recomputes_across_partitions():
    # Measured on torchgpipe and fairscale (tests/runtime/test_oracle_conditions.py): the skip
    # travels in the micro-batch's tracker; in one partition, or with no recomputation, the pipe
    # runs and matches the plain model.
    for fine in ("balance=[2], chunks=4, checkpoint='always'", "balance=[1, 1]",
                 "balance=[1, 1], chunks=4, checkpoint='never'", "balance=[1, 1], chunks=1, checkpoint='except_last'",
                 "balance=[1, 1], chunks=n", "balance=[1, 1], chunks=4, checkpoint=mode", "balance=b, chunks=4"):
        assert codes(SPLIT.format(fine)) == [], fine
    for fails in ("balance=[1, 1], chunks=2", "balance=[1, 1], checkpoint='always'",
                  "balance=[1, 1], chunks=4, checkpoint='except_last'"):
        assert messages(SPLIT.format(fails)) == [(1, 42, (
            "SKP205 skippable layer 'S' is nested in child 0 (Sequential) of a Sequential given to a pipe; its skip "
            "goes from partition 0 to partition 1 in the tracker of its micro-batch, and checkpointing recomputes "
            "partition 1: backward raises 'has not been stashed'"))], fails
    # Three children, the middle one in either partition.
    three = "model = GPipe(nn.Sequential(nn.Sequential(S()), nn.ReLU(), nn.Sequential(P())), balance={}, chunks=2)\n"
    assert codes(three.format("[2, 1]")) == codes(three.format("[1, 2]")) == [(1, "SKP205")]
    assert codes(three.format("[3]")) == []
    # A pop in an earlier child than its stash fails in forward whatever the pipe; one side a
    # direct child fails verify_skippables: both are SKP205 with any balance.
    unseen = ("SKP205 skippable layer '{}' is nested in child {} (Sequential) of a Sequential given to a pipe; "
              "verify_skippables and the partitioner see only direct children")
    pop_first = ("SKP205 skippable layer 'P' is nested in child {} (Sequential) of a Sequential given to a pipe; "
                 "no layer before it stashes its skip, and verify_skippables, which sees only direct children, "
                 "does not say so: forward raises 'has not been stashed'")
    assert messages("model = GPipe(nn.Sequential(nn.Sequential(P()), nn.Sequential(S())), balance=[2])\n") == [
        (1, 42, pop_first.format(0))]
    # The skip tracker of the micro-batch, in the order the layers run: a pop first inside one
    # child, or a second pop of one stash, fails; a second stash before the pop runs.
    assert messages("model = GPipe(nn.Sequential(nn.Sequential(P(), S()), nn.ReLU()), balance=[1, 1])\n") == [
        (1, 42, pop_first.format(0))]
    assert messages("model = GPipe(nn.Sequential(nn.Sequential(S()), nn.Sequential(P()), nn.Sequential(P())), "
                    "balance=[3])\n") == [(1, 82, pop_first.format(2))]
    restash = "model = GPipe(nn.Sequential(nn.Sequential(S()), nn.Sequential(S()), nn.Sequential(P())), {})\n"
    assert codes(restash.format("balance=[3], chunks=2")) == codes(restash.format("balance=[1, 1, 1]")) == []
    assert messages(restash.format("balance=[2, 1], chunks=2")) == [(1, 62, (
        "SKP205 skippable layer 'S' is nested in child 1 (Sequential) of a Sequential given to a pipe; its skip "
        "goes from partition 0 to partition 1 in the tracker of its micro-batch, and checkpointing recomputes "
        "partition 1: backward raises 'has not been stashed'"))]
    assert messages("model = GPipe(nn.Sequential(S(), nn.Sequential(nn.ReLU(), P())), balance=[2])\n") == [
        (1, 58, unseen.format("P", 1))]


# -- child classes that build Sequentials of torch.nn layers are plain layers ------------------

DOUBLE_CONV = '''
class DoubleConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.double_conv = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    def forward(self, x):
        return self.double_conv(x)
'''


def test_child_building_torch_layers_does_not_hide_the_composition():
    found = codes(DOUBLE_CONV + "model = GPipe(nn.Sequential(P(), DoubleConv(), S()), balance=[2, 1])\n")
    offset = DOUBLE_CONV.count("\n")
    assert found == [(offset + 1, "SKP201"), (offset + 1, "SKP202")]
    comp = only(DOUBLE_CONV + "model = nn.Sequential(P(), DoubleConv(), S())\n")
    assert [layer.kind for layer in comp.layers] == ["skippable", "plain", "skippable"]


def test_child_holding_a_function_class_and_helpers_is_plain():
    comp = only('''
        import torch
        def helper(x):
            return x.detach()
        class NoPortal(nn.Module):
            class F(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x):
                    return helper(x)
            def forward(self, x):
                return self.F.apply(x)
        model = nn.Sequential(NoPortal(), S(), P())
    ''')
    assert [layer.kind for layer in comp.layers] == ["plain", "skippable", "skippable"]


def test_child_building_skippables_or_unknown_classes_stays_a_container():
    for body in (
        "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.s = S()\n",
        "from elsewhere import Base\nclass X(Base):\n    pass\n"
        "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.x = X()\n",
        "class Block(nn.Module):\n    def __init__(self, inner):\n        super().__init__()\n        self.inner = inner\n",
    ):
        comp = only(body + "model = nn.Sequential(Block(S()) if False else Block(S()), P())\n"
                    if "inner" in body else body + "model = nn.Sequential(Block(), P())\n")
        assert comp.layers[0].kind == "container", body
        assert codes(body + "model = nn.Sequential(Block(S()), P())\n" if "inner" in body
                     else body + "model = nn.Sequential(Block(), P())\n") == [], body


def test_later_defined_skippable_class_makes_a_container():
    comp = only('''
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.late = LateStash()
        model = nn.Sequential(Block(), P())

        @skippable(stash=["skip"])
        class LateStash(nn.Module):
            def forward(self, x):
                yield stash("skip", x)
                return x
    ''')
    assert comp.layers[0].kind == "container"


# -- SKP304 at the pipe call ------------------------------------------------------------------

def test_lazy_modules_are_reported_once_at_the_pipe_call():
    header = "from fairscale.nn.pipe import LazyModule, MultiProcessPipe\n"
    assert codes(header + textwrap.dedent('''
        model = [
            LazyModule(lambda: S()),
            LazyModule(lambda: nn.ReLU()),
            LazyModule(lambda: P()),
        ]
        pipe = MultiProcessPipe(model, [2, 1])
    ''')) == [(8, "SKP304")]  # the header line and the blank line of the block
    assert codes(header + "model = [LazyModule(lambda: S())]\n") == []  # no pipe: nothing fails
    assert codes(header + "pipe = MultiProcessPipe([LazyModule(lambda: nn.ReLU())], [1])\n") == []


def test_async_pipe_over_a_sequential_fails_only_for_a_skip_across_its_processes():
    # Measured (tests/runtime/test_oracle_conditions.py): AsyncPipe keeps an empty skip layout, so
    # a skip inside one rank's partition runs and one across ranks is not stashed in the popper's
    # process. The earlier MultiProcessPipe verified the Sequential and carried skips across.
    header = "from fairscale.nn.pipe import AsyncPipe, MultiProcessPipe\n"
    across = "pipe = AsyncPipe(nn.Sequential(S(), nn.ReLU(), P()), [1, 2], worker_map=workers)\n"
    assert messages(header + across) == [(2, 7, (
        "SKP304 fairscale's AsyncPipe carries no skip between its processes: skip 'skip' goes from partition 0 "
        "to partition 1, and forward raises 'has not been stashed' there"))]
    assert codes(header + "pipe = AsyncPipe(nn.Sequential(S(), P(), nn.ReLU()), [2, 1])\n") == []
    assert codes(header + "pipe = AsyncPipe(nn.Sequential(S(), nn.ReLU(), P()), balance)\n") == []
    assert codes(header + "pipe = AsyncPipe(nn.Sequential(S(), nn.ReLU(), P()), [1, 1])\n") == [(2, "SKP301")]
    assert codes(header + "pipe = MultiProcessPipe(nn.Sequential(S(), nn.ReLU(), P()), [1, 2])\n") == []
    # MultiProcessPipe runs verify_skippables on a Sequential; AsyncPipe does not.
    assert codes(header + "pipe = MultiProcessPipe(nn.Sequential(S(), nn.ReLU()), [1, 1])\n") == [(2, "SKP202")]
    assert codes(header + "pipe = AsyncPipe(nn.Sequential(S(), nn.ReLU()), [1, 1])\n") == []


def test_harness_target_is_verified():
    """`skiplint verify FILE:build` gives build()'s model to a pipe: extract can be told so."""
    import libcst as cst

    from skiplint import interpret, skippables

    text = HEADER + textwrap.dedent('''
        def build():
            return nn.Sequential(S(), nn.ReLU()), None
    ''')
    module = cst.parse_module(text)
    index = skippables.ModuleIndex(module)
    facts = skippables.extract(module, "t.py", text, index)
    # A module-level builder's result leaves the module anyway; the harness mark says so too.
    for targets, expected in (((), ["SKP202"]), (("build",), ["SKP202"])):
        model = interpret.extract(module, "t.py", facts, index, verified_functions=targets)
        assert [f.code for f in checks.model_findings(model)] == expected


def test_a_popping_layer_called_alone_is_a_composition_of_one():
    # The instance expression at the call is the popping layer's expression: `layer` or `P()`.
    assert codes("def test(x):\n    layer = P()\n    return layer(x)\n") == [(3, "SKP201")]
    assert codes("def test(x):\n    return P()(x)\n") == [(2, "SKP201")]
    found = [c for c in models("def test(x):\n    return P()(x)\n").compositions]
    assert [(c.name, [layer.label for layer in c.layers]) for c in found] == [("P()(...)", ["P"])]


def test_direct_calls_that_do_not_certainly_fail_are_not_reported():
    # A stash-only layer runs alone; an instance handed to a Sequential, a helper or an attribute
    # may run inside a model; a stash called directly fills the thread's default tracker first;
    # an unknown callee with arguments may stash anything.
    assert codes("def test(x):\n    return S()(x)\n") == []
    assert codes("def test(x):\n    layer = P()\n    model = nn.Sequential(S(), layer)\n"
                 "    layer(x)\n    return model\n") == []
    assert codes("def run(layer, x):\n    return layer(x)\n\ndef test(x):\n    return run(P(), x)\n") == []
    assert codes("class Box(nn.Module):\n    def build(self, x):\n        self.p = P()\n        return self.p(x)\n") == []
    assert codes("def test(x):\n    y = S()(x)\n    return P()(y)\n") == []
    assert codes("def test(x, model):\n    model(x)\n    return P()(x)\n") == []


TRACKER = "import pytest\nimport torch\nfrom torchgpipe.skip.tracker import SkipTracker, use_skip_tracker\n"
FRESH = ("@pytest.fixture(autouse=True)\ndef tracker():\n    made = SkipTracker()\n"
         "    with use_skip_tracker(made):\n        yield made\n\n")


def test_a_popping_layer_called_alone_is_reported_under_pytest_raises_and_try():
    # The upstream test suites' shape: the layer is defined in the test, called under pytest.raises.
    text = HEADER + TRACKER + FRESH + textwrap.dedent('''
        def test_pop_not_stashed():
            @skippable(pop=["foo"])
            class Pop(nn.Module):
                def forward(self, x):
                    foo = yield pop("foo")
                    return foo

            l1 = Pop()
            with pytest.raises(RuntimeError):
                l1(torch.tensor(42))
    ''')
    found = engine.check_text(text, "t.py").diagnostics
    line = HEADER.count("\n") + TRACKER.count("\n") + FRESH.count("\n") + 11
    assert [(d.line, d.col, d.message) for d in found] == [
        (line, 8, "SKP201 layer 'l1' (Pop) pops 'foo' but no earlier layer stashes it")]
    assert codes("import pytest\n\ndef test(x):\n    with pytest.raises(RuntimeError):\n        P()(x)\n") == \
        [(5, "SKP201")]
    assert codes("def test(x):\n    try:\n        P()(x)\n    except RuntimeError:\n        pass\n") == \
        [(3, "SKP201")]


def test_what_other_entry_points_stash_reaches_a_direct_pop_unless_each_test_has_its_own_tracker():
    # Tests run one after another on one thread: a stash one leaves in the default tracker is
    # there for the next, unless an autouse fixture makes a fresh tracker current for each test.
    other = "def test_a(x):\n    S()(x)\n\ndef test_b(x):\n    return P()(x)\n"
    assert codes(TRACKER + other) == []
    assert codes(TRACKER + FRESH + other) == [(14, "SKP201")]
    # A builder may run more than once, so its own later stash counts; the module's code runs first.
    assert codes("def build(x):\n    P()(x)\n    S()(x)\n") == []
    assert codes("P()(x)\n\ndef test(x):\n    S()(x)\n") == [(1, "SKP201")]
    assert codes("S()(x)\n\ndef test(x):\n    P()(x)\n") == []
    assert codes(TRACKER + FRESH + "S()(x)\n\ndef test(x):\n    P()(x)\n") == [(13, "SKP201")]
    # A fixture that makes a tracker current without giving a new one leaves the default's names.
    shared = FRESH.replace("made = SkipTracker()", "made = current()")
    assert codes(TRACKER + shared + other) == []


def test_a_direct_pop_inside_another_tracker_is_not_judged():
    # use_skip_tracker (or a context manager of the project, which may wrap it) makes a tracker
    # current whose contents cannot be known; torch's and pytest's do not.
    assert codes(TRACKER + "def test(t, x):\n    with use_skip_tracker(t):\n        return P()(x)\n") == []
    assert codes("from mine import tracking\n\ndef test(x):\n    with tracking():\n        return P()(x)\n") == []
    assert codes("import torch\n\ndef test(x):\n    with torch.no_grad():\n        return P()(x)\n") == \
        [(5, "SKP201")]


def test_lazy_skippables_given_to_a_pipe_class_parameter():
    lazy = "from fairscale.nn.pipe import LazyModule\n\ndef build(pipe_cls):\n    return pipe_cls("
    assert codes(lazy + "[LazyModule(lambda: S()), LazyModule(lambda: P())], balance=[1, 1])\n") == [(4, "SKP304")]
    # No skippable layer built, no balance (not a pipe's signature), or a list that is not lazy.
    assert codes(lazy + "[LazyModule(lambda: nn.ReLU())], balance=[1])\n") == []
    assert codes(lazy + "[LazyModule(lambda: S()), LazyModule(lambda: P())])\n") == []
    assert codes(lazy + "[S(), P()], balance=[1, 1])\n") == []


def test_factory_and_loop_classes_are_declared_with_the_values_bound_at_the_class_statement():
    factory = ("def make(name):\n    @skippable(pop=[name])\n    class Q(nn.Module):\n"
               "        def forward(self, x):\n            skip = yield pop(name)\n            return x + skip\n"
               "    return Q\n\n")
    assert codes(factory + "def test(x):\n    return nn.Sequential(S(), make('skip')(), make('other')())\n") == \
        [(10, "SKP201")]
    assert codes(factory + "def test(x):\n    return nn.Sequential(S(), make('skip')())\n") == []
    found = models(factory + "def test(x):\n    return nn.Sequential(S(), make('skip')())\n").compositions
    assert [[(layer.label, layer.pop) for layer in c.layers] for c in found] == [[("S", ()), ("Q", ((None, "skip"),))]]
    loop = ("made = {}\nfor name in ('skip', 'other'):\n    @skippable(stash=[name])\n    class T(nn.Module):\n"
            "        def forward(self, x):\n            yield stash(self.skip_name, x)\n            return x\n"
            "        skip_name = name\n    made[name] = T\n\n")
    assert codes(loop + "def test(x):\n    return nn.Sequential(made['other'](), P())\n") == \
        [(12, "SKP201"), (12, "SKP202")]
    assert codes(loop + "def test(x):\n    return nn.Sequential(made['skip'](), P())\n") == []
    # A factory nobody calls with known values stays unknown: the composition is not judged.
    assert codes(factory + "def test(n, x):\n    return nn.Sequential(S(), make(n)())\n") == []


PROFILED = '''
import torch
from torchgpipe.balance import balance_by_time

@skippable(stash=["skip"])
class Encode(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        x = self.lin(x)
        yield stash("skip", x)
        return torch.relu(x)

@skippable(stash=["skip"])
class Apart(nn.Module):
    def forward(self, x):
        yield stash("skip", x * 2)
        return x

@skippable(pop=["skip"])
class Drop(nn.Module):
    def forward(self, x):
        yield pop("skip")
        return x
'''


def test_profiling_fails_only_where_a_popped_skip_shares_the_stashing_layers_output() -> None:
    # Measured with both libraries in tests/runtime/test_oracle_conditions.py: a stash of the
    # untouched input, or of a tensor computed apart from the output, profiles fine, and so does a
    # pop whose tensor is thrown away.
    assert codes(PROFILED + textwrap.dedent("""
        fails = balance_by_time(2, nn.Sequential(Encode(), nn.ReLU(), P()), torch.empty(4, 4))
        stashed_input = balance_by_time(2, nn.Sequential(S(), nn.ReLU(), P()), torch.empty(4, 4))
        computed_apart = balance_by_time(2, nn.Sequential(Apart(), nn.ReLU(), P()), torch.empty(4, 4))
        never_used = balance_by_time(2, nn.Sequential(Encode(), nn.ReLU(), Drop()), torch.empty(4, 4))
    """)) == [(PROFILED.count("\n") + 2, "SKP303")]


def messages(body: str) -> list[tuple[int, int, str]]:
    text = HEADER + textwrap.dedent(body)
    offset = HEADER.count("\n")
    result = engine.check_text(text, "t.py", engine.Selection(extend_select=("SKP901",)))
    return sorted((d.line - offset, d.col, d.message) for d in result.diagnostics)


FACTORY = '''
def make(name):
    @skippable(stash=[name])
    class Made(nn.Module):
        def forward(self, x):
            yield stash(name, x)
            return x
    return Made

'''
LOOP = '''
MADE = {}
for name in ("skip", "other"):
    @skippable(stash=[name])
    class Each(nn.Module):
        skip_name = name
        def forward(self, x):
            yield stash(self.skip_name, x)
            return x
    MADE[name] = Each

'''


def test_isolate_only_naming_an_undeclared_skip_is_skp115_for_factory_and_loop_classes():
    # The class each call or iteration makes declares its own name; `only=` naming another is
    # SKP115 at the argument, as for a class written at module level, and the composition is not
    # judged past that layer.
    tail = "ns = Namespace()\nmodel = nn.Sequential({}.isolate(ns, only=['b']), P().isolate(ns))\n"
    assert messages(FACTORY + tail.format("make('skip')()")) == [
        (11, 49, "SKP115 only= names 'b', which 'Made' never declares")]
    assert messages(LOOP + tail.format("MADE['skip']()")) == [
        (13, 49, "SKP115 only= names 'b', which 'Each' never declares")]
    # The module-level class: one finding, not one from each pass.
    assert messages(tail.format("S()")) == [(2, 38, "SKP115 only= names 'b', which 'S' never declares")]
    assert messages("ns = Namespace()\nlayer = S()\nmodel = nn.Sequential(layer.isolate(ns, only=['b', 'c']), P())\n") \
        == [(3, 40, "SKP115 only= names 'b', which 'S' never declares"),
            (3, 40, "SKP115 only= names 'c', which 'S' never declares")]
    # The names it declares: checked as usual.
    assert messages(FACTORY + "ns = Namespace()\nmodel = nn.Sequential(make('skip')().isolate(ns, only=['skip']), "
                              "P().isolate(ns))\n") == []


def test_a_namespace_or_only_names_computed_at_run_time_is_skp901_at_the_argument():
    assert messages("def build(ns):\n    return nn.Sequential(S().isolate(ns), P().isolate(ns))\n") == [
        (2, 37, "SKP901 the namespace given to isolate() is computed at run time; skiplint cannot check it"),
        (2, 54, "SKP901 the namespace given to isolate() is computed at run time; skiplint cannot check it")]
    assert messages("def build(names):\n    ns = Namespace()\n"
                    "    return nn.Sequential(S().isolate(ns, only=names), P().isolate(ns, only=names))\n") == [
        (3, 41, "SKP901 the only= argument of this isolate() is computed at run time; skiplint cannot check it"),
        (3, 70, "SKP901 the only= argument of this isolate() is computed at run time; skiplint cannot check it")]
    # A builder called with a Namespace: known there.
    assert messages("def build(ns):\n    return nn.Sequential(S().isolate(ns), P().isolate(ns))\n\n"
                    "model = build(Namespace())\n") == []


@pytest.mark.parametrize("stash, pop, before", profiling_shapes.CASES)
def test_skp303_is_decided_by_autograd_dataflow(stash: str, pop: str, before: str) -> None:
    # Each case runs for real in tests/runtime/test_oracle_conditions.py with both libraries.
    text = profiling_shapes.source(stash, pop, before)
    found = [(d.line, d.col, d.message) for d in engine.check_text(text, "t.py").diagnostics]
    line = text.splitlines().index(next(l for l in text.splitlines() if l.startswith("balance = "))) + 1
    expected = [(line, 10, "SKP303 balance_by_time() profiles layers in isolation; the skippable layers of this "
                           "composition fail there")]
    assert found == (expected if profiling_shapes.fails(stash, pop, before) else [])


@pytest.mark.parametrize("name", sorted(profiling_shapes.LAYOUTS))
def test_skp303_follows_the_layout(name: str) -> None:
    # Each layout runs for real in tests/runtime/test_oracle_conditions.py with both libraries.
    text = profiling_shapes.layout_source(name)
    found = [d.code for d in engine.check_text(text, "t.py").diagnostics]
    assert found == (["SKP303"] if profiling_shapes.LAYOUTS[name][1] else [])


DETACHED = '''
import torch

@skippable(pop=["skip"])
class D(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        {use}

model = GPipe(nn.Sequential(S(), nn.ReLU(), D()), balance={balance})
'''


def test_a_pop_used_only_detached_across_partitions_is_skp305():
    # Measured (tests/runtime/test_oracle_conditions.py): no gradient flows back through it, as
    # for a discarded pop.
    detach = DETACHED.format(use="return x + skip.detach()", balance="[2, 1]")
    assert messages(detach) == [(7, 21, (
        "SKP305 the tensor from yield pop('skip') reaches the output only detached, and this pipe stashes it in "
        "partition 0 and pops it in partition 1: backward() fails; use the popped tensor"))]
    no_grad = DETACHED.format(use="with torch.no_grad():\n            y = skip * 2\n        return x + y",
                              balance="[2, 1]")
    assert [(line, message[:6]) for line, _, message in messages(no_grad)] == [(7, "SKP305")]
    in_place = DETACHED.format(use="skip.detach_()\n        return x + skip", balance="[2, 1]")
    assert [(line, col, message[:6]) for line, col, message in messages(in_place)] == [(7, 21, "SKP305")]
    # In one partition, or used with its history as well, it runs.
    assert messages(DETACHED.format(use="return x + skip.detach()", balance="[3]")) == []
    assert messages(DETACHED.format(use="y = skip.detach()\n        return x + skip + y", balance="[2, 1]")) == []
    # Rebound to its detached self: measured as `x + skip.detach()` (tests/runtime/test_oracle_conditions.py).
    # Its use with history only where the pipe does not train (profiling and training run in training mode).
    for use in ("skip = skip.detach()\n        return x + skip",
                "if self.training:\n            skip = skip.detach()\n        return x + skip",
                "if not self.training:\n            return x + skip\n        return x + skip.detach()"):
        assert [(line, col, message[:6]) for line, col, message in
                messages(DETACHED.format(use=use, balance="[2, 1]"))] == [(7, 21, "SKP305")], use
    # Detached on some path only, read with its history in a function forward defines, or after a loop
    # that may rebind it: it may reach the output, no finding.
    for use in ("if x.sum() > 0:\n            skip = skip.detach()\n        return x + skip",
                "f = lambda: skip\n        return x + f()",
                "match 1:\n            case _ if skip.sum() > 0:\n                pass\n        return x + skip.detach()",
                "match 1:\n            case _:\n                y = skip\n        return x + y.detach() + skip.detach() + y",
                "def f():\n            return x + skip\n        return f()",
                "for _ in range(len(x)):\n            skip = skip.detach()\n        return x + skip",
                "y = skip.detach()\n        for _ in range(2):\n            y = skip\n        return x + y"):
        assert messages(DETACHED.format(use=use, balance="[2, 1]")) == [], use


def test_profiling_takes_each_direct_child_whole():
    # balance_by_time profiles direct children: a skip inside one child Sequential is one backward;
    # across children it fails when only history-keeping torch.nn layers follow the stash and the pop.
    def profiled(model: str) -> list[tuple[int, str]]:
        return codes(PROFILED + f"model = nn.Sequential({model})\nb = balance_by_time(2, model, torch.randn(8, 4))\n")
    line = PROFILED.count("\n") + 2
    assert profiled("nn.Sequential(Encode(), nn.ReLU(), P()), nn.ReLU()") == []
    assert profiled("nn.Sequential(Encode(), nn.ReLU()), nn.Sequential(nn.Linear(4, 4), P(), nn.Tanh())") == \
        [(line, "SKP303")]
    assert profiled("nn.Sequential(Encode(), Mystery()), nn.Sequential(P())") == []
    assert profiled("nn.Sequential(Encode()), nn.Sequential(P(), Mystery())") == []


SPLIT_OPTIONS = '''
def build({params}):
    model = nn.Sequential(nn.Sequential(S(), nn.Linear(4, 4)), nn.Sequential(nn.Linear(4, 4), P()))
    return GPipe(model, balance=[1, 1], devices=["cpu", "cpu"]{spread})
'''


def test_pipe_options_that_cannot_be_known_are_said_so_where_some_value_fails():
    # Measured (torchgpipe, fairscale): across partitions, with chunks=2 and the default
    # checkpointing, backward raises "'skip' has not been stashed"; with chunks=1 it runs.
    assert [(line, code) for line, _, code in
            ((line, col, message[:6]) for line, col, message in messages(SPLIT_OPTIONS.format(params="**opts",
                                                                                       spread=", **opts")))] == [
        (4, "SKP901")]
    assert [m[2][:6] for m in messages(SPLIT_OPTIONS.format(params="*args", spread=", *args"))] == []
    # Known where it is called with a dict it can read.
    called = SPLIT_OPTIONS.format(params="**opts", spread=", **opts") + "\npipe = build(**{'chunks': 2})\n"
    assert [m[2][:6] for m in messages(called)] == ["SKP205"]
    called_once = SPLIT_OPTIONS.format(params="**opts", spread=", **opts") + "\npipe = build(chunks=1)\n"
    assert messages(called_once) == []
    # Whatever the options, a pipe that never recomputes the popping partition runs.
    never = SPLIT_OPTIONS.format(params="**opts", spread=", checkpoint='never', **opts")
    assert messages(never) == []


def test_a_positional_balance_given_to_a_pipe_class_that_is_a_parameter_counts():
    lazy = '''
from fairscale.nn.pipe import LazyModule

def check(pipe_class):
    model = [LazyModule(lambda: S()), LazyModule(lambda: P())]
    return pipe_class(model, [1, 1], worker_map={0: "a", 1: "b"})
'''
    assert [(line, message[:6]) for line, _, message in messages(lazy)] == [(6, "SKP304")]


STAGES = '''
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.s0 = nn.Sequential(S(), nn.Linear(4, 4))
        self.s1 = nn.Sequential(nn.Linear(4, 4), P())

    def forward(self, x):
        {body}
'''


def test_partitions_held_as_attributes_that_forward_runs_in_turn_are_one_route():
    # Measured (tests/runtime/test_oracle_conditions.py): s0 then s1 runs; s1 alone, or before
    # s0, raises "'skip' has not been stashed".
    assert codes(STAGES.format(body="x = self.s0(x)\n        return self.s1(x)")) == []
    assert codes(STAGES.format(body="return self.s1(self.s0(x))")) == []
    assert codes(STAGES.format(body="x = self.s1(x)\n        return self.s0(x)")) == [(6, "SKP201")]
    assert codes(STAGES.format(body="return self.s1(x)")) == [(6, "SKP201")]


DIRECT = '''
import torch

def run():
    x = torch.randn(2, 4)
{body}
'''


def test_direct_calls_follow_namespaces_and_pops():
    # Measured (tests/runtime/test_oracle_conditions.py): the pop finds only a stash of its own
    # namespace, and a pop takes the stash out of the tracker.
    def found(body: str) -> list[str]:
        return [code for _, code in codes(DIRECT.format(body=textwrap.indent(textwrap.dedent(body), "    ")))]

    assert found("y = S()(x)\nreturn P()(y)") == []
    assert found("ns = Namespace()\ny = S().isolate(ns)(x)\nreturn P()(y)") == ["SKP201"]
    assert found("ns = Namespace()\ny = S().isolate(ns)(x)\nreturn P().isolate(ns)(y)") == []
    assert found("y = S()(x)\ny = P()(y)\nreturn P()(y)") == ["SKP201"]
    assert found("y = S()(x)\nif x.sum() > 0:\n    y = P()(y)\nreturn P()(y)") == []


BALANCE = '''
@skippable(pop=["skip"])
class Discard(nn.Module):
    def forward(self, x):
        yield pop("skip")
        return x


def build({params}):
    return GPipe(nn.Sequential(S(), nn.ReLU(), {last}), devices=["cpu", "cpu"]{given})
'''


def test_a_balance_that_cannot_be_known_is_said_so_where_some_balance_fails():
    # Measured (tests/runtime/test_oracle_conditions.py, SKP305): a discarded pop across partitions
    # fails backward; in one partition it runs. So the outcome depends on the balance.
    for params, given in (("balance", ", balance=balance"), ("**opts", ", **opts"), ("*args", ", *args")):
        found = messages(BALANCE.format(params=params, given=given, last="Discard()"))
        assert [(line, message[:6]) for line, _, message in found] == [(10, "SKP901")], params
        assert "the balance= of this pipe" in found[0][2]
    # Whatever the balance, a used pop runs: nothing to say.
    assert messages(BALANCE.format(params="balance", given=", balance=balance", last="P()")) == []
