"""`skiplint layout`: the picture, the JSON route table, dot and mermaid, and unresolvable models."""

from __future__ import annotations

import json
from pathlib import Path

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
    assert out.count("stash 'skip' @ns") == 3 and out.count("pop 'skip' @ns") == 3
    assert "[crosses partition 0 → 2]" in out


def test_json_route_table(capsys) -> None:
    status, out = run(capsys, f"{UNET}:model", "--balance", "3,2,2", "--format", "json")
    assert status == 0
    [model] = json.loads(out)
    routes = [(r["ns"], r["stash_layer"], r["pop_layer"], r["stash_partition"], r["pop_partition"])
              for r in model["routes"]]
    assert routes == [("ns3", 2, 4, 0, 1), ("ns2", 1, 5, 0, 2), ("ns1", 0, 6, 0, 2)]
    assert model["namespaces"] == {"ns1": "namespaces[0]", "ns2": "namespaces[1]", "ns3": "namespaces[2]"}


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


def test_label_namespaces_is_order_based() -> None:
    labels = layout.label_namespaces([("b", "x", 3), ("a", "x", 1), (None, "y", 0)])
    assert labels == {None: None, "a": "ns1", "b": "ns2"}
