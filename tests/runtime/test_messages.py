"""The libraries' messages read back into codes, layers and names (no run needed)."""

from skiplint.runtime.messages import parse_forward, parse_verify

VERIFY = """one or more pairs of stash and pop do not match:

* '1' declared 'a' both as stashable and as poppable
* '3' redeclared 'b' as stashable but not isolated by namespace
* 'dec' redeclared 'c' as poppable but not isolated by namespace
* '4' declared 'd' as poppable but it was not stashed
* no module declared 'e' as poppable but stashed"""


def test_every_verify_line_is_read():
    got = [(f.code, f.layer, f.name) for f in parse_verify(VERIFY)]
    assert got == [("SKP105", "1", "a"), ("SKP203", "3", "b"), ("SKP204", "dec", "c"),
                   ("SKP201", "4", "d"), ("SKP202", None, "e")]


def test_forward_messages():
    cases = [
        (RuntimeError("'a' has not been stashed"), "SKP201", "a"),
        (RuntimeError("'a' has not been declared as stashable"), "SKP101", "a"),
        (RuntimeError("'a' has not been declared as poppable"), "SKP102", "a"),
        (RuntimeError("'a' must be stashed but have not"), "SKP103", "a"),
        (RuntimeError("'a' must be popped but have not"), "SKP104", "a"),
        (TypeError("3 is not a command from @skippable"), "SKP108", None),
        (TypeError("stash.__init__() missing 1 required positional argument: 'tensor'"), "SKP112", None),
        (TypeError("Save.forward() missing 1 required positional argument: 'mask'"), "SKP114", None),
    ]
    for error, code, name in cases:
        assert [(f.code, f.name) for f in parse_forward(error)] == [(code, name)], error


def test_several_names_in_one_message():
    found = parse_forward(RuntimeError("'b', 'a' must be popped but have not"))
    assert [(f.code, f.name) for f in found] == [("SKP104", "a"), ("SKP104", "b")]


def test_key_error_is_a_second_pop_only_for_a_declared_name():
    assert [f.code for f in parse_forward(KeyError("a"), frozenset({"a"}))] == ["SKP110"]
    assert parse_forward(KeyError("a")) == []


def test_other_errors_are_not_skip_failures():
    assert parse_forward(RuntimeError("mat1 and mat2 shapes cannot be multiplied")) == []
    assert parse_forward(ValueError("'a' has not been stashed")) == []


def test_a_command_object_reaching_a_tensor_op_is_skp107():
    """torch's own words for a pop/stash object given where a tensor goes (measured on torch 2.13)."""
    cases = [
        TypeError("expected Tensor as element 1 in argument 0, but got pop"),
        TypeError("unsupported operand type(s) for +: 'Tensor' and 'pop'"),
        TypeError("unsupported operand type(s) for *: 'stash' and 'Tensor'"),
        TypeError("relu(): argument 'input' (position 1) must be Tensor, not pop"),
        TypeError("conv2d() received an invalid combination of arguments - got (pop, Tensor), but expected one of:\n"
                  " * (Tensor input, Tensor weight)"),
        AttributeError("'pop' object has no attribute 'view'"),
    ]
    for error in cases:
        assert [(f.code, f.name) for f in parse_forward(error)] == [("SKP107", None)], error
    # ... and never a call of the command's own constructor, or a tensor op on anything else.
    assert [f.code for f in parse_forward(TypeError("pop.__init__() takes 2 positional arguments but 3 were given"))] \
        == ["SKP112"]
    assert parse_forward(TypeError("expected Tensor as element 1 in argument 0, but got popcorn")) == []
    assert parse_forward(TypeError("unsupported operand type(s) for +: 'Tensor' and 'NoneType'")) == []
