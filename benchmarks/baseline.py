"""One baseline over a list of files, as a whole command: read, ast.parse or libcst.parse_module.

    python benchmarks/baseline.py {read,ast,libcst} FILE_LIST

Prints one JSON line: files, how many were read/parsed, and the seconds of the loop alone.
Run as a subprocess by run.py so that every figure in the table is a whole command.
"""

from __future__ import annotations

import json
import sys
import time
import warnings


def main() -> int:
    mode, listing = sys.argv[1], sys.argv[2]
    with open(listing, encoding="utf-8") as handle:
        paths = [line.rstrip("\n") for line in handle if line.strip()]
    parse = None
    if mode == "ast":
        import ast
        parse = ast.parse
    elif mode == "libcst":
        import libcst
        parse = libcst.parse_module
    elif mode != "read":
        raise SystemExit(f"unknown mode {mode!r}")
    warnings.simplefilter("ignore")
    done = failed = 0
    start = time.perf_counter()
    for path in paths:
        try:
            with open(path, "rb") as source:
                data = source.read()
            if parse is not None:
                parse(data)
            done += 1
        except Exception:  # a baseline counts failures, it does not stop on them
            failed += 1
    seconds = time.perf_counter() - start
    print(json.dumps({"mode": mode, "files": len(paths), "ok": done, "failed": failed, "loop_s": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
