"""The language server's parts that need no client: positions, the noqa edit, quick fixes, the
layout under the cursor, and the open-buffer overlay of the project scan (no pygls needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from skiplint import config, engine, fix, formats, projectscan, sources
from skiplint.diagnostics import Diagnostic, without_code
from skiplint.lsp import documents, features
from skiplint.lsp.documents import UTF8, UTF16, UTF32, Document
from skiplint.project import ProjectIndex
from skiplint.session import Session

REPO = Path(__file__).resolve().parent.parent

LAYER = '''\
from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["skip"])
class Layer(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        yield stash("extra", x)
        return x
'''


def finding(text: str, path: str = "m.py", settings: config.Config = config.Config()) -> Diagnostic:
    (found,) = features.check(text, path, settings).diagnostics
    return found


# -- positions -------------------------------------------------------------------------------------

@pytest.mark.parametrize("encoding, expected", [(UTF8, 8), (UTF16, 5), (UTF32, 4)])
def test_columns_in_each_encoding(encoding: str, expected: int) -> None:
    line = "a\u00e9\U0001F600b c"
    assert documents.units(line[:4], encoding) == expected
    assert documents.column_from_units(line, expected, encoding) == 4
    assert documents.column_from_units(line, 10_000, encoding) == len(line)  # past the end: the end
    assert documents.column_from_units(line, -3, encoding) is None


def test_a_unit_inside_a_character_names_no_column() -> None:
    assert documents.column_from_units("\U0001F600x", 1, UTF16) is None  # between the surrogates
    assert documents.column_from_units("\U0001F600x", 2, UTF16) == 1
    assert documents.column_from_units("\u00e9x", 1, UTF8) is None
    assert documents.column_from_units("\u00e9x", 2, UTF8) == 1
    assert documents.column_from_units("x\u00e9", 3, UTF8) == 2
    assert documents.column_from_units("x\u00e9", 2, UTF8) is None  # inside the last character


def test_a_ranged_edit_replaces_exactly_its_range_or_nothing() -> None:
    document = Document("file:///m.py", "a\U0001F600 = 1\r\nbc\n", 1)
    assert document.replaced((0, 3), (0, 3), "x", UTF16) == "a\U0001F600x = 1\r\nbc\n"
    assert document.replaced((0, 7), (1, 1), "", UTF16) == "a\U0001F600 = 1c\n"
    assert document.replaced((1, 99), (1, 99), "!", UTF16) == "a\U0001F600 = 1\r\nbc!\n"  # past the end: the end
    assert document.replaced((2, 0), (2, 0), "d", UTF16) == "a\U0001F600 = 1\r\nbc\nd"
    assert document.replaced((0, 2), (0, 3), "", UTF16) is None  # inside the surrogate pair
    assert document.replaced((3, 0), (3, 0), "", UTF16) is None  # no such line
    assert document.replaced((1, 1), (0, 0), "", UTF16) is None  # the end before the start


def test_lines_are_broken_only_at_cr_lf_cr_and_lf() -> None:
    text = "a = 1\x0c# form feed\r\nb = 2\u2028c\rd\n"
    document = Document("file:///m.py", text, 1)
    assert document.lines == ["a = 1\x0c# form feed", "b = 2\u2028c", "d"]
    assert document.client_position(3, 0, UTF16) == (2, 0)
    assert document.offset(2, 0, UTF16) == text.index("\rd") + 1
    assert document.offset(3, 0, UTF16) == len(text)
    assert document.offset(99, 0, UTF16) is None
    assert document.client_position_at(text.index("c"), UTF16) == (1, 6)
    assert document.client_position_at(len(text), UTF16) == (3, 0)


@pytest.mark.parametrize("path", ["/tmp/a b/m%20.py", "/tmp/é/m.py", "/m.py"])
def test_file_uris_give_their_paths(path: str) -> None:
    assert documents.path_of(Path(path).as_uri()) == path
    assert documents.path_of("untitled:Untitled-1") is None
    assert documents.path_of("file://[/m.py") is None and documents.path_of("file:///m%00.py") is None
    assert documents.path_of("untitled:Untitled-1") is None


def test_source_bytes_follow_the_coding_cookie() -> None:
    text = "# -*- coding: latin-1 -*-\nname = 'caf\u00e9'\n"
    assert Document("file:///m.py", text, 1).source_bytes() == text.encode("latin-1")
    assert Document("file:///m.py", "x = '\u00e9'\n", 1).source_bytes() == "x = '\u00e9'\n".encode()
    # A cookie the text cannot be written in: UTF-8, as the editor holds it.
    text = "# coding: ascii\nx = '\u00e9'\n"
    assert Document("file:///m.py", text, 1).source_bytes() == text.encode()
    # A cookie naming no encoding, or one that writes ASCII otherwise: UTF-8.
    for cookie in ("rot13", "nonesuch", "utf-16"):
        text = f"# coding: {cookie}\nx = 1\n"
        assert sources.file_bytes(text) == text.encode()
    assert sources.file_bytes("x = '\ud800'\n") == b"x = '\xed\xa0\x80'\n"  # a lone surrogate


# -- what is checked ---------------------------------------------------------------------------------

def test_the_fixable_codes_and_targets_are_skiplint_fixs() -> None:
    assert features.FIXABLE == frozenset(fix.FIXABLE)
    assert features.TARGETS == tuple(fix.TARGETS)


def test_check_honours_the_projects_excludes_the_file_noqa_and_nul(tmp_path: Path) -> None:
    path = str(tmp_path / "generated" / "m.py")
    excluded = config.Config(extend_exclude=("generated",), source=str(tmp_path / "setup.cfg"), root=str(tmp_path))
    assert features.check(LAYER, path, config.Config()).diagnostics != ()
    assert features.check(LAYER, path, excluded).diagnostics == ()
    assert features.check("# skiplint: noqa\n" + LAYER, path, config.Config()).diagnostics == ()
    result = features.check(LAYER + "\0", path, config.Config())
    assert [(d.code, d.line, d.col, d.message) for d in result.diagnostics] == [
        ("SKP900", 1, 0, "SKP900 could not check this file: contains NUL bytes; not a Python source file")]
    assert result.error == "contains NUL bytes; not a Python source file"
    # As the CLI: a file that could not be checked is said whatever is selected (silence would read as clean).
    ignored = features.check(LAYER + "\0", path, config.Config(ignore=("SKP9",)))
    assert [d.code for d in ignored.diagnostics] == ["SKP900"]


def test_a_buffer_larger_than_the_cli_reads_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_BYTES", len(LAYER.encode()) + 1)
    assert [d.code for d in features.check(LAYER, "m.py", config.Config()).diagnostics] == ["SKP101"]
    big = LAYER + "#\u00e9\n"  # two more characters, four more bytes
    result = features.check(big, "m.py", config.Config())
    assert [(d.code, d.message) for d in result.diagnostics] == [
        ("SKP900", "SKP900 could not check this file: too large to check (0.0 MB; the limit is 0.0 MB)")]


def test_messages_lose_only_their_leading_code() -> None:
    diagnostic = finding(LAYER)
    assert without_code(diagnostic.code, diagnostic.message) == "'extra' is stashed but not declared in stash=[...]"
    assert without_code("SKP101", "no code here") == "no code here"
    assert formats.level("SKP101") == "error" and formats.level("SKP302") == "note"


# -- noqa ----------------------------------------------------------------------------------------------

def suppressed(text: str) -> str:
    edit = features.suppression(text, finding(text))
    assert isinstance(edit, features.Replacement), edit
    return text[:edit.start] + edit.text + text[edit.end:]


def test_noqa_is_added_at_the_end_of_the_line_keeping_its_break() -> None:
    crlf = LAYER.replace("\n", "\r\n").replace('yield stash("extra", x)', 'yield stash("extra", x)   ')
    out = suppressed(crlf)
    assert out.split("\r\n")[8] == '        yield stash("extra", x)  # noqa: SKP101'
    assert out.replace('  # noqa: SKP101', '   ') == crlf
    assert features.check(out, "m.py", config.Config()).diagnostics == ()


def test_noqa_joins_an_existing_code_list_and_another_comment() -> None:
    listed = LAYER.replace('yield stash("extra", x)', 'yield stash("extra", x)  # noqa: SKP103, B901 ')
    assert suppressed(listed).splitlines()[8] == '        yield stash("extra", x)  # noqa: SKP103, B901,SKP101 '
    commented = LAYER.replace('yield stash("extra", x)', 'yield stash("extra", x)  # a note')
    assert suppressed(commented).splitlines()[8] == '        yield stash("extra", x)  # a note  # noqa: SKP101'


def test_noqa_is_refused_where_a_comment_would_change_the_program() -> None:
    continued = LAYER.replace('yield stash("extra", x)', 'yield stash("extra", \\\n            x)')
    assert features.suppression(continued, finding(continued)) == "the line ends with a continuation backslash"
    in_string = LAYER.replace('yield stash("extra", x)', 'yield stash("extra", x), """\n        """')
    assert features.suppression(in_string, finding(in_string)) == "the line ends inside a string"
    outside = Diagnostic("m.py", 99, 0, "SKP101", "SKP101 x")
    assert features.suppression(LAYER, outside) == "the finding's line is not in the file"


# -- fixes ----------------------------------------------------------------------------------------------

def test_a_quick_fix_is_the_one_skiplint_fix_makes_or_its_reason() -> None:
    text = (REPO / "fixtures" / "skp107_not_yielded.py").read_text()
    path = str(REPO / "fixtures" / "skp107_not_yielded.py")
    found = {d.line: d for d in features.check(text, path, config.Config()).diagnostics if d.code == "SKP107"}
    edits = features.quick_fix(text, path, config.Config(), found[9])
    assert isinstance(edits, list) and [(e.text) for e in edits] == ["yield "]
    assert features.quick_fix(text, path, config.Config(), found[28]) == \
        "a yield here would change what the enclosing function is"
    stale = Diagnostic(path, 9, 8, "SKP107", "SKP107 something else")
    assert features.quick_fix(text, path, config.Config(), stale) == "the finding is no longer reported"
    assert features.quick_fix(LAYER, path, config.Config(), finding(LAYER)) == "SKP101 has no automatic fix"
    replacement, fixed = features.fix_all(text, path, config.Config()) or (None, ())
    assert replacement is not None and [d.line for d in fixed] == [9, 16, 23]
    whole = fix.fix_source(text, path).fixed
    assert text[:replacement.start] + replacement.text + text[replacement.end:] == whole
    assert features.fix_all(LAYER, path, config.Config()) is None


@pytest.mark.parametrize("old, new", [("abc", "abc"), ("abc", "abXc"), ("a\r\nb", "a\r\nXb"), ("a\r\nb", "a\nb"),
                                      ("", "x"), ("xyz", ""), ("aaa", "aa")])
def test_one_replacement_turns_the_old_text_into_the_new(old: str, new: str) -> None:
    edit = features._difference(old, new)
    assert old[:edit.start] + edit.text + old[edit.end:] == new
    assert not (0 < edit.start < len(old) and old[edit.start - 1:edit.start + 1] == "\r\n")


# -- layout ---------------------------------------------------------------------------------------------

def test_the_layout_under_the_cursor() -> None:
    from skiplint import layout

    path = str(REPO / "fixtures" / "compositions" / "unet.py")
    text = Path(path).read_text()
    facts = layout.load(path)
    pipe, deep = (m for m in layout.models(facts) if m.pipe)
    assert features.layout_at(text, path, config.Config(), 53, "u.py") == layout.render_text("u.py", deep, deep.balance)
    assert features.layout_at(text, path, config.Config(), 52, "u.py") == layout.render_text("u.py", pipe, pipe.balance)
    # Below every composition: the nearest above; above all of them: the first.
    assert features.layout_at(text + "\n\nx = 1\n", path, config.Config(), 57, "u.py") == \
        layout.render_text("u.py", deep, deep.balance)
    first = layout.models(facts)[0]
    assert features.layout_at(text, path, config.Config(), 0, "u.py") == \
        layout.render_text("u.py", first, first.balance)
    assert features.layout_at(LAYER, "m.py", config.Config(), 0, "m.py") is None
    lenses = features.lenses(features.models(text, path, config.Config()))
    assert [(lens.line, lens.column, lens.name) for lens in lenses] == [(52, 11, "pipe"), (53, 16, "deep_pipe")]


# -- the overlay ----------------------------------------------------------------------------------------

BLOCKS = '''\
from torch import nn
from torchgpipe.skip import pop, skippable, stash


@skippable(stash=["skip"])
class Down(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        return x


@skippable(pop=["skip"])
class Up(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip
'''
MODEL = "from torch import nn\n\nfrom blocks import Down, Up\n\nmodel = nn.Sequential(Down(), Up())\n"


def test_the_overlay_stands_for_the_file_until_it_is_removed(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    model = str(tmp_path / "model.py")
    blocks = str(tmp_path / "blocks.py")
    scan = projectscan.ProjectScan()
    index = ProjectIndex(scan)

    def codes() -> list[str]:
        return [d.code for d in engine.check_text(MODEL, model, session=Session(project=index)).diagnostics]

    assert codes() == []
    unsaved = BLOCKS.replace('pop=["skip"]', 'pop=["other"]').replace('pop("skip")', 'pop("other")').encode()
    scan.overlay = {blocks: ((len(unsaved), -1), unsaved)}
    assert codes() == ["SKP202", "SKP201"]
    assert scan.read(blocks) == unsaved and scan.stat(blocks) == (len(unsaved), -1)
    scan.overlay = {}
    assert codes() == []
    assert scan.read(blocks) == BLOCKS.encode()
    # A module created after it was looked for is found once locations are forgotten.
    (tmp_path / "blocks.py").rename(tmp_path / "gone.py")
    assert codes() == []
    scan.forget_locations()
    assert scan.module_file(model, "blocks") is None
    (tmp_path / "gone.py").rename(tmp_path / "blocks.py")
    scan.forget_locations()
    assert scan.module_file(model, "blocks") == blocks


# -- settings -------------------------------------------------------------------------------------------

def test_client_settings_are_the_clis_options() -> None:
    pytest.importorskip("pygls", reason="the server's settings need the lsp extra")
    from skiplint.lsp.configuration import read_settings

    settings = read_settings({"skiplint": {"select": "SKP1, skp2", "ignore": ["SKP101"], "extendSelect": ["SKP302"],
                                           "config": "tox.ini", "isolated": False, "debounce": 120}}, 0.05)
    assert (settings.select, settings.ignore, settings.extend_select) == (("SKP1", "SKP2"), ("SKP101",), ("SKP302",))
    assert (settings.config, settings.isolated, settings.debounce, settings.problems) == ("tox.ini", False, 0.12, [])
    bad = read_settings({"select": ["SKP999"], "debounce": -1, "config": 3}, 0.05)
    assert (bad.select, bad.debounce, bad.config) == (None, 0.05, None)
    assert bad.problems == [
        "skiplint: setting config: expected a path, got 3",
        "skiplint: setting select: unknown code 'SKP999': no rule has this code or prefix; did you mean SKP900?",
        "skiplint: setting debounce: expected milliseconds from 0 to 10000, got -1"]
    assert read_settings(None, 0.2).debounce == 0.2


# -- the server's rooms ------------------------------------------------------------------------------

def test_the_servers_modules_and_classes_are_rooms_of_one_purpose() -> None:
    """No module of skiplint/lsp over 600 lines, no class over 300 (issue 39: the server split
    along its seams)."""
    import ast

    for path in sorted((REPO / "skiplint" / "lsp").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert text.count("\n") <= 600, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None and node.end_lineno - node.lineno + 1 <= 300, (path.name, node.name)


# -- the byte stream -----------------------------------------------------------------------------------

def test_frames_are_split_whatever_the_reads_cut_them_into() -> None:
    from skiplint.lsp import transport

    body = b'{"jsonrpc":"2.0","method":"initialized","params":{}}'
    stream = (b"Content-Length: %d\r\n\r\n" % len(body) + body) * 3
    for size in (1, 2, 7, len(stream)):
        framer = transport.Framer()
        got = [item for at in range(0, len(stream), size) for item in framer.feed(stream[at:at + size])]
        assert got == [body] * 3 and not framer.pending()


@pytest.mark.parametrize("bad, reason", [
    (b"Content-Length: x\r\n\r\n{}", "Content-Length is not a number of bytes: 'x'"),
    (b"Content-Length: 2\n\n{}", "a header line not ended by CR LF"),
    (b"Content-Type: a\r\n\r\n{}", "a frame without a Content-Length header"),
    (b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "two different Content-Length headers"),
    (b"Content-Length: 999999999999\r\n\r\n{}", "a message of 999999999999 bytes (the limit is 268435456)"),
    (b"X: " + b"a" * 70_000 + b"\r\n\r\n{}", "a header longer than 64 KiB"),
    (b"{}\r\n", "a malformed header line '{}\\r\\n'"),
    (b"1", "a malformed header line '1Content-Length: 52\\r\\n'"),  # glued to the next header
])
def test_a_bad_frame_is_one_parse_error_then_the_next_header_is_read(bad: bytes, reason: str) -> None:
    from skiplint.lsp import transport

    good = b'{"jsonrpc":"2.0","method":"initialized","params":{}}'
    framer = transport.Framer()
    got = list(framer.feed(bad + b"Content-Length: %d\r\n\r\n" % len(good) + good))
    assert got == [transport.Rejected(None, transport.PARSE_ERROR, f"Parse error: {reason}"), good]


def test_messages_are_checked_as_json_rpc_says() -> None:
    from skiplint.lsp import transport

    ok = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}
    assert transport.check(ok) is None and transport.check({"jsonrpc": "2.0", "method": "m"}) is None
    assert transport.check({"jsonrpc": "2.0", "id": 1, "result": None}) is None
    invalid = transport.INVALID_REQUEST
    for message, ident in [({"id": 1, "method": "m"}, 1), ({**ok, "jsonrpc": "1.0"}, 1), ({**ok, "id": True}, None),
                           ({**ok, "id": 1.5}, None), ({**ok, "method": 3}, 1), ({**ok, "params": 3}, 1),
                           ([ok], None), ("x", None), ({"jsonrpc": "2.0", "id": 1}, None)]:
        rejected = transport.check(message)
        assert rejected is not None and (rejected.id, rejected.code) == (ident, invalid), message
    assert [(r.id, r.code) for r in transport.batch_answers([ok, {"jsonrpc": "2.0", "method": "n"}, 5])] == \
        [(1, invalid), (None, invalid)]
    assert [r.code for r in transport.batch_answers([])] == [invalid]
    for body in (b"{", b"\xff", b"[" * 100_000 + b"]" * 100_000, b"{\"a\": }"):
        decoded = transport.decode(body)
        assert isinstance(decoded, transport.Rejected) and decoded.code == transport.PARSE_ERROR, body[:10]
