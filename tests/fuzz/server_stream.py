"""Hostile byte streams for `skiplint server`, built from a seed: broken frames and headers,
requests the protocol does not allow, and ranged edits (some naming no place in the document).

`python -m tests.fuzz.server_stream --count 2000` runs the long campaign (docs/fuzzing.md). The
inputs go to real server processes, `--per-process` of them to each, one after the other; after
each input the runner sends a probe (a well-framed request) and the oracle is:

- the probe is answered (the server is alive and read the next header, whatever came before);
- a ranged-edit input that stays inside the document ends with the diagnostics that the CLI's
  door (features.check, in this process) gives for the text the client's own edits make, and
  one that leaves it is refused (its diagnostics withdrawn), never guessed;
- nothing the server sends holds a Python traceback, and at the end, after shutdown and exit, the
  exit status is 0 and standard error is empty.

A frame whose Content-Length claims more bytes than follow is not generated: its reader waits for
those bytes by design (the next frame would be read as its body), so no probe could tell.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from tests.lsp_harness import Raw, uri

REPO = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p for p in (REPO / "fixtures").rglob("*.py"))
METHODS = ["textDocument/hover", "textDocument/codeAction", "codeAction/resolve", "textDocument/codeLens",
           "workspace/executeCommand", "textDocument/didOpen", "textDocument/didChange", "textDocument/didClose",
           "textDocument/didSave", "workspace/didChangeConfiguration", "workspace/didChangeWatchedFiles",
           "$/cancelRequest", "$/setTrace", "initialize", "no/such", "initialized"]
#: What a probe waits for before the input counts as a hang (a guard, not a measurement).
PATIENCE_S = 120.0


class Case:
    """One input: the bytes to write, and for a ranged-edit input the document and its expected text
    (None: an edit named no place, so the server must have refused)."""

    def __init__(self, family: str, data: bytes, document: Optional[str] = None,
                 expected: Optional[str] = None, version: int = 0) -> None:
        self.family = family
        self.data = data
        self.document = document
        self.expected = expected
        self.version = version


def _frame(body: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    return (header % len(body) if b"%d" in header else header) + body


def _json(message: Any) -> bytes:
    return json.dumps(message).encode("utf-8", "surrogatepass")


def _junk(rng: random.Random, n: int) -> bytes:
    return bytes(rng.randrange(256) for _ in range(n))


def _value(rng: random.Random, depth: int = 0) -> Any:
    """A random JSON value (the params and data a hostile client may send)."""
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2 ** 31, 2 ** 63, -(2 ** 70), 10 ** 30])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308])
    if kind == 4:
        return rng.choice(["", "x", "file:///m.py", "\ud800", "SKP101", "noqa", "lens", "all", "fix", "\0",
                           "file://[/m.py", "file:///m%00.py", "untitled:1"])
    if kind == 5:
        return "a" * rng.choice([1, 1000, 70_000])
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    keys = ["textDocument", "uri", "position", "range", "line", "character", "context", "data", "text",
            "version", "contentChanges", "settings", "changes", "command", "arguments", "id", "languageId"]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randrange(5))}


# -- frames and headers ---------------------------------------------------------------------------------

def frames(rng: random.Random, root: Path) -> Case:
    body = _json({"jsonrpc": "2.0", "id": rng.randrange(1, 10 ** 6), "method": "textDocument/hover",
                  "params": {"textDocument": {"uri": uri(root / "m.py")}, "position": {"line": 0, "character": 0}}})
    n = len(body)
    choices: list[Callable[[], bytes]] = [
        lambda: b"Content-Length: %s\r\n\r\n" % rng.choice([b"x", b"-5", b"1e3", b"0x10", b"", b" ", b"12 34",
                                                          b"9" * 40, b"\xff"]) + body,
        lambda: b"Content-Length: %d\r\n\r\n" % rng.randrange(0, n) + body,             # short
        lambda: b"content-length: %d\r\n\r\n" % n + body,                               # any case
        lambda: b"CONTENT-LENGTH:%d\r\n\r\n" % n + body,
        lambda: b"Content-Length: %d\n\n" % n + body,                                   # LF only
        lambda: b"Content-Length: %d\r\r" % n + body,                                   # CR only
        lambda: b"Content-Length: %d\r\n" % n + body,                                   # no empty line
        lambda: b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n" % (n, n + 1) + body,
        lambda: b"X-%s: %s\r\nContent-Length: %d\r\n\r\n" % (
            b"a" * rng.choice([1, 100]), b"b" * rng.choice([10, 65_000, 70_000, 200_000]), n) + body,
        lambda: b"Content-Length: %d\r\n" % n + b"X: y\r\n" * rng.choice([1, 5000, 20000]) + b"\r\n" + body,
        lambda: _junk(rng, rng.choice([1, 10, 1000, 100_000])),
        lambda: b"\r\n" * rng.randrange(1, 50),
        lambda: b"Content-Length: 00000%d\r\n\r\n" % n + body,
        lambda: b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % n + body,
        lambda: b"%s: %d\r\n\r\n" % (b"Content-Length" + b"\0", n) + body,
        lambda: b"Content-Length\r\n\r\n" + body,
    ]
    return Case("frames", b"".join(rng.choice(choices)() for _ in range(rng.randint(1, 3))))


# -- requests the protocol does not allow ---------------------------------------------------------------

def requests(rng: random.Random, root: Path) -> Case:
    out = []
    for _ in range(rng.randint(1, 6)):
        what = rng.randrange(9)
        if what == 0:
            message: Any = [_value(rng) for _ in range(rng.randrange(4))]             # a batch
        elif what == 1:
            message = {k: v for k, v in {"jsonrpc": rng.choice(["2.0", "1.0", 2, None]), "id": _value(rng),
                                         "method": rng.choice(METHODS + [5, None]),
                                         "params": _value(rng)}.items() if rng.random() < 0.8}
        elif what == 2:
            message = {"jsonrpc": "2.0", "id": rng.randrange(10 ** 6), "method": rng.choice(METHODS),
                       "params": _value(rng)}
        elif what == 3:
            message = {"jsonrpc": "2.0", "method": rng.choice(METHODS), "params": _value(rng)}
        elif what == 4:
            depth = rng.choice([10, 1000, 100_000])
            out.append(_frame(b"[" * depth + b"]" * depth))
            continue
        elif what == 5:
            out.append(_frame(rng.choice([b"{", b"nul", b"\xff\xfe", b'{"a": NaN}', b"1" * 5000, b'"\\ud800"',
                                          b"{}" * 3, b""])))
            continue
        elif what == 6:
            message = {"jsonrpc": "2.0", "id": rng.randrange(10 ** 6), "method": "codeAction/resolve",
                       "params": {"title": "forged", "data": [uri(root / "m.py"), rng.randrange(5),
                                                              rng.choice(["fix", "noqa", "all", "lens"]),
                                                              rng.choice(["torchgpipe", "", "x"])] +
                                  [_value(rng) for _ in range(rng.choice([0, 4]))]}}
        elif what == 7:
            message = _well_formed(rng, root)
        else:
            message = {"jsonrpc": "2.0", "id": rng.randrange(10 ** 6), "method": "workspace/executeCommand",
                       "params": {"command": "skiplint.showLayout", "arguments": [_value(rng), _value(rng)]}}
        out.append(_frame(_json(message)))
    # The settings back to the defaults, for the inputs that follow in the same process.
    out.append(_frame(_json({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                             "params": {"settings": {"skiplint": {}}}})))
    return Case("requests", b"".join(out))


_URIS = ["file:///m.py", "file://[/m.py", "file:///m%00.py", "untitled:Untitled-1", "file:///", "x", "file:///tmp/a/../b.py"]
_TEXTS = ["", "\0", "x = (\n", "# coding: rot13\nfrom torchgpipe.skip import stash\n", "\ud800", "\ufeff\r\r\n",
          "from torchgpipe.skip import skippable, stash\n@skippable(stash=['a'])\nclass A:\n    def forward(self, x):\n"
          "        yield stash('b', x)\n", "# coding: utf-16\nimport torchgpipe\n", "x" * 100_000]


def _well_formed(rng: random.Random, root: Path) -> dict[str, Any]:
    """A message whose params have the protocol's shape, with hostile values in it."""
    address = rng.choice(_URIS + [uri(root / "m.py")])
    number = rng.choice([0, 1, 7, 2 ** 31 - 1, 2 ** 40])
    position = {"line": rng.choice([0, 1, 3, 2 ** 31 - 1]), "character": rng.choice([0, 1, 5, 2 ** 31 - 1])}
    span = {"start": position, "end": {"line": 0, "character": 0}}
    document = {"uri": address}
    method, params = rng.choice([
        ("textDocument/didOpen", {"textDocument": {"uri": address, "languageId": rng.choice(["python", "c", ""]),
                                                   "version": number, "text": rng.choice(_TEXTS)}}),
        ("textDocument/didChange", {"textDocument": {"uri": address, "version": number}, "contentChanges": [
            rng.choice([{"text": rng.choice(_TEXTS)}, {"range": span, "text": rng.choice(_TEXTS)}])]}),
        ("textDocument/didSave", {"textDocument": document}),
        ("textDocument/didClose", {"textDocument": document}),
        ("textDocument/hover", {"textDocument": document, "position": position}),
        ("textDocument/codeAction", {"textDocument": document, "range": span, "context": {"diagnostics": []}}),
        ("textDocument/codeLens", {"textDocument": document}),
        ("workspace/didChangeWatchedFiles", {"changes": [{"uri": address, "type": rng.choice([1, 2, 3])}]}),
    ])
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if not method.startswith(("textDocument/did", "workspace/did")):
        message["id"] = rng.randrange(10 ** 6)
    return message


# -- ranged edits -----------------------------------------------------------------------------------------

def _units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _lines(text: str) -> list[tuple[int, str]]:
    """(offset, line without its break) of each line, as the server counts lines."""
    from skiplint import sources

    starts = sources.line_starts(text)
    return [(start, line) for start, line in zip(starts, sources.lines(text) + [""] * (len(starts) - len(sources.lines(text))))]


def _position(rng: random.Random, text: str) -> tuple[tuple[int, int], Optional[int]]:
    """A client position (line, UTF-16 units) and the offset it names (None: it names none)."""
    lines = _lines(text)
    if rng.random() < 0.04:
        return (len(lines) + rng.randrange(3), 0), None
    wide = [i for i, (_, line) in enumerate(lines) if not line.isascii()]
    index = rng.choice(wide) if wide and rng.random() < 0.5 else rng.randrange(len(lines))
    start, line = lines[index]
    column = rng.randrange(len(line) + 1)
    units = _units(line[:column])
    if rng.random() < 0.05:
        return (index, units + 1000), start + len(line)  # past the end of the line: its end
    if column < len(line) and ord(line[column]) > 0xFFFF and rng.random() < 0.5:
        return (index, units + 1), None  # between the halves of a surrogate pair
    return (index, units), start + column


def ranged_edits(rng: random.Random, root: Path, serial: int) -> Case:
    text = rng.choice(FIXTURES).read_text(encoding="utf-8")
    if rng.random() < 0.8:  # characters of two UTF-16 units, where a count of code points goes wrong
        lines = text.split("\n")
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(lines) + 1)
            lines.insert(i, rng.choice(['u = "\U0001F600\U0001F4A5"; v = (1, 2)', "# \U0001F600 \U0001F4A5 x = 1"]))
        text = "\n".join(lines)
    address = uri(root / f"edited_{serial}.py")
    out = [_frame(_json({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": address, "languageId": "python", "version": 1, "text": text}}}))]
    model: Optional[str] = text
    version = 1
    for _ in range(rng.randint(1, 6)):
        version += 1
        changes = []
        for _ in range(rng.randint(1, 3)):
            if model is None:
                break
            (a, low), (b, high) = _position(rng, model), _position(rng, model)
            if low is not None and high is not None and high < low:
                (a, low), (b, high) = (b, high), (a, low)
            new = rng.choice(["", "x", "yield ", "\n", "\r\n", "\U0001F600", "stash('s', x)", "(", "é"])
            changes.append({"range": {"start": {"line": a[0], "character": a[1]},
                                      "end": {"line": b[0], "character": b[1]}}, "text": new})
            model = None if low is None or high is None else model[:low] + new + model[high:]
        out.append(_frame(_json({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": address, "version": version}, "contentChanges": changes}})))
        if model is None:
            break
    return Case("ranged_edits", b"".join(out), address, model, version)


def case(seed: int, root: Path) -> Case:
    rng = random.Random(seed)
    family = seed % 3
    if family == 0:
        return frames(rng, root)
    if family == 1:
        return requests(rng, root)
    return ranged_edits(rng, root, seed)


# -- the runner ---------------------------------------------------------------------------------------------

def _tracebacks(messages: list[dict[str, Any]]) -> list[str]:
    """A traceback, or a handler's exception (said in one line), in what the server sent."""
    text = json.dumps(messages)
    problems = ["a traceback reached the client"] if "Traceback" in text or '"traceback"' in text else []
    return problems + [f"a handler failed: {line}" for line in re.findall(
        r"skiplint: (?:internal error|could not handle|could not check)[^\"]*", text)]


async def _one(server: Raw, seed: int, root: Path, probe: int) -> list[str]:
    from skiplint import config
    from skiplint.diagnostics import without_code
    from skiplint.lsp import features
    from skiplint.lsp.documents import UTF16, Document

    item = case(seed, root)
    start = len(server.seen)
    server.write(item.data)
    server.send({"jsonrpc": "2.0", "id": probe, "method": "textDocument/hover",
                 "params": {"textDocument": {"uri": uri(root / "probe.py")}, "position": {"line": 0, "character": 0}}})
    try:
        answer = await asyncio.wait_for(server.response(probe), PATIENCE_S)
    except (asyncio.TimeoutError, asyncio.IncompleteReadError) as error:
        return [f"seed {seed} ({item.family}): the probe got no answer ({type(error).__name__})"]
    problems = [] if "result" in answer else [f"seed {seed}: the probe was answered {answer}"]
    if item.document is not None:
        published = await _published(server, item.document, item.version if item.expected is not None else None)
        if published is None:
            problems.append(f"seed {seed}: no diagnostics for the last version")
        elif item.expected is None:
            if published["diagnostics"]:
                problems.append(f"seed {seed}: a refused edit left diagnostics published")
        else:
            path = str(root / item.document.rsplit("/", 1)[1])
            text = Document(item.document, item.expected, None)
            want = [(d.code, *text.client_position(d.line, d.col, UTF16), without_code(d.code, d.message))
                    for d in features.check(item.expected, path, config.Config()).diagnostics]
            got = [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"], d["message"])
                   for d in published["diagnostics"]]
            if got != want:
                problems.append(f"seed {seed}: published {got}, the CLI's door gives {want}")
        server.send({"jsonrpc": "2.0", "method": "textDocument/didClose",
                     "params": {"textDocument": {"uri": item.document}}})
    problems += [f"seed {seed}: {p}" for p in _tracebacks(server.seen[start:])]
    return problems


async def _published(server: Raw, address: str, version: Optional[int]) -> Optional[dict[str, Any]]:
    """The diagnostics published for `version` of the document (None: the withdrawal, which
    carries no version), waiting for them when they have not come yet."""
    async def arrived() -> dict[str, Any]:
        index = 0
        while True:
            while index < len(server.seen):
                message = server.seen[index]
                index += 1
                params = message.get("params") or {}
                if message.get("method") == "textDocument/publishDiagnostics" and params.get("uri") == address \
                        and params.get("version") == version:
                    return dict(params)
            server.seen.append(await server.read())
    try:
        return await asyncio.wait_for(arrived(), PATIENCE_S)
    except asyncio.TimeoutError:
        return None


async def run_seeds(seeds: list[int], per_process: int) -> tuple[list[str], int]:
    problems: list[str] = []
    done = 0
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for first in range(0, len(seeds), per_process):
            server = await Raw(root).start()
            await server.initialize({"general": {"positionEncodings": ["utf-16"]}})
            for index, seed in enumerate(seeds[first:first + per_process]):
                found = await _one(server, seed, root, 10 ** 9 + index)
                problems += found
                done += 1
                if found and any("no answer" in p for p in found):
                    break
            if server.process is not None and server.process.returncode is None:
                try:
                    status, stderr = await asyncio.wait_for(server.stop(), PATIENCE_S)
                except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    problems.append(f"seeds from {seeds[first]}: the server did not stop")
                    server.process.kill()
                    continue
                if status != 0 or stderr:
                    problems.append(f"seeds from {seeds[first]}: exit status {status}, stderr {stderr[-500:]!r}")
    return problems, done


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=300, help="how many inputs (default 300)")
    parser.add_argument("--start", type=int, default=0, help="first seed")
    parser.add_argument("--per-process", type=int, default=25, help="inputs sent to one server process")
    args = parser.parse_args(argv)
    started = time.monotonic()
    problems, done = asyncio.run(run_seeds(list(range(args.start, args.start + args.count)), args.per_process))
    for problem in problems:
        print(problem)
    print(f"{done} inputs (seeds {args.start}-{args.start + args.count - 1}), {len(problems)} problems, "
          f"{time.monotonic() - started:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
