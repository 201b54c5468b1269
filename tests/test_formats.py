"""Reporters on the fixtures: text, JSON (against docs/json-schema.json), SARIF 2.1.0, GitHub."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from skiplint import cli, formats, rules
from tests.messages import printed

REPO = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO / "docs" / "json-schema.json").read_text(encoding="utf-8"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


# A small validator for the part of JSON Schema that docs/json-schema.json uses.
def validate(value: Any, schema: dict[str, Any], where: str = "$") -> None:
    kinds = {"object": dict, "array": list, "string": str, "integer": int, "null": type(None), "boolean": bool}
    if "const" in schema:
        assert value == schema["const"], f"{where}: {value!r} != {schema['const']!r}"
    if "type" in schema:
        wanted = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        assert any(isinstance(value, kinds[k]) and isinstance(value, bool) == (k == "boolean") for k in wanted), \
            f"{where}: {value!r} is not {wanted}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            assert key in value, f"{where}: missing {key!r}"
        props = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            extra = set(value) - set(props)
            assert not extra, f"{where}: unexpected {sorted(extra)}"
        for key, item in value.items():
            if key in props:
                validate(item, props[key], f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            validate(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, str) and "pattern" in schema:
        assert re.search(schema["pattern"], value), f"{where}: {value!r} !~ {schema['pattern']}"
    if isinstance(value, int) and "minimum" in schema:
        assert value >= schema["minimum"], f"{where}: {value} < {schema['minimum']}"


def text_findings(out: str) -> list[tuple[str, int, int, str]]:
    found = []
    for line in out.splitlines():
        match = re.match(r"^(.+?):(\d+):(\d+): (SKP\d{3}) ", line)
        assert match, line
        found.append((match[1], int(match[2]), int(match[3]), match[4]))
    return found


@pytest.mark.usefixtures("in_repo")
def test_json_follows_its_schema_and_matches_text(capsys: pytest.CaptureFixture[str]) -> None:
    status, text_out, _ = run(capsys, "--isolated", "-j", "1", "fixtures")
    status_json, out, _ = run(capsys, "--isolated", "-j", "1", "--format", "json", "--statistics",
                              "--show-source", "fixtures")
    assert status == status_json == 1
    payload = json.loads(out)
    validate(payload, SCHEMA)
    assert payload["schema_version"] == formats.JSON_SCHEMA_VERSION
    from_json = [(d["path"], d["line"], d["column"], d["code"]) for d in payload["diagnostics"]]
    assert from_json == text_findings(text_out)
    assert sum(s["count"] for s in payload["statistics"]) == len(from_json)
    for d in payload["diagnostics"]:
        assert not re.match(r"SKP\d{3} ", d["message"]), d["message"]
        assert d["name"] == rules.RULES[d["code"]].name
        assert d["source"] is not None


@pytest.mark.usefixtures("in_repo")
def test_sarif_has_what_code_scanning_requires(capsys: pytest.CaptureFixture[str]) -> None:
    _, text_out, _ = run(capsys, "--isolated", "-j", "1", "fixtures")
    _, out, _ = run(capsys, "--isolated", "-j", "1", "--format", "sarif", "fixtures")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    (run_,) = sarif["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "skiplint"
    ids = [rule["id"] for rule in driver["rules"]]
    assert ids == list(rules.RULES)
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["helpUri"].startswith("https://") and rule["helpUri"].endswith("#" + rule["id"].lower())
        assert rule["name"] == rules.RULES[rule["id"]].name
    results = run_["results"]
    found = []
    for result in results:
        assert ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert not re.match(r"SKP\d{3} ", result["message"]["text"]), result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        uri = physical["artifactLocation"]["uri"]
        assert not uri.startswith("/") and "\\" not in uri
        region = physical["region"]
        found.append((uri, region["startLine"], region["startColumn"], result["ruleId"]))
    assert found == [(p.replace("\\", "/"), line, col, code) for p, line, col, code in text_findings(text_out)]
    assert run_["columnKind"] == "unicodeCodePoints"


@pytest.mark.usefixtures("in_repo")
def test_github_annotations(capsys: pytest.CaptureFixture[str]) -> None:
    _, text_out, _ = run(capsys, "--isolated", "-j", "1", "fixtures")
    _, out, _ = run(capsys, "--isolated", "-j", "1", "--format", "github", "--extend-select",
                    ",".join(sorted(rules.OPT_IN)), "fixtures")
    pattern = re.compile(r"^::(error|notice) file=([^,]+),line=(\d+),col=(\d+),"
                         r"title=(SKP\d{3}) [a-z0-9-]+::(?!SKP\d{3} )")
    annotations = []
    for line in out.splitlines():
        match = pattern.match(line)
        assert match, line
        assert (match[1] == "notice") == (match[5] in rules.OPT_IN)
        annotations.append((match[2], int(match[3]), int(match[4]), match[5]))
    default = set(text_findings(text_out))
    assert default <= set(annotations)
    assert any(code in rules.OPT_IN for *_, code in annotations)


def test_github_escapes_what_workflow_commands_need() -> None:
    assert formats._escape_data("50%\nnext") == "50%25%0Anext"
    assert formats._escape_property("a:b,c") == "a%3Ab%2Cc"


LAYER = '''from torch import nn
from torchgpipe.skip import skippable, stash


@skippable(stash=["skip"])
class Typo(nn.Module):
    def forward(self, x):
        yield stash("skp", x)
        return x
'''


def test_text_options_output_statistics_source(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(LAYER, encoding="utf-8")
    status, out, _ = run(capsys, "--isolated", "--show-source", "--statistics", "m.py")
    assert status == 1
    assert out == (
        printed("m.py", 5, 19, "SKP103", name="skip") + "\n"
        + '@skippable(stash=["skip"])\n'
        "                  ^\n"
        + printed("m.py", 8, 15, "SKP101", name="skp") + "\n"
        + '        yield stash("skp", x)\n'
        "              ^\n"
        "1     SKP101 undeclared-stash\n"
        "1     SKP103 unused-stash-declaration\n"
    )
    status, out, _ = run(capsys, "--isolated", "--exit-zero", "--output", "report.sarif", "--format", "sarif", "m.py")
    assert status == 0 and out == ""
    assert len(json.loads((tmp_path / "report.sarif").read_text())["runs"][0]["results"]) == 2


def test_exit_statuses(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # No files at all: not an error, but said (a mistyped directory or exclude checks nothing).
    assert run(capsys, "--isolated") == (0, "", "skiplint: no Python files to check in .\n")
    (tmp_path / "docs").mkdir()
    assert run(capsys, "--isolated", "docs", "--extend-exclude", "x") == (
        0, "", "skiplint: no Python files to check in docs\n")
    (tmp_path / "clean.py").write_text("import torchgpipe\n", encoding="utf-8")
    assert run(capsys, "--isolated", "clean.py")[0] == 0
    (tmp_path / "broken.py").write_text("import torchgpipe\ndef (:\n", encoding="utf-8")
    status, out, _ = run(capsys, "--isolated", "--exit-zero", "--format", "json", ".")
    assert status == 2
    payload = json.loads(out)
    validate(payload, SCHEMA)
    assert [u["path"] for u in payload["unchecked"]] == ["./broken.py"]
    assert payload["diagnostics"][0]["code"] == "SKP900"
    status, out, _ = run(capsys, "--isolated", "--format", "sarif", ".")
    assert status == 2
    assert json.loads(out)["runs"][0]["invocations"][0]["executionSuccessful"] is False


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--format", "xml"], ["-j", "many"]):
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == 2
    capsys.readouterr()
