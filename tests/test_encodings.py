"""Source that Python refuses is never clean: coding cookies read as Python reads them (an even
number of bytes under a `# coding: utf-16` cookie decodes, but is no module), and a file that
libcst parses but CPython's compiler refuses is SKP900 with CPython's reason, never SKP902. The
CLI and the flake8 plugin agree on both."""

from __future__ import annotations

from pathlib import Path

import pytest

from skiplint import checks, sources
from tests import inprocess

API = "from torchgpipe.skip import skippable, stash\n"
UTF16 = "bad encoding declaration: read as utf-16, its own first lines no longer declare utf-16 " \
        "(Python refuses such a file)"


def python_accepts(data: bytes) -> bool:
    try:
        compile(data, "<test>", "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return True


def cli_reason(path: Path) -> list[str]:
    run = inprocess.skiplint(["--isolated", "-j", "1", path.name], path.parent)
    assert run.returncode in (0, 2), run.stderr
    return [line.split(" could not check this file: ", 1)[1] for line in run.stdout.splitlines()
            if " SKP900 " in line]


# -- coding cookies --------------------------------------------------------------------------------

@pytest.mark.parametrize("body", ["x = 12\n", API + "x = 1\n"], ids=["no-api", "api"])
def test_an_even_length_utf16_cookie_file_is_not_clean(tmp_path: Path, body: str) -> None:
    data = ("# coding: utf-16\n" + body).encode("ascii")
    assert len(data) % 2 == 0 and not python_accepts(data)
    data.decode("utf-16")  # decoding it whole succeeds: what let it pass
    path = tmp_path / "m.py"
    path.write_bytes(data)
    run = inprocess.skiplint(["--isolated", "-j", "1", "m.py"], tmp_path)
    assert (run.returncode, run.stdout) == (2, f"m.py:1:1: SKP900 could not check this file: {UTF16}\n")
    assert inprocess.flake8(["--isolated", "--select", "SKP,E9", "m.py"], tmp_path).stdout == run.stdout
    stdin = inprocess.skiplint(["--isolated", "-", "--stdin-display-name", "m.py"], tmp_path, stdin=data)
    assert stdin.stdout == run.stdout


ENCODINGS = ["utf-16", "utf-16-le", "UTF-16BE", "utf-32", "utf-7", "cp037", "rot13", "hex", "punycode",
             "idna", "latin-1", "cp1252", "shift_jis", "koi8-r", "ascii", "utf-8", "utf8", "no-such-codec"]


@pytest.mark.parametrize("body", [API + "x = 12\n", API + "x = 1\n", API + "y = 'caf\u00e9'\n", "x = 12\n", "x = 1\n"],
                         ids=["api-a", "api-b", "api-latin", "plain-a", "plain-b"])
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_cookie_is_refused_exactly_when_python_refuses_it(tmp_path: Path, encoding: str, body: str) -> None:
    """The file's bytes are its text in the declared encoding where that keeps the cookie's line
    as ASCII writes it (a cookie is read in ASCII), else in UTF-8: a declaration the bytes do not
    follow (how a mis-declared file looks)."""
    text = f"# -*- coding: {encoding} -*-\n{body}"
    cookie = text.split("\n", 1)[0].encode("ascii")
    try:
        data = text.encode(encoding)
        if not data.startswith(cookie):
            data = text.encode("utf-8")
    except (LookupError, UnicodeError):
        data = text.encode("utf-8")
    path = tmp_path / "m.py"
    path.write_bytes(data)
    reasons = cli_reason(path)
    if body.startswith(API):
        assert bool(reasons) == (not python_accepts(data)), reasons
    else:  # a file that names no API module is read for the API only (a cookie it cannot name aside)
        assert not reasons or not python_accepts(data)
    assert len(reasons) <= 1
    # flake8 says it once too: the CLI's SKP900, or its own E999 where the text it read (latin-1
    # when the declared encoding fails it) is no Python either.
    try:
        flake8 = inprocess.flake8(["--isolated", "--select", "SKP9,E999", "m.py"], tmp_path).stdout.splitlines()
    except LookupError:  # flake8 7 itself crashes on a codec that is no text encoding
        assert encoding in ("rot13", "hex")
        return
    if reasons:
        assert len(flake8) == 1
        assert flake8[0] == f"m.py:1:1: SKP900 could not check this file: {reasons[0]}" or " E999 " in flake8[0]
    else:
        assert flake8 == []


def test_a_codec_that_is_no_text_encoding_is_named_so(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"# coding: rot13\nx = 1\n")
    assert cli_reason(path) == ["'rot13' is not a text encoding"]


def test_bytes_that_are_not_utf8_agree_with_flake8(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(API.encode() + b"x = '\xe9'\n")
    assert cli_reason(path) == ["not valid utf-8: byte 0xe9 at offset 50"]
    flake8 = inprocess.flake8(["--isolated", "--select", "SKP9", "m.py"], tmp_path)
    assert flake8.stdout == "m.py:1:1: SKP900 could not check this file: not valid utf-8: byte 0xe9 at offset 50\n"


# -- the text an editor holds (the language server's door) -----------------------------------------

def test_a_buffer_reads_as_the_cli_reads_the_file_that_holds_it() -> None:
    assert sources.decode(sources.file_bytes("x = 1\n")) == "x = 1\n"
    latin = "# coding: latin-1\ny = 'caf\u00e9'\n"
    assert sources.decode(sources.file_bytes(latin)) == latin
    with pytest.raises(sources.SourceError, match=r"^bad encoding declaration: read as utf-16, "):
        sources.decode(sources.file_bytes("# coding: utf-16\nx = 12\n"))
    with pytest.raises(sources.SourceError, match=r"^'rot13' is not a text encoding$"):
        sources.decode(sources.file_bytes("# coding: rot13\nx = 1\n"))
    # A lone surrogate, as the bytes an editor would save for it: refused outside a comment ...
    with pytest.raises(sources.SourceError, match=r"^not valid utf-8: byte 0xed at offset 5$"):
        sources.decode(sources.file_bytes("x = '\ud800'\n"))
    # ... and read as U+FFFD inside one, as such bytes in a file are.
    assert sources.decode(sources.file_bytes("x = 1  # \ud800\n")) == "x = 1  # \ufffd\ufffd\ufffd\n"


# -- what libcst parses and CPython refuses --------------------------------------------------------

MODEL = API + '''from torch import nn


@skippable(stash=["skip"])
class Stash(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x
'''
REFUSED = MODEL + "\nbreak\n"  # libcst's grammar takes it; CPython's compiler does not


@pytest.fixture
def analyzer_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug of the analysis")
    monkeypatch.setattr(checks, "module_findings", broken)


def test_libcst_parses_and_cpython_refuses_the_text() -> None:
    import libcst

    libcst.parse_module(REFUSED)
    with pytest.raises(SyntaxError):
        compile(REFUSED, "<test>", "exec")


def test_an_analyzer_failure_on_text_python_refuses_is_skp900_with_pythons_reason(
        tmp_path: Path, analyzer_bug: None) -> None:
    (tmp_path / "refused.py").write_text(REFUSED, encoding="utf-8")
    (tmp_path / "valid.py").write_text(MODEL, encoding="utf-8")
    run = inprocess.skiplint(["--isolated", "-j", "1", "refused.py", "valid.py"], tmp_path)
    assert run.returncode == 2
    lines = run.stdout.splitlines()
    assert lines[0] == "refused.py:11:1: SKP900 could not check this file: syntax error: 'break' outside loop"
    assert lines[1].startswith("valid.py:1:1: SKP902 internal error while analysing this file: ")
    assert len(lines) == 2
    flake8 = inprocess.flake8(["--isolated", "--select", "SKP,E999", "refused.py", "valid.py"], tmp_path)
    assert flake8.stdout.splitlines() == lines  # flake8 parses only: the compiler's reason is ours to give


def test_fix_leaves_a_file_python_refuses_with_pythons_reason(tmp_path: Path, analyzer_bug: None) -> None:
    (tmp_path / "refused.py").write_text(REFUSED, encoding="utf-8")
    run = inprocess.skiplint(["fix", "--isolated", "refused.py"], tmp_path)
    assert run.returncode == 2
    assert run.stderr == "refused.py: could not fix this file: syntax error: 'break' outside loop at 11:1\n"
