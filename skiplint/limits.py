"""Every limit of the static analysis, in one place; past a limit the analysis abstains.

The parser limits (the last block) keep from libcst's native parser what would crash it or take
minutes: skiplint/parsing.py scans the tokens of every text against them before parsing.
"""

from __future__ import annotations

from typing import Optional

#: Texts shorter than this cannot reach any parser limit but MAX_NESTING; kept for callers that
#: test it (the token scan itself runs on every text).
SAFE_LENGTH = 1000


def parser_hazard(text: str) -> Optional[str]:
    """Why this text must not be given to libcst (one line), or None: the token scan of parsing.py."""
    from skiplint import parsing

    refused = parsing.hazard(text)
    return None if refused is None else refused[0]


# -- what the parser is given (skiplint/parsing.py's token scan) ------------------------------------
# libcst's native parser recurses once per nesting level with no limit of its own (SIGSEGV past a
# few thousand levels) and its time grows faster than linearly with the depth of a tree: measured
# with libcst 1.9 on Python 3.11, `x = a + a + ...` of 2,000 terms takes 5 s and of 3,000 terms
# 24 s; 1,000 nested lists 14 s; 6,000 `.b` trailers 40 s and then SIGSEGV; 20,000 `elif`
# branches SIGSEGV. Its memory is about 3.5 KB per token: a 3.9 MB list literal of 75,000 calls
# (825,000 tokens) takes 140 s and 2.9 GB. Past these limits the file is reported (SKP900).

#: Open brackets (and f-string replacement fields) at once. CPython's tokenizer refuses more than
#: 200 on every supported version, so no valid file is refused for this.
MAX_NESTING = 200
#: Operators and operands in one expression between commas, colons and `=` (a bracketed group
#: counting as three): a chain of `+`, `.attr`, `[i]`, unary operators, `lambda:` or `if/else`.
MAX_EXPRESSION_RUN = 3000
#: `elif` branches of one `if` statement (each nests the rest of the chain in libcst's tree).
MAX_ELIF_CHAIN = 2000
#: Tokens in one file: what libcst parses in a few seconds and under 400 MB (a 700 KB list of
#: 13,500 calls, 148,520 tokens: 35 s and 535 MB on a loaded 2-core machine). 12 files of the
#: torch 2.13 package have more (the largest 196,408); none of them uses the skip API.
MAX_TOKENS = 100_000
