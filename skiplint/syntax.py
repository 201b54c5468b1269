"""Small, fast helpers over libcst nodes (no visitor machinery, no metadata)."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

import libcst as cst

from skiplint import textlines

# Fields that only ever hold whitespace, punctuation or comments.
_TRIVIA = frozenset({
    "lpar", "rpar", "comma", "semicolon", "header", "footer", "leading_lines",
    "lines_after_decorators", "whitespace_before", "whitespace_after", "lbracket", "rbracket",
    "lbrace", "rbrace", "colon", "equal", "star", "dot", "operator", "whitespace_before_colon",
    "whitespace_after_colon", "newline", "trailing_whitespace", "whitespace_before_params",
    "whitespace_after_def", "whitespace_after_class", "whitespace_after_func",
    "whitespace_before_args", "whitespace_after_arg", "whitespace_after_star",
    "whitespace_after_star_star", "whitespace_before_indicator", "whitespace_after_indicator",
    "whitespace_before_as", "whitespace_after_as", "whitespace_after_await",
    "whitespace_after_yield", "whitespace_after_from", "whitespace_after_import",
    "whitespace_before_import", "whitespace_after_in", "whitespace_before_in",
    "whitespace_after_for", "whitespace_before_for", "whitespace_after_if", "whitespace_before_if",
    "whitespace_before_else", "whitespace_after_else", "whitespace_before_walrus",
    "whitespace_after_walrus", "whitespace_after_lambda", "whitespace_before_test",
    "whitespace_after_test", "whitespace_after_del", "whitespace_after_return",
    "whitespace_after_raise", "whitespace_after_assert", "whitespace_after_global",
    "whitespace_after_nonlocal", "whitespace_after_case", "whitespace_after_match",
    "whitespace_after_except", "whitespace_after_async", "whitespace_after_with",
    "whitespace_after_while", "whitespace_after_cls", "whitespace_before_from",
    "whitespace_after_type", "whitespace_after_name",
})

_FIELDS: dict[type, tuple[str, ...]] = {}
#: What a field's value is, by its type: _NODE (a child), _MANY (a sequence of possible
#: children) or _NONE (whitespace nodes, sentinels, strings). Caching by type keeps libcst's
#: abstract base classes out of the walk (each isinstance against one is a slow hook).
_NONE, _NODE, _MANY = 0, 1, 2
_VALUE_KINDS: dict[type, int] = {}
#: Whether a sequence item of this type is a child (any CSTNode).
_ITEM_IS_NODE: dict[type, bool] = {}
#: Whether a node of this type opens a scope (SCOPE_NODES).
_OPENS_SCOPE: dict[type, bool] = {}


def _fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(node_type) if f.name not in _TRIVIA)
        _FIELDS[node_type] = names
    return names


def _value_kind(value_type: type) -> int:
    if issubclass(value_type, cst.CSTNode):
        kind = _NONE if issubclass(value_type, (cst.BaseParenthesizableWhitespace, cst.MaybeSentinel)) else _NODE
    elif issubclass(value_type, (tuple, list)):
        kind = _MANY
    else:
        kind = _NONE
    _VALUE_KINDS[value_type] = kind
    return kind


def _item_is_node(item_type: type) -> bool:
    _ITEM_IS_NODE[item_type] = answer = issubclass(item_type, cst.CSTNode)
    return answer


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    kinds, items = _VALUE_KINDS, _ITEM_IS_NODE
    names = _FIELDS.get(type(node))
    for name in names if names is not None else _fields(type(node)):
        value = getattr(node, name)
        kind = kinds.get(type(value))
        if kind is None:
            kind = _value_kind(type(value))
        if kind == _NODE:
            out.append(value)
        elif kind == _MANY:
            for item in value:
                is_node = items.get(type(item))
                if is_node is None:
                    is_node = _item_is_node(type(item))
                if is_node:
                    out.append(item)
    return out


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Direct child nodes in source order, skipping whitespace and punctuation fields."""
    return iter(_children(node))


#: Nodes that open a new scope: their bodies are not part of the enclosing function's flow.
SCOPE_NODES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: The same, for comparing a node's type by identity (concrete libcst node classes have no
#: subclasses; isinstance against them runs ABCMeta's Python-level check on every miss).
SCOPE_TYPES = frozenset(SCOPE_NODES)


def _opens_scope(node_type: type) -> bool:
    _OPENS_SCOPE[node_type] = answer = issubclass(node_type, SCOPE_NODES)
    return answer


def walk(node: cst.CSTNode, *, into_scopes: bool = False) -> Iterator[cst.CSTNode]:
    """Pre-order walk of a subtree; nested functions, classes and lambdas are not entered."""
    stack = [node]
    pop, extend, scopes = stack.pop, stack.extend, _OPENS_SCOPE
    while stack:
        current = pop()
        yield current
        if not into_scopes and current is not node:
            opens = scopes.get(type(current))
            if opens is None:
                opens = _opens_scope(type(current))
            if opens:
                continue
        found = _children(current)
        found.reverse()
        extend(found)


def string_value(node: cst.CSTNode) -> Optional[str]:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
    if type(node) is cst.SimpleString:
        raw = node.value
        body = raw.lstrip("rRuU")
        if (len(raw) - len(body) <= 1 and body[:1] in ("'", '"') and "\\" not in body
                and "\r" not in body):
            # No escapes and no line breaks to normalize: the text between the quotes, as
            # evaluated_value (ast.literal_eval, a compile per string) would give it.
            quotes = 3 if body[:3] in ("'''", '"""') and len(body) >= 6 else 1
            return body[quotes:-quotes]
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        try:
            value = node.evaluated_value
        except Exception:  # malformed escapes are the parser's business, not ours
            return None
        return value if isinstance(value, str) else None
    return None


def statements(block: cst.BaseSuite) -> tuple[cst.BaseStatement | cst.BaseSmallStatement, ...]:
    """The statements of an indented block or of a one-line suite."""
    return tuple(block.body)



# -- valid Python that libcst's grammar lacks ------------------------------------------------------

def _skip_trivia(text: str, pos: int, end: int, want: str) -> tuple[int, int]:
    """Count the `want` characters from `pos` to `end` between blanks, line breaks, backslash
    continuations and comments; return (count, offset of the first other character)."""
    count = 0
    while pos < end:
        char = text[pos]
        if char == want:
            count += 1
        elif char == "#":
            while pos < end and text[pos] not in "\r\n":
                pos += 1
            continue
        elif char not in " \t\f\r\n\\":
            break
        pos += 1
    return count, pos


def _char_offset(text: str, starts: list[int], line: int, byte_col: int) -> int:
    """The offset in `text` of an ast position (1-based line, UTF-8 byte column)."""
    start = starts[line - 1]
    end = starts[line] if line < len(starts) else len(text)
    return start + len(text[start:end].encode("utf-8")[:byte_col].decode("utf-8", "ignore"))


def parse_bridging_gaps(text: str) -> Optional[cst.Module]:
    """The module of a text that Python accepts and libcst 1.x does not, where the reason is a
    known gap of libcst's grammar, else None.

    The gap: an annotated assignment to a parenthesized target, `(x): int = 1` (valid since
    Python 3.0; libcst only reads a bare name, attribute or subscript there). Each such target is
    parsed as the subscript of a placeholder name, `_[(x)]: int = 1`, and then put back in place
    with its parentheses, so the module's code is the original text byte for byte.
    """
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = [node for node in ast.walk(tree) if isinstance(node, ast.AnnAssign)
             and (node.lineno, node.col_offset) != (node.target.lineno, node.target.col_offset)
             and node.target.end_lineno is not None and node.target.end_col_offset is not None]
    if not found:
        return None
    placeholder = "_skiplint_target"
    while placeholder in text:
        placeholder += "_"
    starts = textlines.line_starts(text)
    edits: list[tuple[int, int]] = []
    for node in found:
        first = _char_offset(text, starts, node.lineno, node.col_offset)
        inner = _char_offset(text, starts, node.target.lineno, node.target.col_offset)
        after = _char_offset(text, starts, node.target.end_lineno or 0, node.target.end_col_offset or 0)
        opened, _ = _skip_trivia(text, first, inner, "(")
        closed, last = 0, after
        while closed < opened and last < len(text):
            more, last = _skip_trivia(text, last, len(text), ")")
            if not more:
                return None
            closed += more
            if closed > opened:
                return None
        edits.append((first, last))
    bridged = text
    for first, last in sorted(edits, reverse=True):
        last = len(bridged[:last].rstrip(" \t\f\r\n\\"))  # just after the last `)`
        bridged = f"{bridged[:first]}{placeholder}[{bridged[first:last]}]{bridged[last:]}"
    try:
        module = cst.parse_module(bridged)
        restored = module.visit(_Unbridge(placeholder))
    except (cst.ParserSyntaxError, RecursionError, ValueError, TypeError):
        return None
    if not isinstance(restored, cst.Module) or restored.code != text:
        return None
    return restored


class _Unbridge(cst.CSTTransformer):
    def __init__(self, placeholder: str) -> None:
        super().__init__()
        self.placeholder = placeholder

    def leave_AnnAssign(self, original_node: cst.AnnAssign, updated_node: cst.AnnAssign) -> cst.AnnAssign:
        target = updated_node.target
        if (isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name)
                and target.value.value == self.placeholder and len(target.slice) == 1
                and isinstance(target.slice[0].slice, cst.Index)):
            value = target.slice[0].slice.value
            return updated_node.with_changes(target=value)
        return updated_node
