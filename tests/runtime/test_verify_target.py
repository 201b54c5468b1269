"""verify judges its target: the findings of the classes and compositions the factory builds are
joined, the rest of its file's findings are listed apart; each file is analysed once."""

import textwrap

import pytest

from skiplint import engine
from skiplint.cli import main
from skiplint.runtime import verify

MIXED = textwrap.dedent("""\
    import torch
    from torch import nn
    from torchgpipe.skip import pop, skippable, stash


    @skippable(stash=["skip"])
    class Stash(nn.Module):
        def forward(self, x):
            yield stash("skip", x)
            return x


    @skippable(pop=["skip"])
    class Pop(nn.Module):
        def forward(self, x):
            skip = yield pop("skip")
            return x + skip


    def build():
        return nn.Sequential(Stash(), Pop()), torch.randn(2, 3)


    def build_experiment():
        return nn.Sequential(Stash(), Stash(), Pop(), Pop()), torch.randn(2, 3)
    """)


@pytest.fixture
def mixed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(MIXED)
    return "m.py"


def test_the_clean_factory_is_clean_and_the_other_findings_are_apart(mixed, capsys):
    assert main(["verify", f"{mixed}:build", "--devices", "cpu", "--checkpoint", "never"]) == 0
    out = capsys.readouterr().out
    assert "clean: the run passed and agrees with the static pass" in out
    assert "not part of this target (2 static finding(s)" in out
    assert "  m.py:25:35: SKP203 " in out and "  m.py:25:51: SKP204 " in out
    assert "static route table: agrees" in out


def test_the_broken_factory_confirms_its_findings(mixed, capsys):
    assert main(["verify", f"{mixed}:build_experiment", "--devices", "cpu", "--checkpoint", "never"]) == 1
    out = capsys.readouterr().out
    assert "not part of this target" not in out


def test_the_report_keeps_the_target_and_the_rest_apart(mixed):
    report = verify(f"{mixed}:build", devices=["cpu"], checkpoint="never", isolate=False)
    assert report.exit_code == 0, report.to_text()
    assert report.static == [] and report.observations == []
    assert sorted(s.code for s in report.elsewhere) == ["SKP203", "SKP204"]
    assert all(o.factories == ("build_experiment",) for s in report.elsewhere for o in s.owners)
    assert report.static_routes is not None and report.routes_agree, report.to_text()
    again = type(report).from_dict(report.to_dict())
    assert again.elsewhere == report.elsewhere

    broken = verify(f"{mixed}:build_experiment", devices=["cpu"], checkpoint="never", isolate=False)
    assert broken.exit_code == 1
    assert broken.elsewhere == []
    assert sorted((s.code, s.verdict, s.name, s.args["name"]) for s in broken.static) == [
        ("SKP203", "confirmed", "skip", "skip"), ("SKP204", "confirmed", "skip", "skip")]
    assert all(o.predicted for o in broken.observations)


def test_each_file_is_analysed_once(mixed, monkeypatch):
    calls = []
    analyze = engine.analyze

    def counted(text, path, **options):
        calls.append(path)
        return analyze(text, path, **options)

    monkeypatch.setattr(engine, "analyze", counted)
    report = verify(f"{mixed}:build", devices=["cpu"], checkpoint="never", isolate=False)
    assert report.exit_code == 0, report.to_text()
    assert report.static_routes is not None  # the route table came from that same analysis
    assert calls == ["m.py"]
