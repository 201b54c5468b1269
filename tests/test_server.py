"""`skiplint server` end to end: pygls' own Language Server Protocol client drives the server over
standard input and output, as an editor does, and what it publishes is compared with what the CLI
prints for the same text. The server is a real process in every test; the CLI it is compared with
runs in this process (tests/inprocess.py: the door `python -m skiplint` has its own process tests)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="the server tests need the lsp extra: pip install 'skiplint[lsp]'")

from lsprotocol import types  # noqa: E402

from tests import inprocess  # noqa: E402
from tests.test_lsp_features import BLOCKS  # noqa: E402
from tests.lsp_harness import (  # noqa: E402
    Raw, Session, apply, as_cli, cli_json, cli_rows, edits_of, full_capabilities, run, run_side_by_side, uri)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

MODEL = '''\
from torch import nn

from blocks import Down, Up

model = nn.Sequential(Down(), Up())
'''
#: A layer that stashes a name it does not declare: SKP101 at 7:15 (CLI columns).
UNDECLARED = '''\
from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["skip"])
class Layer(nn.Module):
    def forward(self, x):
        yield stash("skip", x)
        yield stash("extra", x)
        return x
'''


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return tmp_path


def copy_fixture(tmp_path: Path, name: str) -> Path:
    target = tmp_path / Path(name).name
    shutil.copyfile(FIXTURES / name, target)
    return target


# -- the extra ----------------------------------------------------------------------------------------

def test_without_the_extra_the_server_says_what_to_install_and_exits_2(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from skiplint import cli

    monkeypatch.setitem(sys.modules, "pygls", None)
    monkeypatch.setitem(sys.modules, "pygls.lsp", None)
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    assert cli.main(["server"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("skiplint server: the language server needs the lsp extra (")
    assert err.rstrip().endswith("pip install 'skiplint[lsp]'")


def test_initialize_announces_what_the_server_does(tmp_path: Path) -> None:
    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            assert session.result is not None
            capabilities = session.result.capabilities
            assert session.result.server_info is not None and session.result.server_info.name == "skiplint"
            sync = capabilities.text_document_sync
            assert isinstance(sync, types.TextDocumentSyncOptions)
            assert sync.change == types.TextDocumentSyncKind.Incremental and sync.open_close
            assert capabilities.hover_provider
            assert isinstance(capabilities.code_action_provider, types.CodeActionOptions)
            assert capabilities.code_action_provider.resolve_provider
            assert set(capabilities.code_action_provider.code_action_kinds or ()) == {
                types.CodeActionKind.QuickFix, "source.fixAll.skiplint"}
            assert capabilities.code_lens_provider is not None
            assert capabilities.execute_command_provider is not None
            assert list(capabilities.execute_command_provider.commands) == ["skiplint.showLayout"]
            await session.roundtrip()
            watched = [r for r in session.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
            assert len(watched) == 1
            options = watched[0].register_options
            watchers = options["watchers"] if isinstance(options, dict) else options.watchers
            patterns = sorted(w["globPattern"] if isinstance(w, dict) else w.glob_pattern for w in watchers)
            assert patterns == ["**/*.py", "**/pyproject.toml", "**/setup.cfg", "**/tox.ini"]
        finally:
            assert await session.stop() == 0
    run(scenario())


# -- diagnostics ----------------------------------------------------------------------------------------

FIXTURE_FILES = ["skp101_undeclared_stash.py", "skp106_bare_string.py", "skp107_not_yielded.py",
                 "skp401_removed_torch.py", "skp305_discarded_cross_partition.py",
                 "compositions/unet_off_by_one.py", "compositions/unet.py", "skp101_clean.py"]


def test_open_publishes_what_the_cli_prints_for_the_same_text(tmp_path: Path) -> None:
    paths = [copy_fixture(tmp_path, name) for name in FIXTURE_FILES]

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            addresses = [session.open(path) for path in paths]
            for path, address in zip(paths, addresses):
                params = await session.diagnostics(address, version=1)
                expected = cli_rows(cli_json(path.read_text(), str(path), tmp_path))
                assert as_cli(params) == expected, path.name
                for diagnostic in params.diagnostics:
                    assert diagnostic.source == "skiplint"
                    assert diagnostic.severity == types.DiagnosticSeverity.Error
                    assert diagnostic.code_description is not None
                    assert diagnostic.code_description.href == \
                        f"https://github.com/skiplint/skiplint/blob/main/docs/rules.md#{str(diagnostic.code).lower()}"
            assert sum(len(session.published[a][0].diagnostics) for a in addresses) >= 20
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_change_republishes_and_close_clears(tmp_path: Path) -> None:
    path = project(tmp_path, {"layer.py": UNDECLARED}) / "layer.py"

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path)
            first = await session.diagnostics(address, version=1)
            assert [(d.code, d.range.start.line, d.range.start.character) for d in first.diagnostics] == \
                [("SKP101", 8, 14)]
            fixed = UNDECLARED.replace('stash=["skip"]', 'stash=["skip", "extra"]')
            session.change(address, fixed, 2)
            assert (await session.diagnostics(address, version=2)).diagnostics == ()
            broken = fixed.replace('yield stash("skip", x)', 'yield stash("skip", x)\n        yield stash("more", x)')
            session.change(address, broken, 3)
            third = await session.diagnostics(address, version=3)
            assert [(d.code, d.range.start.line, d.message) for d in third.diagnostics] == \
                [("SKP101", 8, "'more' is stashed but not declared in stash=[...]")]
            count = len(session.published[address])
            session.close(address)
            cleared = await session.diagnostics(address, after=count)
            assert cleared.diagnostics == () and cleared.version is None
            assert path.read_text() == UNDECLARED  # the server never writes a file
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_a_file_that_cannot_be_checked_gets_skp900_and_the_server_keeps_serving(tmp_path: Path) -> None:
    path = project(tmp_path, {"layer.py": UNDECLARED}) / "layer.py"
    broken = UNDECLARED.replace("def forward(self, x):", "def forward(self, x:")

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path, broken)
            params = await session.diagnostics(address, version=1)
            assert as_cli(params) == cli_rows(cli_json(broken, str(path), tmp_path))
            assert [d.code for d in params.diagnostics] == ["SKP900"]
            assert params.diagnostics[0].severity == types.DiagnosticSeverity.Error
            nul = UNDECLARED + "\0"
            session.change(address, nul, 2)
            params = await session.diagnostics(address, version=2)
            assert [(d.code, d.message) for d in params.diagnostics] == \
                [("SKP900", "could not check this file: contains NUL bytes; not a Python source file")]
            session.change(address, UNDECLARED, 3)
            assert [d.code for d in (await session.diagnostics(address, version=3)).diagnostics] == ["SKP101"]
        finally:
            assert await session.stop() == 0
    run(scenario())


CRASH = '''\
import skiplint.skippables as skippables

_extract = skippables.extract


def extract(module, path, text, *args, **kwargs):
    if "# crash the analyzer" in text:
        raise RuntimeError("planted analyzer bug")
    return _extract(module, path, text, *args, **kwargs)


skippables.extract = extract
'''


def test_an_analyzer_bug_is_published_as_skp902_and_the_server_keeps_serving(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from skiplint import skippables

    path = project(tmp_path, {"layer.py": UNDECLARED, "plant/sitecustomize.py": CRASH}) / "layer.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "plant"), str(REPO)]))
    crashing = UNDECLARED + "# crash the analyzer\n"
    (tmp_path / "crashing.py").write_text(crashing)
    # The same plant in this process, for the CLI (monkeypatch gives the analyzer back afterwards).
    monkeypatch.setattr(skippables, "extract", skippables.extract)
    exec(compile(CRASH, str(tmp_path / "plant/sitecustomize.py"), "exec"), {})
    cli = inprocess.skiplint(["--format", "json", "crashing.py"], tmp_path)
    assert cli.returncode == 2, cli.stderr
    expected = cli_rows(json.loads(cli.stdout)["diagnostics"])
    assert [row["code"] for row in expected] == ["SKP902"]

    async def scenario() -> None:
        session = await Session(tmp_path, env=env).start()
        try:
            address = session.open(path, crashing)
            assert as_cli(await session.diagnostics(address, version=1)) == expected
            session.change(address, UNDECLARED, 2)
            assert [d.code for d in (await session.diagnostics(address, version=2)).diagnostics] == ["SKP101"]
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_positions_are_in_the_negotiated_encoding(tmp_path: Path) -> None:
    # U+1F600 is two UTF-16 units, four UTF-8 bytes, one code point; U+00E9 one, two, one.
    text = UNDECLARED.replace('        yield stash("extra", x)', '        yield stash("\U0001F600\u00e9", x); yield stash("extra", x)')
    path = project(tmp_path, {"layer.py": text}) / "layer.py"
    expected = {None: 37, types.PositionEncodingKind.Utf16: 37, types.PositionEncodingKind.Utf32: 36,
                types.PositionEncodingKind.Utf8: 40}

    async def scenario(encoding: Any) -> None:
        capabilities = full_capabilities(encodings=[encoding] if encoding is not None else None)
        session = await Session(tmp_path, capabilities=capabilities).start()
        try:
            address = session.open(path)
            params = await session.diagnostics(address, version=1)
            starts = sorted((d.range.start.line, d.range.start.character) for d in params.diagnostics)
            assert starts == [(8, 14), (8, expected[encoding])], encoding
        finally:
            assert await session.stop() == 0

    run_side_by_side(*(scenario(encoding) for encoding in expected))  # a server per encoding


def test_a_5000_line_file(tmp_path: Path) -> None:
    body = ["from torch import nn", "from torchgpipe import GPipe", "from torchgpipe.skip import pop, skippable, stash", ""]
    index = 0
    while len(body) < 4990:
        body += ["", "", f'@skippable(stash=["s{index}"])', f"class Stash{index}(nn.Module):",
                 "    def forward(self, x):", f'        yield stash("s{index}", x)', "        return x", "", "",
                 f'@skippable(pop=["s{index}"])', f"class Pop{index}(nn.Module):", "    def forward(self, x):",
                 f'        y = yield pop("s{index}")' if index % 50 else f'        y = yield pop("t{index}")',
                 "        return x + y"]
        index += 1
    body += ["", "", "model = nn.Sequential(" + ", ".join(f"Stash{i}(), Pop{i}()" for i in range(0, index, 40)) + ")",
             "pipe = GPipe(model, balance=[2, 2], chunks=2)"]
    text = "\n".join(body) + "\n"
    assert len(text.splitlines()) >= 5000
    path = project(tmp_path, {"big.py": text}) / "big.py"

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path)
            params = await session.diagnostics(address, version=1)
            expected = cli_rows(cli_json(text, str(path), tmp_path))
            assert len(expected) > 10 and {row["code"] for row in expected} >= {"SKP102", "SKP104", "SKP301"}
            assert as_cli(params) == expected
        finally:
            assert await session.stop() == 0
    run(scenario())


@pytest.mark.parametrize("classes", [1, 60], ids=["small", "large"])
def test_rapid_edits_publish_only_the_last_version(tmp_path: Path, classes: int) -> None:
    # Each version stashes a differently named undeclared skip: a stale publication would show.
    # A small file is analysed on the server's event loop, a large one on its worker thread.
    layers = "\n".join(UNDECLARED.replace("class Layer", f"class Layer{i}") for i in range(classes))
    path = project(tmp_path, {"layers.py": layers}) / "layers.py"

    def version(n: int) -> str:
        return layers.replace('yield stash("extra", x)', f'yield stash("extra{n}", x)')

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path)
            assert len((await session.diagnostics(address, version=1)).diagnostics) == classes
            for n in range(2, 22):  # twenty edits, none awaited: as fast as the pipe takes them
                session.change(address, version(n), n)
            last = await session.diagnostics(address, version=21)
            assert {d.message for d in last.diagnostics} == {"'extra21' is stashed but not declared in stash=[...]"}
            await session.roundtrip()
            # Never a version after a newer one: an edit that reaches the server while an earlier
            # one is analysed drops that analysis. (An edit that arrives only after an analysis was
            # published, on a loaded machine, lets that version be published: [1, 7, 21].)
            versions = [p.version for p in session.published[address]]
            assert versions[0] == 1 and versions[-1] == 21 and versions == sorted(set(versions)), versions
        finally:
            assert await session.stop() == 0
    run(scenario())


# -- other modules: open buffers first, then the disk ---------------------------------------------------

def test_compositions_read_other_modules_from_open_buffers_first(tmp_path: Path) -> None:
    root = project(tmp_path, {"blocks.py": BLOCKS, "model.py": MODEL})
    unsaved = BLOCKS.replace('@skippable(pop=["skip"])', '@skippable(pop=["other"])').replace(
        'yield pop("skip")', 'yield pop("other")')

    async def scenario() -> None:
        session = await Session(root).start()
        try:
            model = session.open(root / "model.py")
            assert (await session.diagnostics(model, version=1)).diagnostics == ()
            blocks = session.open(root / "blocks.py", unsaved)  # edited in the editor, not saved
            await session.diagnostics(blocks, version=1)
            session.change(model, MODEL + "\n", 2)
            params = await session.diagnostics(model, version=2)
            assert [(d.code, d.range.start.line + 1, d.range.start.character + 1) for d in params.diagnostics] == \
                [("SKP202", 5, 23), ("SKP201", 5, 31)]
            (root / "blocks_on_disk.py").write_text(unsaved)  # what the CLI says of the same texts
            expected = cli_rows(cli_json(MODEL.replace("from blocks", "from blocks_on_disk"),
                                         str(root / "model.py"), root))
            assert [row["message"] for row in expected] == [d.message for d in params.diagnostics]
            session.close(blocks)  # back to the file on disk: the model is analysed again, clean
            again = await session.until(model, [], after=len(session.published[model]))
            assert again.version == 2
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_an_edit_of_an_open_module_reaches_the_modules_that_import_it(tmp_path: Path) -> None:
    root = project(tmp_path, {"blocks.py": BLOCKS, "model.py": MODEL})
    unsaved = BLOCKS.replace('@skippable(pop=["skip"])', '@skippable(pop=["other"])').replace(
        'yield pop("skip")', 'yield pop("other")')

    async def scenario() -> None:
        session = await Session(root).start()
        try:
            model = session.open(root / "model.py")
            blocks = session.open(root / "blocks.py")
            assert (await session.diagnostics(model, version=1)).diagnostics == ()
            await session.diagnostics(blocks, version=1)
            session.change(blocks, unsaved, 2)
            params = await session.until(model, ["SKP202", "SKP201"])
            assert params.version == 1
            assert (root / "blocks.py").read_text() == BLOCKS
        finally:
            assert await session.stop() == 0
    run(scenario())


# -- configuration ----------------------------------------------------------------------------------------

PYPROJECT = '''\
[tool.skiplint]
extend-select = ["SKP302"]
per-file-ignores = {"ignored_*.py" = ["SKP101"]}
'''


def test_the_configuration_is_the_clis(tmp_path: Path) -> None:
    root = project(tmp_path, {"pyproject.toml": PYPROJECT, "pkg/unet.py": (FIXTURES / "compositions/unet.py").read_text(),
                              "pkg/ignored_layer.py": UNDECLARED, "pkg/layer.py": UNDECLARED})

    async def scenario() -> None:
        session = await Session(root).start()
        try:
            for name in ("pkg/unet.py", "pkg/ignored_layer.py", "pkg/layer.py"):
                path = root / name
                params = await session.diagnostics(session.open(path), version=1)
                assert as_cli(params) == cli_rows(cli_json(path.read_text(), str(path), root)), name
            assert [d.code for d in session.published[uri(root / "pkg/unet.py")][0].diagnostics] == ["SKP302"] * 7
            assert session.published[uri(root / "pkg/ignored_layer.py")][0].diagnostics == ()
            opt_in = session.published[uri(root / "pkg/unet.py")][0].diagnostics[0]
            assert opt_in.severity == types.DiagnosticSeverity.Information
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_a_configuration_change_republishes_every_open_document(tmp_path: Path) -> None:
    root = project(tmp_path, {"layer.py": UNDECLARED, "unet.py": (FIXTURES / "compositions/unet.py").read_text()})

    async def scenario() -> None:
        session = await Session(root).start()
        try:
            layer, unet = session.open(root / "layer.py"), session.open(root / "unet.py")
            assert [d.code for d in (await session.diagnostics(layer, 1)).diagnostics] == ["SKP101"]
            assert (await session.diagnostics(unet, 1)).diagnostics == ()
            # The project's file changes on disk: the client's file watcher says so.
            (root / "pyproject.toml").write_text('[tool.skiplint]\nextend-select = ["SKP302"]\nignore = ["SKP101"]\n')
            session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
                types.FileEvent(uri=uri(root / "pyproject.toml"), type=types.FileChangeType.Created)]))
            assert (await session.diagnostics(layer, after=1)).diagnostics == ()
            assert [d.code for d in (await session.diagnostics(unet, after=1)).diagnostics] == ["SKP302"] * 7
            # The client's settings: the CLI's options of the same names, over the files.
            session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"skiplint": {"ignore": [], "extendSelect": []}}))
            assert [d.code for d in (await session.diagnostics(layer, after=2)).diagnostics] == ["SKP101"]
            assert (await session.diagnostics(unet, after=2)).diagnostics == ()
            # A code that matches no rule: the CLI's words, in a message, and that option unused.
            session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"skiplint": {"ignore": ["SKP10l"]}}))
            message = await session.message("SKP10L")
            assert message.type == types.MessageType.Error
            assert message.message == ("skiplint: setting ignore: unknown code 'SKP10L': no rule has this code "
                                       "or prefix; did you mean SKP101?")
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_configuration_problems_are_shown_once_as_the_cli_words_them(tmp_path: Path) -> None:
    root = project(tmp_path, {"setup.cfg": "[skiplint]\nselekt = SKP1\n", "layer.py": UNDECLARED})
    cli = inprocess.skiplint(["layer.py"], root)
    problem = cli.stderr.splitlines()[0]
    assert "unknown key" in problem

    async def scenario() -> None:
        session = await Session(root).start()
        try:
            address = session.open(root / "layer.py")
            await session.diagnostics(address, 1)
            session.change(address, UNDECLARED + "\n", 2)
            await session.diagnostics(address, 2)
            shown = [m for m in session.messages if "unknown key" in m.message]
            assert len(shown) == 1 and shown[0].type == types.MessageType.Warning
            assert shown[0].message.replace(str(root / "setup.cfg"), "setup.cfg") == problem
        finally:
            assert await session.stop() == 0

    async def unusable() -> None:
        # A `config` setting naming a file that cannot be read: the CLI stops (exit 2); the server
        # says so as an error and checks nothing until the setting changes.
        session = await Session(root, settings={"config": "missing.toml"}).start()
        try:
            address = session.open(root / "layer.py")
            assert (await session.diagnostics(address, 1)).diagnostics == ()
            message = await session.message("missing.toml")
            assert message.type == types.MessageType.Error
            assert message.message.endswith("missing.toml: cannot read: no such file or directory")
            session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"skiplint": {"config": "setup.cfg"}}))
            assert [d.code for d in (await session.diagnostics(address, after=1)).diagnostics] == ["SKP101"]
        finally:
            assert await session.stop() == 0

    run_side_by_side(scenario(), unusable())


# -- code actions ---------------------------------------------------------------------------------------

def fix_cli(path: Path, *options: str) -> str:
    return inprocess.skiplint(["fix", *options, "-", "--stdin-display-name", str(path)], path.parent,
                              path.read_bytes()).stdout


async def actions(session: Session, address: str, diagnostic: types.Diagnostic,
                  only: Any = None) -> list[types.CodeAction]:
    found = await session.request(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=address), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=only)))
    return list(found or [])


async def resolved(session: Session, action: types.CodeAction) -> types.CodeAction:
    if action.edit is not None:
        return action
    return await session.request(types.CODE_ACTION_RESOLVE, action)  # type: ignore[no-any-return]


@pytest.mark.parametrize("resolve", [True, False], ids=["resolve", "eager"])
def test_quick_fixes_are_skiplint_fixs_edits(tmp_path: Path, resolve: bool) -> None:
    path = copy_fixture(tmp_path, "skp107_not_yielded.py")
    text = path.read_text()

    async def scenario() -> None:
        session = await Session(tmp_path, capabilities=full_capabilities(resolve=resolve)).start()
        try:
            address = session.open(path)
            params = await session.diagnostics(address, version=1)
            fixable = [d for d in params.diagnostics if d.code == "SKP107"]
            assert len(fixable) == 5
            # Each finding's own fix, one at a time, as `skiplint fix` would make it.
            first = await actions(session, address, fixable[0])
            titles = [a.title for a in first]
            assert titles == [
                "Add `yield`",
                "Suppress SKP107 on this line (# noqa: SKP107)",
                "Fix all skiplint findings in this file"]
            assert [a.kind for a in first] == ["quickfix", "quickfix", "source.fixAll.skiplint"]
            # The fix of one finding comes with its edit; the whole file's with its edit only when
            # the client cannot resolve it later.
            assert first[0].edit is not None and first[1].edit is not None
            assert (first[2].edit is None) == resolve
            fixed_one = apply(text, edits_of(await resolved(session, first[0])))
            assert fixed_one == text.replace('        stash("skip", x)  # expect', '        yield stash("skip", x)  # expect')
            # A finding whose rewrite would change what a function is has no quick fix, only the noqa.
            helper = next(d for d in fixable if d.range.start.line == 27)
            assert [a.title for a in await actions(session, address, helper, only=["quickfix"])] == [
                "Suppress SKP107 on this line (# noqa: SKP107)"]
            # Fix all: the whole of `skiplint fix`.
            everything = next(a for a in first if a.kind == "source.fixAll.skiplint")
            assert apply(text, edits_of(await resolved(session, everything))) == fix_cli(path)
            # Applied by the client as a new version: the fixed findings are gone.
            session.change(address, fixed_one, 2)
            after = await session.diagnostics(address, version=2)
            assert len([d for d in after.diagnostics if d.code == "SKP107"]) == 4
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_skp401_offers_both_targets_and_skp106_its_list(tmp_path: Path) -> None:
    removed = copy_fixture(tmp_path, "skp401_removed_torch.py")
    bare = copy_fixture(tmp_path, "skp106_bare_string.py")

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(removed)
            params = await session.diagnostics(address, version=1)
            line = next(d for d in params.diagnostics if d.range.start.line == 4)
            found = await actions(session, address, line, only=["quickfix"])
            assert [a.title for a in found] == ["Import from `torchgpipe`",
                                                "Import from `fairscale`",
                                                "Suppress SKP401 on this line (# noqa: SKP401)"]
            text = removed.read_text()
            torchgpipe = apply(text, edits_of(await resolved(session, found[0])))
            fairscale = apply(text, edits_of(await resolved(session, found[1])))
            assert torchgpipe.splitlines()[4] == "from torchgpipe.skip import skippable  # expect: SKP401"
            assert fairscale.splitlines()[4] == "from fairscale.nn.pipe.skip import skippable  # expect: SKP401"
            address = session.open(bare)
            params = await session.diagnostics(address, version=1)
            found = await actions(session, address, params.diagnostics[0], only=["quickfix"])
            assert found[0].title == "Wrap `'skip'` in a list"
            assert apply(bare.read_text(), edits_of(await resolved(session, found[0]))).splitlines()[10] == \
                bare.read_text().splitlines()[10].replace('stash="skip"', 'stash=["skip"]')
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_suppressing_with_noqa_silences_exactly_that_code(tmp_path: Path) -> None:
    text = UNDECLARED.replace('        yield stash("extra", x)', '        yield stash("extra", x)  # noqa: SKP103')
    path = project(tmp_path, {"layer.py": text}) / "layer.py"

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path)
            params = await session.diagnostics(address, version=1)
            (finding,) = params.diagnostics
            found = await actions(session, address, finding)
            assert [a.title for a in found] == ["Suppress SKP101 on this line (# noqa: SKP101)"]
            silenced = apply(text, edits_of(found[0]))
            assert silenced.splitlines()[8] == '        yield stash("extra", x)  # noqa: SKP103,SKP101'
            session.change(address, silenced, 2)
            assert (await session.diagnostics(address, version=2)).diagnostics == ()
            assert cli_json(silenced, str(path), tmp_path) == []
        finally:
            assert await session.stop() == 0
    run(scenario())


# -- hover ---------------------------------------------------------------------------------------------

def test_hover_on_a_finding_shows_its_rule(tmp_path: Path) -> None:
    from skiplint import rules
    from skiplint.rules import doc

    path = project(tmp_path, {"layer.py": UNDECLARED}) / "layer.py"

    async def scenario(markdown: bool) -> None:
        session = await Session(tmp_path, capabilities=full_capabilities(markdown=markdown)).start()
        try:
            address = session.open(path)
            (finding,) = (await session.diagnostics(address, version=1)).diagnostics
            inside = types.Position(line=8, character=20)
            hover = await session.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=address), position=inside))
            assert isinstance(hover.contents, types.MarkupContent)
            fixed = doc.example("SKP101", "fixed").rstrip("\n")
            if markdown:
                assert hover.contents.kind == types.MarkupKind.Markdown
                value = hover.contents.value
                assert value.startswith("**SKP101** `undeclared-stash`\n\nFinds: stash(name, ...) is yielded for "
                                        "a name not declared in stash=.\n\nFails at run time: RuntimeError: 'x' has "
                                        "not been declared as stashable.\n\nFixed:\n\n```python\n")
                assert f"```python\n{fixed}\n```" in value
                assert value.endswith("(https://github.com/skiplint/skiplint/blob/main/docs/rules.md#skp101)")
            else:
                assert hover.contents.kind == types.MarkupKind.PlainText
                assert hover.contents.value == doc.rule_text("SKP101")
            outside = await session.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=address), position=types.Position(line=2, character=0)))
            assert outside is None
            assert rules.RULES["SKP101"].name == "undeclared-stash"
        finally:
            assert await session.stop() == 0

    run_side_by_side(scenario(True), scenario(False))  # a server per client


# -- layout ---------------------------------------------------------------------------------------------

def test_code_lens_and_command_draw_the_layout_as_skiplint_layout_does(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "compositions/unet.py")

    def drawn(target: str) -> str:
        return inprocess.skiplint(["layout", target], tmp_path).stdout.rstrip("\n")

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path)
            await session.diagnostics(address, version=1)
            lenses = await session.request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(
                text_document=types.TextDocumentIdentifier(uri=address)))
            assert [(lens.range.start.line, lens.range.start.character, lens.command.title) for lens in lenses] == [
                (52, 11, "skip layout of pipe"), (53, 16, "skip layout of deep_pipe")]
            for lens, line in zip(lenses, ("53", "54")):
                assert lens.command.command == "skiplint.showLayout"
                text = await session.request(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
                    command=lens.command.command, arguments=lens.command.arguments))
                assert text == drawn(f"unet.py:{line}")
                assert (await session.message(text.splitlines()[0])).type == types.MessageType.Info
            # The command from anywhere: the composition under (or above) the cursor.
            inside = await session.request(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
                command="skiplint.showLayout", arguments=[address, {"line": 53, "character": 30}]))
            assert inside == drawn("unet.py:54")
            # The text of the buffer, not of the file.
            session.change(address, path.read_text().replace("balance=[3, 2, 2]", "balance=[3, 2, 1]"), 2)
            await session.diagnostics(address, version=2)
            text = await session.request(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
                command="skiplint.showLayout", arguments=[address, 52]))
            assert "balance=[3, 2, 1]" in text.splitlines()[0]
            assert "balance sums to 6 but the composition has 7 layers" in text
        finally:
            assert await session.stop() == 0
    run(scenario())


# -- lifecycle ----------------------------------------------------------------------------------------

def test_shutdown_then_exit_ends_with_0_and_exit_alone_with_1(tmp_path: Path) -> None:
    async def shutdown_then_exit() -> None:
        session = await Session(tmp_path).start()
        address = session.open(tmp_path / "m.py", UNDECLARED)
        await session.diagnostics(address, version=1)
        assert await session.request(types.SHUTDOWN, None) is None
        session.client.exit(None)
        assert await asyncio.wait_for(session.process.wait(), 60) == 0

    async def exit_alone() -> None:
        session = await Session(tmp_path).start()
        session.client.exit(None)
        assert await asyncio.wait_for(session.process.wait(), 60) == 1

    async def editor_gone() -> None:
        session = await Session(tmp_path).start()
        stdin = session.process.stdin
        assert stdin is not None
        stdin.close()  # the editor went away
        assert await asyncio.wait_for(session.process.wait(), 60) == 1

    run_side_by_side(shutdown_then_exit(), exit_alone(), editor_gone())


def test_untitled_buffers_and_other_languages(tmp_path: Path) -> None:
    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            untitled = "untitled:Untitled-1"
            session.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=untitled, language_id="python", version=1, text=UNDECLARED)))
            params = await session.diagnostics(untitled, version=1)
            assert as_cli(params) == cli_rows(cli_json(UNDECLARED, "stdin", tmp_path))
            session.open(tmp_path / "notes.md", "from torchgpipe.skip import stash\nstash('x', 1)\n", language="markdown")
            await session.roundtrip()
            assert uri(tmp_path / "notes.md") not in session.published
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_help_is_shown(tmp_path: Path) -> None:
    done = inprocess.skiplint(["server", "--help"], tmp_path)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: skiplint server [-h] [--debounce MS]")
    assert "docs/editors.md" in done.stdout


# -- hostile input ---------------------------------------------------------------------------------------

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, NOT_INITIALIZED = -32700, -32600, -32602, -32002


def hover_body(ident: int, where: Path) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri(where)}, "position": {"line": 0, "character": 0}}}).encode()


def errors(messages: list[dict[str, Any]]) -> list[tuple[Any, int]]:
    return [(m["id"], m["error"]["code"]) for m in messages if "error" in m]


@pytest.mark.parametrize("frame", [
    b"Content-Length: 12x\r\n\r\n" + b"{}",                                    # not a number
    b"Content-Length: 10\r\n\r\n" + hover_body(7, Path("/m.py")),              # too short
    b"Content-Length: 5\n\n{\"a\":1}",                                          # LF only
    b"X-Junk: " + b"a" * (70 * 1024) + b"\r\nContent-Type: x\r\n\r\n",           # a header over 64 KiB
    b"no header at all\r\n\r\n{}",
    b"Content-Type: text/plain\r\n\r\n{}",                                      # no Content-Length
], ids=["non-numeric", "short", "lf-only", "long-header", "garbage", "no-length"])
def test_a_malformed_frame_is_answered_with_a_parse_error_and_the_connection_kept(tmp_path: Path, frame: bytes) -> None:
    async def scenario() -> None:
        server = await Raw(tmp_path).start()
        await server.initialize()
        server.write(frame)
        body = hover_body(1, tmp_path / "m.py")
        server.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)  # the next frame is read
        answer = await server.response(1)
        assert answer["result"] is None
        assert errors(server.seen) == [(None, PARSE_ERROR)]
        status, stderr = await server.stop()
        assert (status, stderr) == (0, "")
    run(scenario())


def test_header_names_are_read_in_any_case(tmp_path: Path) -> None:
    async def scenario() -> None:
        server = await Raw(tmp_path).start()
        await server.initialize()
        body = hover_body(1, tmp_path / "m.py")
        server.write(b"content-length: %d\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
                     % len(body) + body)
        assert (await server.response(1))["result"] is None
        assert errors(server.seen) == []
        assert await server.stop() == (0, "")
    run(scenario())


def test_requests_it_cannot_take_get_json_rpc_errors_and_every_request_an_answer(tmp_path: Path) -> None:
    async def scenario() -> None:
        server = await Raw(tmp_path).start()
        hover = {"textDocument": {"uri": uri(tmp_path / "m.py")}, "position": {"line": 0, "character": 0}}
        # Before initialize: a request is refused, a notification dropped.
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(tmp_path / "m.py"), "languageId": "python", "version": 1, "text": UNDECLARED}})
        early = server.request("textDocument/hover", hover)
        assert errors([await server.response(early)]) == [(early, NOT_INITIALIZED)]
        await server.initialize()
        again = server.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert errors([await server.response(again)]) == [(again, INVALID_REQUEST)]
        server.write(b"Content-Length: 5\r\n\r\n{nope")                                     # not JSON
        server.send([{"jsonrpc": "2.0", "id": 1, "method": "shutdown"},
                     {"jsonrpc": "2.0", "method": "initialized", "params": {}}])            # a batch
        server.send([])                                                                     # an empty batch
        server.send({"id": 2, "method": "textDocument/hover", "params": hover})             # no jsonrpc
        server.send({"jsonrpc": "1.0", "id": 3, "method": "textDocument/hover", "params": hover})
        server.send({"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover",
                     "params": {"textDocument": 5}})                                        # invalid params
        server.send({"jsonrpc": "2.0", "id": {"x": 1}, "method": "textDocument/hover", "params": hover})
        server.send({"jsonrpc": "2.0", "id": 5, "method": "no/suchMethod"})
        server.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": []}})
        server.send({"jsonrpc": "2.0", "method": "$/unknownNotification"})
        server.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": []}})  # an id no request has
        server.send({"jsonrpc": "2.0", "id": 6, "method": "workspace/executeCommand",
                     "params": {"command": "skiplint.showLayout", "arguments": [5, "x"]}})
        server.send("a string")
        last = server.request("textDocument/hover", hover)
        assert (await server.response(last))["result"] is None
        if not any(m.get("id") == 6 for m in server.seen):  # a command is answered when it ends
            await server.response(6)
        assert sorted(errors(server.seen)[2:], key=repr) == sorted([
            (None, PARSE_ERROR), (1, INVALID_REQUEST), (None, INVALID_REQUEST), (2, INVALID_REQUEST),
            (3, INVALID_REQUEST), (4, INVALID_PARAMS), (None, INVALID_REQUEST), (5, -32601), (6, INVALID_PARAMS),
            (None, INVALID_REQUEST)], key=repr)
        assert not [m for m in server.seen if m.get("method") in ("window/showMessage", "textDocument/publishDiagnostics")]
        late = server.request("shutdown")
        await server.response(late)
        after = server.request("textDocument/hover", hover)
        assert errors([await server.response(after)]) == [(after, INVALID_REQUEST)]
        server.notify("exit")
        assert server.process is not None and server.process.stderr is not None
        assert await asyncio.wait_for(server.process.wait(), 120) == 0
        assert (await server.process.stderr.read()) == b""
    run(scenario())


def ranged(address: str, version: int, *changes: tuple[tuple[int, int], tuple[int, int], str]
           ) -> types.DidChangeTextDocumentParams:
    return types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=address, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=a[0], character=a[1]), end=types.Position(line=b[0], character=b[1])),
            text=text) for a, b, text in changes])


def test_ranged_changes_are_applied_exactly_in_utf16_units(tmp_path: Path) -> None:
    # U+1F600 takes two UTF-16 units: a server that counted code points would edit two places too far.
    text = "# \U0001F600\U0001F600 layers\n" + UNDECLARED.replace('        yield stash("extra", x)\n', "")
    path = project(tmp_path, {"layer.py": text}) / "layer.py"
    expected = text.replace("\U0001F600 layers", "\U0001F600 the layers").replace(
        '        yield stash("skip", x)', '        stash("skip", x)')

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path, text)
            assert (await session.diagnostics(address, version=1)).diagnostics == ()
            line = text.splitlines().index('        yield stash("skip", x)')
            session.client.text_document_did_change(ranged(
                address, 2, ((0, 7), (0, 7), "the "), ((line, 8), (line, 11), ""), ((line, 8), (line, 11), "")))
            published = await session.diagnostics(address, version=2)
            assert as_cli(published) == cli_rows(cli_json(expected, str(path), tmp_path))
            assert [d.code for d in published.diagnostics] == ["SKP107"]
            # The quick fix offered is made on the text the edits made: applied, the yield is back.
            found = await session.request(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=address), range=published.diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=list(published.diagnostics))))
            (fix,) = [a for a in found if a.title == "Add `yield`"]
            assert apply(expected, edits_of(fix)) == text.replace("\U0001F600 layers", "\U0001F600 the layers")
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_a_range_outside_the_document_is_refused_never_guessed(tmp_path: Path) -> None:
    text = "# \U0001F600\n" + UNDECLARED
    path = project(tmp_path, {"layer.py": text}) / "layer.py"

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path, text)
            assert [d.code for d in (await session.diagnostics(address, version=1)).diagnostics] == ["SKP101"]
            count = len(session.published[address])
            session.client.text_document_did_change(ranged(address, 2, ((0, 3), (0, 3), "x")))  # inside U+1F600
            said = await session.message("names a range that is not in the document")
            assert said.type == types.MessageType.Error
            assert (await session.diagnostics(address, after=count)).diagnostics == ()  # withdrawn
            session.client.text_document_did_change(ranged(address, 3, ((0, 0), (0, 0), "# ")))
            await session.roundtrip()
            assert len(session.published[address]) == count + 1  # still out of step: nothing analysed
            session.change(address, text, 4)  # the whole text again
            assert [d.code for d in (await session.diagnostics(address, version=4)).diagnostics] == ["SKP101"]
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_a_change_of_a_document_that_is_not_open_is_only_logged(tmp_path: Path) -> None:
    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            session.change(uri(tmp_path / "never-opened.py"), UNDECLARED, 2)
            session.client.text_document_did_change(ranged(uri(tmp_path / "never-opened.py"), 3, ((0, 0), (0, 0), "x")))
            await session.roundtrip()
            assert session.messages == [] and session.published == {}
        finally:
            assert await session.stop() == 0
    run(scenario())


@pytest.mark.parametrize("text", [
    "# coding: rot13\n" + UNDECLARED,
    "# coding: nonesuch\n" + UNDECLARED,
    "# coding: utf-16\n" + UNDECLARED,
    "# -*- coding: latin-1 -*-\n" + UNDECLARED.replace("x = ", "x = 'caf\u00e9'; x = "),
    UNDECLARED.replace('"extra"', '"\ud800"'),                        # a lone surrogate in a string
    UNDECLARED + "# a lone surrogate in a comment \udcff\n",
], ids=["rot13", "unknown", "utf-16", "latin-1", "surrogate", "surrogate-comment"])
def test_text_is_read_as_the_cli_reads_the_file_that_holds_it(tmp_path: Path, text: str) -> None:
    from skiplint.sources import file_bytes

    path = tmp_path / "layer.py"

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path, text)
            published = await session.diagnostics(address, version=1)
            path.write_bytes(file_bytes(text))
            done = inprocess.skiplint(["--format", "json", "layer.py"], tmp_path)
            expected = cli_rows(json.loads(done.stdout)["diagnostics"])
            assert as_cli(published) == expected
            if "utf-16" not in text:  # (what the CLI says of a UTF-16 cookie in ASCII is the CLI's to say)
                assert [row["code"] for row in expected] in (["SKP900"], ["SKP101"])
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_no_noqa_is_offered_where_noqa_cannot_silence(tmp_path: Path) -> None:
    broken = UNDECLARED.replace("def forward(self, x):", "def forward(self, x:")
    path = project(tmp_path, {"layer.py": broken}) / "layer.py"

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            address = session.open(path)
            published = await session.diagnostics(address, version=1)
            assert [d.code for d in published.diagnostics] == ["SKP900"]
            actions = await session.request(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=address), range=published.diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=list(published.diagnostics))))
            assert list(actions) == []
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_forged_resolve_data_names_nothing_and_writes_nothing(tmp_path: Path) -> None:
    from tests.test_lsp_features import BLOCKS as blocks

    path = project(tmp_path, {"blocks.py": blocks, "model.py": MODEL.replace(
        "model = nn.Sequential(Down(), Up())",
        "from torchgpipe import GPipe\n\nmodel = GPipe(nn.Sequential(Down(), Up()), balance=[1, 1], chunks=2)"),
        "layer.py": UNDECLARED})
    model, layer = path / "model.py", path / "layer.py"

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        try:
            model_address, layer_address = session.open(model), session.open(layer)
            published = await session.diagnostics(layer_address, version=1)
            await session.diagnostics(model_address, version=1)
            lenses = await session.request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(
                text_document=types.TextDocumentIdentifier(uri=model_address)))
            assert len(lenses) == 1
            actions = await session.request(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=layer_address), range=published.diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=list(published.diagnostics))))
            noqa = next(a for a in actions if a.title.startswith("Suppress"))
            serial = noqa.data[1]
            model_serial = serial - 1 if serial > 1 else serial + 1
            forged = [[model_address, model_serial, "lens", ""], [model_address, model_serial, "lens", "", None],
                      noqa.data[:4] + ["SKP999"] + noqa.data[5:], noqa.data[:4] + ["SKP101", 1, 0, "SKP101 forged"],
                      [layer_address, serial, "noqa", "elsewhere"] + noqa.data[4:], "text", None, [1, 2, 3, 4],
                      [layer_address, serial, "all", "torchgpipe", "extra"]]
            for data in forged:
                action = await session.request(types.CODE_ACTION_RESOLVE, types.CodeAction(title="forged", data=data))
                assert action.edit is None and action.disabled is not None, data
            resolved = await session.request(types.CODE_ACTION_RESOLVE, types.CodeAction(title="real", data=noqa.data))
            assert apply(UNDECLARED, edits_of(resolved)).count("# noqa: SKP101") == 1
            again = await session.request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(
                text_document=types.TextDocumentIdentifier(uri=model_address)))
            assert again == lenses
        finally:
            assert await session.stop() == 0
    run(scenario())


def test_isolated_given_as_a_string_is_read_strictly(tmp_path: Path) -> None:
    path = project(tmp_path, {"layer.py": UNDECLARED, "setup.cfg": "[skiplint]\nignore = SKP101\n"}) / "layer.py"

    async def scenario() -> None:
        followed = await Session(tmp_path, settings={"isolated": "false"}).start()
        isolated = await Session(tmp_path, settings={"isolated": "TRUE"}).start()
        wrong = await Session(tmp_path, settings={"isolated": "no"}).start()
        try:
            assert (await followed.diagnostics(followed.open(path), version=1)).diagnostics == ()
            assert [d.code for d in (await isolated.diagnostics(isolated.open(path), version=1)).diagnostics] == \
                ["SKP101"]
            said = await wrong.message("setting isolated")
            assert said.message == "skiplint: setting isolated: expected true or false, got 'no'"
            assert (await wrong.diagnostics(wrong.open(path), version=1)).diagnostics == ()  # taken as false
        finally:
            for session in (followed, isolated, wrong):
                assert await session.stop() == 0
    run(scenario())


def test_python_m_skiplint_server_imports_nothing_from_the_workspace(tmp_path: Path) -> None:
    project(tmp_path, {"typing_extensions.py": "raise SystemExit('the workspace was imported')\n",
                       "lsprotocol.py": "raise SystemExit('the workspace was imported')\n"})

    async def scenario() -> None:
        session = await Session(tmp_path).start()
        assert session.result is not None
        assert await session.stop() == 0
    run(scenario())


def test_the_byte_stream_fuzz_finds_nothing_in_a_small_budget() -> None:
    # One input of each family per seed (tests/fuzz/server_stream.py; the long run: docs/fuzzing.md).
    from tests.fuzz import server_stream

    problems, done = run(server_stream.run_seeds(list(range(30)), per_process=15))
    assert (problems, done) == ([], 30)


def test_standard_input_that_is_a_file_is_read_too(tmp_path: Path) -> None:
    # The event loop cannot watch a regular file: it is read on a thread, through the same frame reader.
    def frame(message: Any) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    stream = tmp_path / "input.bin"
    stream.write_bytes(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                              "params": {"processId": None, "rootUri": None, "capabilities": {}}})
                       + b"Content-Length: x\r\n\r\n" + frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
                       + frame({"jsonrpc": "2.0", "method": "exit"}))
    import subprocess

    with stream.open("rb") as stdin:
        done = subprocess.run([sys.executable, "-m", "skiplint", "server"], stdin=stdin, capture_output=True,
                              cwd=tmp_path, timeout=120)
    assert (done.returncode, done.stderr) == (0, b"")
    answers = [json.loads(part.split(b"\r\n\r\n", 1)[1]) for part in done.stdout.split(b"Content-Length: ")[1:]]
    assert [(a.get("id"), "error" in a) for a in answers if "method" not in a] == [(1, False), (None, True), (2, False)]
