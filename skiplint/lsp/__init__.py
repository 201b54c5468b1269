"""`skiplint server`: a Language Server over standard input and output (the `lsp` extra).

This module imports neither pygls nor the engine: without the extra, `skiplint server` says in one
line what to install and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

EXIT_UNAVAILABLE = 2
INSTALL = "pip install 'skiplint[lsp]'"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skiplint server",
        description="Serve the Language Server Protocol over standard input and output: diagnostics "
                    "as you type (the findings of `skiplint - --stdin-display-name PATH` for each open "
                    "document), quick fixes (`skiplint fix`'s, and `# noqa: SKPnnn`), the rule on "
                    "hover, and the skip layout of a pipe call (a code lens and the command "
                    "skiplint.showLayout). Needs the lsp extra: " + INSTALL + ". Editor setups: "
                    "docs/editors.md.",
        epilog="Exit status: 0 after the client's shutdown and exit, 1 when the input ends or exit "
               "comes without shutdown, 2 when the lsp extra is not installed.")
    p.add_argument("--debounce", type=_milliseconds, default=50, metavar="MS",
                   help="an edit less than MS milliseconds after the previous one is analysed once the "
                        "typing pauses that long (default: 50; the client's setting debounce overrides it)")
    return p


def _milliseconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected milliseconds, got {value!r}") from None
    if not 0 <= number <= 10_000:
        raise argparse.ArgumentTypeError("expected milliseconds from 0 to 10000")
    return number


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        import lsprotocol.types  # noqa: F401
        import pygls.lsp.server  # noqa: F401
    except ImportError as error:
        print(f"skiplint server: the language server needs the lsp extra ({error}): {INSTALL}",
              file=sys.stderr)
        return EXIT_UNAVAILABLE
    from skiplint.lsp import server

    return server.serve(args.debounce / 1000)
