"""`skiplint layout`: the picture, the JSON route table, dot and mermaid, and unresolvable models."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from skiplint import cli, layout

REPO = Path(__file__).resolve().parent.parent
UNET = str(REPO / "fixtures" / "compositions" / "unet.py")


def run(capsys, *argv: str) -> tuple[int, str]:
    status = cli.main(["layout", *argv])
    return status, capsys.readouterr().out


def test_text_draws_every_skip_with_partitions(capsys) -> None:
    status, out = run(capsys, f"{UNET}:pipe")
    assert status == 0
    assert "partition 0" in out and "partition 2" in out
    assert out.count("stash 'skip' @namespaces[") == 3 and out.count("pop 'skip' @namespaces[") == 3
    assert "[crosses partition 0 → 2]" in out


def test_json_route_table(capsys) -> None:
    status, out = run(capsys, f"{UNET}:model", "--balance", "3,2,2", "--format", "json")
    assert status == 0
    [model] = json.loads(out)
    routes = [(r["ns"], r["stash_layer"], r["pop_layer"], r["stash_partition"], r["pop_partition"])
              for r in model["routes"]]
    assert routes == [("namespaces[2]", 2, 4, 0, 1), ("namespaces[1]", 1, 5, 0, 2), ("namespaces[0]", 0, 6, 0, 2)]
    assert "namespaces" not in model


def test_route_table_api_matches_json() -> None:
    rows = layout.route_table(UNET, "deep", [4, 3, 2])
    assert len(rows) == 4 and all(r["name"] == "skip" for r in rows)
    assert {r["ns"] for r in rows} == {"ns1", "ns2", "ns3", "ns4"}


def test_dot_and_mermaid(capsys) -> None:
    _, dot = run(capsys, f"{UNET}:pipe", "--format", "dot")
    assert dot.startswith('digraph "pipe"') and "cluster_2" in dot and "color=red" in dot
    _, mermaid = run(capsys, f"{UNET}:pipe", "--format", "mermaid")
    assert mermaid.startswith("flowchart TD") and '==> L6' in mermaid


def test_unresolvable_model_says_why(capsys, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from torch import nn\nfrom torchgpipe import GPipe\nfrom elsewhere import make\n"
                      "pipe = GPipe(nn.Sequential(*make()), balance=[1, 1])\n")
    status, out = run(capsys, str(source))
    assert status == 2
    assert "skips cannot be resolved" in out and "*make()" in out


def test_missing_name(capsys) -> None:
    status, _ = run(capsys, f"{UNET}:nothing_here")
    assert status == 1


NAMESPACE_MIX_UP = """\
from torch import nn
from torchgpipe.skip import Namespace, pop, skippable, stash


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


ns1, ns2 = Namespace(), Namespace()
model = nn.Sequential(Down().isolate(ns1), Down().isolate(ns2), nn.ReLU(), Up().isolate(ns2), Up().isolate(ns2))
"""


def test_the_picture_names_namespaces_as_the_source_does(capsys, tmp_path: Path) -> None:
    # Layers 1, 3 and 4 are in ns2: the only arc is ns2's, though ns2 is the first namespace stashed into.
    source = tmp_path / "mixup.py"
    source.write_text(NAMESPACE_MIX_UP, encoding="utf-8")
    status, out = run(capsys, f"{source}:model")
    assert status == 0
    lines = out.splitlines()
    assert lines[2].split("  ")[-1] == "stash 'skip' @ns2 → layer 3"
    assert lines[4].split("  ")[-1] == "pop 'skip' @ns2 ← layer 1"
    assert "@ns1" not in "\n".join(lines[:6])


def test_the_json_names_namespaces_as_the_source_does(capsys, tmp_path: Path) -> None:
    source = tmp_path / "mixup.py"
    source.write_text(NAMESPACE_MIX_UP, encoding="utf-8")
    status, out = run(capsys, f"{source}:model", "--format", "json")
    assert status == 0
    [model] = json.loads(out)
    assert [(r["ns"], r["stash_layer"], r["pop_layer"]) for r in model["routes"]] == [("ns2", 1, 3), ("ns2", None, 4)]
    _, mermaid = run(capsys, f"{source}:model", "--format", "mermaid")
    assert '  L1 -. "skip (ns2)" .-> L3' in mermaid.splitlines()
    # The Python API keeps the order labels a live model is compared by: ns2 is stashed into first.
    assert [r["ns"] for r in layout.route_table(str(source), "model")] == ["ns1", "ns1"]


def test_the_notes_pair_the_pop_in_the_wrong_namespace_with_the_stash_it_leaves(capsys, tmp_path: Path) -> None:
    # Built and run inside a function: no SKP202 is reported, and the note on the stash still points to the pop.
    source = tmp_path / "local.py"
    body = NAMESPACE_MIX_UP.replace("ns1, ns2 = Namespace(), Namespace()\nmodel = ",
                                    "def run(x):\n    ns1, ns2 = Namespace(), Namespace()\n    model = ")
    source.write_text(body + "    return model(x)\n", encoding="utf-8")
    status, out = run(capsys, f"{source}:model")
    assert status == 0
    assert [line for line in out.splitlines() if line.startswith("  note: ")] == [
        "  note: SKP204 layer 4 (Up) pops 'skip' in namespace ns2 again (first popped by layer 3 (Up)); "
        "the stash no layer pops is layer 0 (Down)'s, in namespace ns1",
        "  note: layer 0 (Down) stashes 'skip' in namespace ns1 but no later layer pops it; "
        "layer 4 (Up) pops 'skip' in namespace ns2 instead"]


def test_label_namespaces_is_order_based() -> None:
    labels = layout.label_namespaces([("b", "x", 3), ("a", "x", 1), (None, "y", 0)])
    assert labels == {None: None, "a": "ns1", "b": "ns2"}


def run_all(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(["layout", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_balance_short_of_the_layers_leaves_them_in_no_partition_and_fails(capsys) -> None:
    status, out, _ = run_all(capsys, f"{UNET}:pipe", "--balance", "1,1")
    assert status == 1  # the pipe would refuse this balance
    lines = out.splitlines()
    assert lines[0] == f"pipe  ({UNET}:53)  GPipe  balance=[1, 1]"
    assert lines[1] == ("  balance sums to 2 but the composition has 7 layers: layers 2-6 are in no "
                        "partition, and the pipe would fail")
    assert "partition None" not in out
    assert [line.strip(" ─│") for line in lines if line.startswith("  ────")] == [
        "partition 0", "partition 1", "in no partition"]
    assert "[crosses partition 0 → no partition]" in out
    status, out, _ = run_all(capsys, f"{UNET}:pipe", "--balance", "4,4")
    assert status == 1 and "balance sums to 8 but the composition has 7 layers: the pipe would fail" in out
    status, out, _ = run_all(capsys, f"{UNET}:pipe", "--balance", "1,1", "--format", "json")
    [model] = json.loads(out)
    assert status == 1 and [layer["partition"] for layer in model["layers"]] == [0, 1, None, None, None, None, None]
    assert model["balance_problem"].startswith("balance sums to 2")


def test_header_shows_the_pipe_calls_line(capsys) -> None:
    _, pipe, _ = run_all(capsys, f"{UNET}:pipe")
    _, deep, _ = run_all(capsys, f"{UNET}:deep_pipe")
    assert pipe.splitlines()[0] == f"pipe  ({UNET}:53)  GPipe  balance=[3, 2, 2]"
    assert deep.splitlines()[0] == f"deep_pipe  ({UNET}:54)  GPipe  balance=[4, 3, 2]"
    _, by_line, _ = run_all(capsys, f"{UNET}:54")
    assert by_line.splitlines()[0].startswith("deep_pipe  ")


def test_pop_without_an_earlier_stash_gets_a_note(capsys, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(UNET_BLOCKS + "backwards = nn.Sequential(Up(), Down())\n")
    status, out, _ = run_all(capsys, f"{source}:backwards")
    assert status == 0
    assert out.splitlines()[-2:] == [
        "  note: SKP201 layer 0 (Up) pops 'skip' but no earlier layer stashes it",
        "  note: SKP202 layer 1 (Down) stashes 'skip' but no later layer pops it",
    ]


UNET_BLOCKS = '''from torch import nn
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


@pytest.mark.parametrize("balance", ["1,-1", "1,x", "0,7", "", "1.5,2"])
def test_bad_balance_is_one_line_and_exit_2(capsys, balance: str) -> None:
    status, out, err = run_all(capsys, f"{UNET}:pipe", "--balance", balance)
    assert status == 2 and out == ""
    assert err == f"skiplint layout: --balance wants positive integers separated by commas, not {balance!r}\n"


def test_format_has_help(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["layout", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "text: the picture (default); json: layers, partitions and the route table; dot: " \
           "Graphviz; mermaid: a Mermaid flowchart" in out


def test_directory_and_several_files(capsys, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(UNET_BLOCKS + "first = nn.Sequential(Down(), Up())\n")
    (tmp_path / "b.py").write_text(UNET_BLOCKS + "second = nn.Sequential(Down(), Up())\n"
                                   "third = nn.Sequential(Down(), nn.ReLU(), Up())\n")
    (tmp_path / "plain.py").write_text("import os\n")
    status, out, err = run_all(capsys, str(tmp_path))
    assert status == 0 and err == ""
    headers = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert headers == [f"first  ({tmp_path / 'a.py'}:19)", f"second  ({tmp_path / 'b.py'}:19)",
                       f"third  ({tmp_path / 'b.py'}:20)"]
    status, out, _ = run_all(capsys, f"{tmp_path / 'b.py'}:third", str(tmp_path / "a.py"))
    assert status == 0
    assert [line for line in out.splitlines() if line and not line.startswith(" ")] == [
        f"third  ({tmp_path / 'b.py'}:20)", f"first  ({tmp_path / 'a.py'}:19)"]
    status, _, err = run_all(capsys, str(tmp_path / "plain.py"))
    assert status == 1 and err == f"{tmp_path / 'plain.py'}: no composition with skippable layers\n"


def test_layout_reads_the_projects_api_aliases(capsys, tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "api.py").write_text("from torchgpipe.skip import pop, skippable, stash\n")
    (tmp_path / "m.py").write_text(UNET_BLOCKS.replace("from torchgpipe.skip import", "from mypkg.api import")
                                   + "model = nn.Sequential(Down(), Up())\n")
    status, _, err = run_all(capsys, str(tmp_path / "m.py"))
    assert status == 1 and "no composition with skippable layers" in err
    (tmp_path / "pyproject.toml").write_text('[tool.skiplint]\napi-aliases = {"mypkg.api" = "torchgpipe.skip"}\n')
    status, out, _ = run_all(capsys, str(tmp_path / "m.py"))
    assert status == 0 and "stash 'skip' → layer 1" in out and "pop 'skip' ← layer 0" in out


FACTORIES = UNET_BLOCKS.replace("from torch import nn", "import torch\nfrom torch import nn") + '''def build():
    model = nn.Sequential(Down(), Down(), nn.ReLU(), Up(), Up())
    return model, torch.randn(2, 4)


def build_pair():
    return nn.Sequential(Down(), nn.ReLU(), Up()), torch.randn(2, 4)


def build_model():
    return nn.Sequential(Down(), Up())


def outer():
    def inner():
        return nn.Sequential(Down(), Up())
    return inner


class Holder:
    def make(self):
        return nn.Sequential(Down(), Up())
'''


def test_a_factory_is_named_as_verify_names_it_also_when_it_returns_model_and_sample(
        capsys, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(FACTORIES)
    status, out, err = run_all(capsys, f"{source}:build_pair")
    assert (status, err) == (0, "")
    assert out.splitlines() == [f"Sequential@26  ({source}:26)",
                                "       0  Down  ┬  stash 'skip' → layer 2",
                                "       1  ReLU  │",
                                "       2  Up    ┴  pop 'skip' ← layer 0"]
    status, out, _ = run_all(capsys, f"{source}:build_model")
    assert status == 0 and out.splitlines()[0] == f"build_model()  ({source}:30)"
    status, out, _ = run_all(capsys, f"{source}:build")
    assert status == 0 and out.splitlines()[0] == f"model  ({source}:21)"
    [model] = json.loads(run_all(capsys, f"{source}:build", "--format", "json")[1])
    assert [layer["label"] for layer in model["layers"]] == ["Down", "Down", "ReLU", "Up", "Up"]


def test_a_name_that_picks_nothing_lists_the_names_there_are(capsys, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(FACTORIES)
    for name in ("nothing", "inner", "make"):  # a nested function or a method is no factory verify can name
        status, out, err = run_all(capsys, f"{source}:{name}")
        assert (status, out) == (1, "")
        assert err == f"{source}: no composition named {name!r}; it has: build, build_model, build_pair, make()\n"
    (tmp_path / "plain.py").write_text("import os\n")
    status, _, err = run_all(capsys, f"{tmp_path / 'plain.py'}:model")
    assert status == 1
    assert err == (f"{tmp_path / 'plain.py'}: no composition named 'model'; "
                   "it has no composition that skiplint can list\n")


def test_a_name_reused_without_a_namespace_is_drawn_as_it_runs_and_said_in_the_lints_words(
        capsys, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(FACTORIES)
    status, out, _ = run_all(capsys, f"{source}:build")
    assert status == 0
    # The second stash replaces the first in the skip tracker, the first pop takes it, the second
    # pop finds nothing: the lint's SKP203 and SKP204, not "no earlier layer stashes it".
    assert out.splitlines()[1:] == [
        "       0  Down",
        "       1  Down  ┬  stash 'skip' → layer 3",
        "       2  ReLU  │",
        "       3  Up    ┴  pop 'skip' ← layer 1",
        "       4  Up",
        "  note: SKP203 layer 1 (Down) stashes 'skip' again (first stashed by layer 0 (Down)); "
        "isolate it with a Namespace",
        "  note: SKP204 layer 4 (Up) pops 'skip' again (first popped by layer 3 (Up)); isolate it with a Namespace",
    ]
    assert cli.main(["--isolated", "-j", "1", str(source)]) == 1
    lint = capsys.readouterr().out
    assert [line.split(": ", 1)[1] for line in lint.splitlines() if ":21:" in line] == [
        note.split("note: ", 1)[1] for note in out.splitlines() if "note: " in note]
    [model] = json.loads(run_all(capsys, f"{source}:build", "--format", "json")[1])
    assert [(r["stash_layer"], r["pop_layer"]) for r in model["routes"]] == [(1, 3), (None, 4)]
    assert model["notes"] == [note.split("note: ", 1)[1] for note in out.splitlines() if "note: " in note]


def test_a_name_stashed_and_popped_twice_without_a_namespace_has_both_arcs(capsys, tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(UNET_BLOCKS + "twice = nn.Sequential(Down(), Up(), Down(), Up())\n"
                      "from torchgpipe import GPipe\nleft = GPipe(nn.Sequential(Down(), nn.ReLU()), balance=[1, 1])\n"
                      "def local(x):\n    seq = nn.Sequential(Down(), nn.ReLU())\n    return seq(x)\n")
    status, out, _ = run_all(capsys, f"{source}:twice")
    assert status == 0
    assert out.splitlines()[1:] == [
        "       0  Down  ┬  stash 'skip' → layer 1",
        "       1  Up    ┴  pop 'skip' ← layer 0",
        "       2  Down  ┬  stash 'skip' → layer 3",
        "       3  Up    ┴  pop 'skip' ← layer 2",
        "  note: SKP203 layer 2 (Down) stashes 'skip' again (first stashed by layer 0 (Down)); "
        "isolate it with a Namespace",
        "  note: SKP204 layer 3 (Up) pops 'skip' again (first popped by layer 1 (Up)); isolate it with a Namespace",
    ]
    # Given to a pipe, a stash nobody pops is the lint's SKP202; run plain, it is only a note.
    status, out, _ = run_all(capsys, f"{source}:left")
    assert out.splitlines()[-1] == "  note: SKP202 layer 0 (Down) stashes 'skip' but no later layer pops it"
    status, out, _ = run_all(capsys, f"{source}:seq")
    assert out.splitlines()[-1] == "  note: layer 0 (Down) stashes 'skip' but no later layer pops it"


def test_the_docs_examples_of_a_factory_and_a_reused_name_are_what_layout_prints(
        capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    text = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    examples = re.findall(r"```\n\$ skiplint layout (fixtures/compositions/reused_unisolated\.py:\w+)\n(.*?)```",
                          text, re.S)
    assert [target for target, _ in examples] == ["fixtures/compositions/reused_unisolated.py:buld",
                                                  "fixtures/compositions/reused_unisolated.py:build"]
    for target, shown in examples:
        status, out, err = run_all(capsys, target)
        assert out + err == shown
        assert status == (1 if target.endswith("buld") else 0)
