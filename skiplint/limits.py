"""Every limit of the static analysis, in one place; past a limit the analysis abstains."""

from __future__ import annotations

# -- what the parser is given: skiplint/guard.py holds every text to these before parsing ----------
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
#: Levels of libcst's tree at once, as the scan counts them: the operators and operands of every
#: expression still open (each bracket's run since its last separator, as above) and the elif
#: branches of every chain still open. The two limits above hold one run and one chain; this one
#: holds them together: 4 bracketed chains of 2,500 unary minus (each run under the limit) end
#: the process with SIGSEGV in libcst 1.9's parser (measured in an 8 MB stack on Python 3.11).
#: CPython 3.9 to 3.12 refuse trees deeper than about 2,990 levels of these themselves.
MAX_DEPTH = 3000
#: Tokens in one file: what libcst parses in a few seconds and under 400 MB (a 700 KB list of
#: 13,500 calls, 148,520 tokens: 35 s and 535 MB on a loaded 2-core machine). 12 files of the
#: torch 2.13 package have more (the largest 196,408); none of them uses the skip API.
MAX_TOKENS = 100_000


# -- one file in a worker process (`-j`, skiplint.parallel) -----------------------------------------

#: Seconds a worker process may spend on one file before the run ends that process and reports the
#: file as not checked (SKP900); the other files are still checked. It is there for a worker that
#: is stopped (SIGSTOP) or stuck, never for a slow file: every other limit here bounds a file's
#: work well below it (the largest text the parser is given, MAX_TOKENS, takes about 25 s on a
#: loaded 2-core machine; a 148,520-token list 35 s), so a file reaches it only when its process
#: does not run. A run on one job checks in its own process, unbounded by this.
FILE_SECONDS = 600.0
#: Seconds the workers are given to exit once every file is checked; a worker still there (a
#: stopped one) is then ended, so that it cannot keep the run from finishing.
WORKER_EXIT_SECONDS = 10.0
# -- room to recurse -------------------------------------------------------------------------------
# The analysis of a tree (and libcst's code generation, equality and visitors) recurses about once
# per level of it: measured with libcst 1.9 on Python 3.11, a whole check of a module with one
# chain of N unary minus, `.b` trailers, `and`, `**` or `+` terms, or N elif branches, needs about
# N + 60 frames of Python's recursion limit (1,000 by default, less the caller's own frames).

#: A tree no deeper than this (as the scan counts, above) is analysed where it is read; a deeper
#: one in a thread of its own, with DEEP_STACK_BYTES of stack and DEEP_RECURSION frames, so that
#: every tree the parser limits let through is analysed whatever the caller's stack.
SHALLOW_DEPTH = 400
#: Python's recursion limit in that thread: about 3 frames per level of the deepest tree that
#: MAX_DEPTH lets through, and the frames of the analysis around it.
DEEP_RECURSION = 12_000
#: Its stack: the C stack that DEEP_RECURSION frames use where Python frames live on it
#: (Python 3.9 and 3.10), with room to spare.
DEEP_STACK_BYTES = 256 * 1024 * 1024


# -- locating reported nodes (skiplint.positions.Locator) ----------------------------------------

#: Characters of libcst's generated code and of the source, together, aligned character by
#: character where the two differ by more than the form feeds and backslash-only lines libcst
#: rewrites (which are aligned in linear time). The alignment's time grows with about the cube
#: of this size (measured: 840 characters 0.04 s, 3,420 characters 4.1 s). Past it the nodes of
#: that module are placed where libcst's code puts them.
MAX_ALIGN_CHARS = 2000


# -- the analysis budget ------------------------------------------------------------------------

from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class Budget:
    """Every limit of the composition analysis, and the only judge of what is too big to know.

    Past any of them a value, a loop or a call becomes unknown: the analysis abstains there, and
    it never guesses, raises or spends more than these sizes allow.
    """

    #: Interpreter steps (statements and expressions evaluated) per module.
    steps: int = 200_000
    #: Iterations of one loop or comprehension that are unrolled, and items of a repetition.
    unroll: int = 256
    #: Depth of helper calls followed.
    call_depth: int = 12
    #: Bits of an integer constant (a sign aside).
    int_bits: int = 63
    #: Characters of an integer literal that is read at all.
    literal_chars: int = 80
    #: Largest product of two integers.
    product: int = 10**9
    #: Length of a str, list, tuple or dict constant.
    length: int = 4096
    #: Layers of one composition (and partitions a balance is spread over).
    layers: int = 100_000
    #: Containers followed into when collecting the skippable layers nested in one.
    nesting: int = 8
    #: Helpers and classes followed when asking whether a class's own code builds skippables.
    code_depth: int = 6
    #: Containers followed into when asking whether constructor arguments hold layers.
    held_depth: int = 4
    #: Executions of one class statement whose names are checked one by one (a factory called
    #: with different names, a class made in a loop); past it the class's computed names abstain.
    specializations: int = 64

    def allows_steps(self, steps: int) -> bool:
        return steps <= self.steps

    def allows_unroll(self, count: int) -> bool:
        return count <= self.unroll

    def allows_call(self, depth: int) -> bool:
        return depth < self.call_depth

    def allows_literal(self, digits: str) -> bool:
        return len(digits) <= self.literal_chars

    def allows_int(self, value: int) -> bool:
        return value.bit_length() <= self.int_bits

    def allows_power(self, base: int, exponent: int) -> bool:
        """Whether base ** exponent is computed: a small exponent and a result within int_bits."""
        if not 0 <= exponent < 64:
            return False
        return base in (-1, 0, 1) or (abs(base).bit_length() - 1) * exponent <= self.int_bits

    def allows_product(self, value: int) -> bool:
        return abs(value) < self.product

    def allows_length(self, length: int) -> bool:
        return length <= self.length

    def allows_layers(self, count: int) -> bool:
        return count <= self.layers


#: The budget every analysis runs under unless it is given another (`max-unroll` changes unroll).
BUDGET = Budget()


# -- one skippable class's forward (skiplint.skippables) ----------------------------------------

#: Beyond this many distinct paths, forward's path facts are given up (abstain).
MAX_STATES = 256
#: Beyond this depth of `yield from` delegation, facts are given up.
MAX_DELEGATION = 8


# -- the project index's walk over other modules (skiplint.prefilter) ---------------------------

#: Depth of re-exports followed (`__init__` importing from a submodule importing from another).
MAX_REEXPORT = 6
#: Lines read for one import statement (a safety net: a candidate that is no import statement
#: stops at its first token that an import cannot hold).
MAX_STATEMENT_LINES = 10_000
#: How many re-exported modules (`from kit import parts` where kit's `__init__` says
#: `from . import parts`) the prefilter's walk looks through: each one widens the walk to all that
#: module re-exports, so a module imported whole (`import pkg`) is read for its own names only.
MODULE_HOPS = 1


# -- parsing less (skiplint/parsing.py's StatementParts) --------------------------------------------

#: Characters of top-level statements whose libcst trees a process keeps to reuse when the same
#: statement is met again (libcst 1.9 keeps about 16 bytes of tree per character of torch's sources: some 3 MB).
PARSE_CACHE_CHARS = 200_000
#: Hashes of statements met once, kept to tell which statements come again (then forgotten).
PARSE_CACHE_SEEN = 500_000
