"""Small, fast helpers over libcst nodes (no visitor machinery, no metadata)."""

from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

import libcst as cst

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


def _fields(node_type: type) -> tuple[str, ...]:
    names = _FIELDS.get(node_type)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(node_type) if f.name not in _TRIVIA)
        _FIELDS[node_type] = names
    return names


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Direct child nodes in source order, skipping whitespace and punctuation fields."""
    for name in _fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            if not isinstance(value, (cst.BaseParenthesizableWhitespace, cst.MaybeSentinel)):
                yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    yield item


#: Nodes that open a new scope: their bodies are not part of the enclosing function's flow.
SCOPE_NODES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def walk(node: cst.CSTNode, *, into_scopes: bool = False) -> Iterator[cst.CSTNode]:
    """Pre-order walk of a subtree; nested functions, classes and lambdas are not entered."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not into_scopes and current is not node and isinstance(current, SCOPE_NODES):
            continue
        stack.extend(reversed(list(children(current))))


def string_value(node: cst.CSTNode) -> Optional[str]:
    """The value of a plain (non-f, non-bytes) string literal, else None."""
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

