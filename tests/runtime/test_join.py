"""The join is exact: same code, same subject, same name; everything else keeps its own verdict."""

from skiplint.runtime.join import Reach, join
from skiplint.runtime.report import LayerRef, Observation, StaticFinding


def finding(code, cls=None, layer=None, name=None, message="", **args):
    return StaticFinding("m.py", 1, 0, code, message or code, cls=cls, layer=layer, name=name, args=args)


def obs(code, layer, cls, name, step="plain Sequential"):
    return Observation(code, step, layer, cls, name, "msg")


REACH = Reach(layers={"0": "Save", "1": "Linear", "2": "Load"}, completed={"Save"}, failed={"Load"},
              verify_ran=True, layout_ran=True)


def test_confirmed_needs_the_same_class_and_name():
    static = [finding("SKP102", cls="Load", name="x"), finding("SKP102", cls="Save", name="x")]
    observations, verdicts = join([obs("SKP102", "2", "Load", "x")], static, REACH)
    assert observations[0].predicted
    assert [v.verdict for v in verdicts] == ["confirmed", "not reproduced"]


def test_a_different_name_is_missed():
    observations, verdicts = join([obs("SKP101", "0", "Save", "y")], [finding("SKP101", cls="Save", name="x")],
                                  Reach(layers=REACH.layers, failed={"Save"}))
    assert not observations[0].predicted
    assert verdicts[0].verdict == "not exercised"


def test_layer_findings_match_by_child_name():
    static = [finding("SKP201", layer=LayerRef(2, "2", "Load"), name="x")]
    observations, verdicts = join([obs("SKP201", "2", "Load", "x", "verify_skippables")], static, REACH)
    assert observations[0].predicted and verdicts[0].verdict == "confirmed"
    observations, verdicts = join([obs("SKP201", "0", "Save", "x", "verify_skippables")], static, REACH)
    assert not observations[0].predicted and verdicts[0].verdict == "not reproduced"


def test_must_be_stashed_is_the_conditional_when_the_static_pass_said_so():
    static = [finding("SKP111", cls="Save", name="x", verb="stashed")]
    observations, verdicts = join([obs("SKP103", "0", "Save", "x")], static, REACH)
    assert observations[0].code == "SKP111" and observations[0].predicted
    assert verdicts[0].verdict == "confirmed"


def test_an_undeclared_stash_is_the_late_binding_when_the_static_pass_said_so():
    static = [finding("SKP117", cls="Save", name="x")]
    observations, verdicts = join([obs("SKP101", "0", "Save", "x")], static, REACH)
    assert observations[0].code == "SKP117" and observations[0].predicted
    assert verdicts[0].verdict == "confirmed"
    observations, verdicts = join([obs("SKP101", "0", "Save", "y")], static, REACH)
    assert observations[0].code == "SKP101" and not observations[0].predicted


def test_forward_failure_behind_a_verify_failure_is_one_root_cause():
    observations, _ = join([obs("SKP105", "2", "Load", "x", "verify_skippables"),
                            obs("SKP201", "2", "Load", "x")], [], REACH)
    assert [o.code for o in observations] == ["SKP105"]


def test_silent_rules_and_absent_classes_are_not_exercised():
    static = [finding("SKP109", cls="Save", kind="stash"), finding("SKP101", cls="Other", name="x")]
    _, verdicts = join([], static, REACH)
    assert [v.verdict for v in verdicts] == ["not exercised", "not exercised"]


def test_a_failure_no_rule_reads_is_missed_whatever_the_static_pass_says():
    failure = Observation(None, "Pipe forward+backward [never]", None, None, None, "AssertionError")
    static = [finding("SKP116", cls="Drop", name="a"), finding("SKP202", layer=LayerRef(0, "0", "Save"), name="a")]
    observations, _ = join([failure], static, REACH)
    assert [(o.code, o.predicted) for o in observations] == [(None, False)]


def test_failures_no_rule_reads_are_kept_apart_by_their_message():
    same = [Observation(None, f"Pipe forward+backward [{mode}]", None, None, None, "AssertionError")
            for mode in ("never", "always")]
    other = Observation(None, "Pipe forward+backward [always]", None, None, None, "differs from the plain Sequential")
    observations, _ = join([*same, other], [], REACH)
    assert [(o.step, o.message) for o in observations] == [
        ("Pipe forward+backward [never]", "AssertionError"),
        ("Pipe forward+backward [always]", "differs from the plain Sequential")]


def test_a_pop_in_the_wrong_namespace_stands_for_the_stash_nothing_pops():
    """verify_skippables names both halves of one mistake (SKP201 at the pop, SKP202 at the stash);
    the static pass reports it once, at the pop: that finding predicts both failures."""
    static = [finding("SKP201", layer=LayerRef(2, "2", "Load"), name="x")]
    failures = [obs("SKP201", "2", "Load", "x", "verify_skippables"),
                obs("SKP202", "0", "Save", "x", "verify_skippables")]
    observations, verdicts = join(failures, static, REACH)
    assert [(o.code, o.predicted) for o in observations] == [("SKP201", True), ("SKP202", True)]
    assert [v.verdict for v in verdicts] == ["confirmed"]
    # ... and only that stash: the same name, before the pop.
    for failure in (obs("SKP202", "0", "Save", "y", "verify_skippables"),  # another name
                    obs("SKP202", "2", "Load", "x", "verify_skippables"),  # not before the pop
                    obs("SKP202", None, None, "x", "verify_skippables")):  # no layer known
        observations, verdicts = join([failure], static, REACH)
        assert not observations[0].predicted, failure
        assert verdicts[0].verdict == "not reproduced"  # a stand-in predicts; it never confirms


def test_only_the_rules_contracts_say_what_accounts_for_what():
    from skiplint.rules import RULES

    accounts = {code: [(a.code, a.place, a.confirms) for a in rule.accounts_for]
                for code, rule in RULES.items() if rule.accounts_for}
    assert accounts == {"SKP107": [("SKP103", "same", True), ("SKP104", "same", True)],
                        "SKP111": [("SKP103", "same", True), ("SKP104", "same", True)],
                        "SKP117": [("SKP101", "same", True), ("SKP102", "same", True)],
                        "SKP201": [("SKP202", "earlier layer", False)]}
    # SKP202 does not stand for SKP201: the other way round is no known mistake.
    observations, _ = join([obs("SKP201", "2", "Load", "x", "verify_skippables")],
                           [finding("SKP202", layer=LayerRef(0, "0", "Save"), name="x")], REACH)
    assert not observations[0].predicted


def test_a_child_named_like_a_label_round_trips():
    """A layer is its index, key and class: a child named `x (y` is that child, nothing parsed."""
    static = [finding("SKP203", layer=LayerRef(1, "x (y", "Save"), name="a")]
    reach = Reach(layers={"0": "Save", "x (y": "Save"}, verify_ran=True)
    observations, verdicts = join([obs("SKP203", "x (y", "Save", "a", "verify_skippables")], static, reach)
    assert observations[0].predicted and verdicts[0].verdict == "confirmed"
    assert verdicts[0].step == "verify_skippables"
    observations, verdicts = join([obs("SKP203", "x", "Save", "a", "verify_skippables")], static, reach)
    assert not observations[0].predicted and verdicts[0].verdict == "not reproduced"


def test_an_unyielded_command_reaching_a_tensor_op_is_skp107_at_its_class():
    static = [finding("SKP107", cls="Load", name="'x'", kind="pop")]
    observations, verdicts = join([obs("SKP107", "2", "Load", None)], static, REACH)
    assert observations[0].predicted and verdicts[0].verdict == "confirmed"
    # The pop never done, worded by the library as an unused pop declaration, is the same mistake.
    observations, verdicts = join([obs("SKP104", "2", "Load", "x")], static, REACH)
    assert (observations[0].code, observations[0].predicted, verdicts[0].verdict) == ("SKP107", True, "confirmed")
    observations, verdicts = join([obs("SKP103", "2", "Load", "x")], static, REACH)  # a stash: not this pop
    assert (observations[0].code, observations[0].predicted) == ("SKP103", False)


def test_the_step_that_exercised_each_finding():
    reach = Reach(layers=REACH.layers, completed={"Save"}, verify_ran=True)
    reach.performed("verify", "verify_skippables")
    reach.performed("forward", "plain Sequential")
    static = [finding("SKP202", layer=LayerRef(0, "0", "Save"), name="x"), finding("SKP101", cls="Save", name="x"),
              finding("SKP301", total="4", count="3")]
    _, verdicts = join([], static, reach)
    assert [(v.verdict, v.step) for v in verdicts] == [
        ("not reproduced", "verify_skippables"), ("not reproduced", "plain Sequential"), ("not exercised", "")]


def test_every_contract_is_whole():
    """One subject per rule; every failure a finding accounts for is a failure some rule predicts."""
    from skiplint.rules import RULES

    for code, rule in RULES.items():
        assert len({f.subject for f in rule.predicts}) <= 1, code
        for entry in rule.accounts_for:
            assert RULES[entry.code].predicts, (code, entry.code)
            assert all(key in rule.fields or key in ("name",) for key, _ in entry.when), (code, entry)
