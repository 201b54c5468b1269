"""How `skiplint fix` and `skiplint check --fix` write: only regular files inside the paths given,
atomically (a temporary file in the same directory, then os.replace, the mode kept), only over
exactly the bytes that were read, and a refused write is one line with the file left intact."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from skiplint import fix
from tests import inprocess

REPO = Path(__file__).resolve().parent.parent

MODEL = '''\
from torch import nn
from torchgpipe.skip import pop, skippable


@skippable(pop="skip")
class Pop(nn.Module):
    def forward(self, x):
        skip = yield pop("skip")
        return x + skip
'''
FIXED = MODEL.replace('@skippable(pop="skip")', '@skippable(pop=["skip"])')

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions, links and limits")


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """tree/model.py (fixable) and tree/link.py -> ../outside/victim.py (fixable too)."""
    tree, away = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    away.mkdir()
    (tree / "model.py").write_text(MODEL, encoding="utf-8")
    victim = away / "victim.py"
    victim.write_text(MODEL, encoding="utf-8")
    (tree / "link.py").symlink_to(os.path.join("..", "outside", "victim.py"))
    return tree, victim


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if "skiplint-tmp" in p.name)


# -- only inside the paths given -----------------------------------------------------------------

@posix_only
@pytest.mark.parametrize("argv", [["fix", "tree"], ["check", "--fix", "tree"]])
def test_a_file_link_out_of_the_tree_is_reported_and_left_alone(tmp_path: Path, argv: list[str]) -> None:
    tree, victim = _tree(tmp_path)
    run = inprocess.skiplint([*argv, "--isolated"], tmp_path)
    assert victim.read_text(encoding="utf-8") == MODEL
    assert (tree / "model.py").read_text(encoding="utf-8") == FIXED
    assert (tree / "link.py").is_symlink()
    said = [line for line in run.stderr.splitlines() if "link.py" in line]
    assert said == [f"{os.path.join('tree', 'link.py')}: not fixed: a symbolic link to "
                    f"{os.path.realpath(victim)}, outside the paths given"]
    if argv[0] == "fix":
        assert run.returncode == 0
    else:  # the check still reports the link's finding, which is left
        assert run.returncode == 1
        assert "link.py:5:16: SKP106" in run.stdout


@posix_only
def test_the_diff_leaves_out_a_link_out_of_the_tree(tmp_path: Path) -> None:
    tree, _ = _tree(tmp_path)
    run = inprocess.skiplint(["fix", "--diff", "--isolated", "tree"], tmp_path)
    assert run.returncode == 1
    assert "+++ b/tree/model.py" in run.stdout and "link.py" not in run.stdout


@posix_only
def test_a_link_inside_the_tree_fixes_its_target_and_stays_a_link(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "real.py").write_text(MODEL, encoding="utf-8")
    (tree / "alias.py").symlink_to(os.path.join("pkg", "real.py"))
    run = inprocess.skiplint(["fix", "--isolated", "tree"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tree / "alias.py").is_symlink()
    assert (tree / "pkg" / "real.py").read_text(encoding="utf-8") == FIXED


@posix_only
def test_a_link_named_on_the_command_line_is_inside_the_paths_given(tmp_path: Path) -> None:
    tree, victim = _tree(tmp_path)
    run = inprocess.skiplint(["fix", "--isolated", "tree/link.py"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert victim.read_text(encoding="utf-8") == FIXED
    assert (tree / "link.py").is_symlink()


# -- atomically, the mode kept --------------------------------------------------------------------

@posix_only
def test_the_fix_replaces_the_file_whole_with_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    path.chmod(0o751)
    before = path.stat()
    run = inprocess.skiplint(["fix", "--isolated", "model.py"], tmp_path)
    assert run.returncode == 0, run.stderr
    after = path.stat()
    assert path.read_text(encoding="utf-8") == FIXED
    assert stat.S_IMODE(after.st_mode) == 0o751
    assert after.st_ino != before.st_ino  # a new file put in its place, never the old one truncated
    assert _leftovers(tmp_path) == []


@posix_only
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_a_directory_that_cannot_be_written_is_one_line_and_exit_2(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    path = tree / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    tree.chmod(0o555)
    try:
        run = inprocess.skiplint(["fix", "--isolated", "tree"], tmp_path)
    finally:
        tree.chmod(0o755)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [
        f"{os.path.join('tree', 'model.py')}: could not write the fix: Permission denied; the file is unchanged"]
    assert path.read_text(encoding="utf-8") == MODEL


# -- only over what was read ----------------------------------------------------------------------

SAVED = MODEL.replace("return x + skip", "return x * skip  # saved by the user meanwhile")


@pytest.fixture
def edited_meanwhile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file is saved again (as an editor would) after `fix` read it and before it writes."""
    planned = fix.fix_bytes

    def fix_bytes(data, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        outcome = planned(data, path, *args, **kwargs)
        Path(path).write_text(SAVED, encoding="utf-8")
        return outcome
    monkeypatch.setattr(fix, "fix_bytes", fix_bytes)


@pytest.mark.parametrize("argv", [["fix"], ["check", "--fix", "--exit-zero"]])
def test_a_file_saved_while_it_is_fixed_keeps_the_save(tmp_path: Path, edited_meanwhile: None,
                                                       argv: list[str]) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    run = inprocess.skiplint([*argv, "--isolated", "model.py"], tmp_path)
    assert path.read_text(encoding="utf-8") == SAVED
    assert run.returncode == 1
    assert [line for line in run.stderr.splitlines() if "model.py" in line] == [
        "model.py: changed while fixing; run again"]
    assert _leftovers(tmp_path) == []


@posix_only
def test_a_file_swapped_for_a_link_out_of_the_tree_while_it_is_fixed_is_not_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link's target even holds what was read: only where it now leads keeps it unwritten."""
    tree, victim = _tree(tmp_path)
    (tree / "link.py").unlink()
    planned = fix.fix_bytes

    def fix_bytes(data, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        outcome = planned(data, path, *args, **kwargs)
        os.unlink(path)
        os.symlink(victim, path)
        return outcome
    monkeypatch.setattr(fix, "fix_bytes", fix_bytes)
    run = inprocess.skiplint(["fix", "--isolated", "tree"], tmp_path)
    assert victim.read_text(encoding="utf-8") == MODEL
    assert run.stderr == (f"{os.path.join('tree', 'model.py')}: not fixed: a symbolic link to "
                          f"{os.path.realpath(victim)}, outside the paths given\n")
    assert run.returncode == 0


def test_a_file_deleted_while_it_is_fixed_stays_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planned = fix.fix_bytes

    def fix_bytes(data, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        outcome = planned(data, path, *args, **kwargs)
        os.unlink(path)
        return outcome
    monkeypatch.setattr(fix, "fix_bytes", fix_bytes)
    (tmp_path / "model.py").write_text(MODEL, encoding="utf-8")
    run = inprocess.skiplint(["fix", "--isolated", "model.py"], tmp_path)
    assert (run.returncode, run.stderr) == (1, "model.py: changed while fixing; run again\n")
    assert not (tmp_path / "model.py").exists() and _leftovers(tmp_path) == []


def test_the_check_after_check_fix_reads_the_file_as_saved(tmp_path: Path, edited_meanwhile: None) -> None:
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    run = inprocess.skiplint(["check", "--fix", "--isolated", "model.py"], tmp_path)
    assert run.returncode == 1
    assert run.stdout.splitlines()[0].startswith("model.py:5:16: SKP106 ")


def test_a_save_made_meanwhile_is_said_as_such_even_when_the_disk_is_full(
        tmp_path: Path, edited_meanwhile: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(tempfile, "mkstemp", full)
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    run = inprocess.skiplint(["fix", "--isolated", "model.py"], tmp_path)
    assert (run.returncode, run.stderr) == (1, "model.py: changed while fixing; run again\n")
    assert path.read_text(encoding="utf-8") == SAVED


# -- a full disk ----------------------------------------------------------------------------------

@pytest.mark.parametrize("step", ["fsync", "replace", "chmod"])
def test_a_step_of_the_write_that_fails_leaves_the_file_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    def failing(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(os, step, failing)
    path = tmp_path / "model.py"
    path.write_text(MODEL, encoding="utf-8")
    run = inprocess.skiplint(["fix", "--isolated", "model.py"], tmp_path)
    assert (run.returncode, run.stderr) == (2, "model.py: could not write the fix: Input/output error; "
                                               "the file is unchanged\n")
    assert path.read_text(encoding="utf-8") == MODEL
    assert _leftovers(tmp_path) == []


@posix_only
@pytest.mark.parametrize("command", [["fix"], ["check", "--fix", "-j", "1"]])
def test_a_write_past_the_file_size_limit_leaves_the_file_intact(tmp_path: Path, command: list[str]) -> None:
    """A full disk, simulated by RLIMIT_FSIZE: the fix (9,891 bytes) cannot be written past 4,096."""
    import resource

    path = tmp_path / "model.py"
    original = (MODEL + "\n" + "# padding so that the file is larger than the limit\n" * 190).encode()
    path.write_bytes(original)
    assert len(original) > 9000

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.run([sys.executable, "-m", "skiplint", *command, "--isolated", "model.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, preexec_fn=limit, timeout=120)
    assert run.returncode == 2, run.stderr
    assert path.read_bytes() == original
    said = [line for line in run.stderr.splitlines() if "model.py" in line]
    assert said == ["model.py: could not write the fix: File too large; the file is unchanged"], run.stderr
    assert "Traceback" not in run.stderr and "please report" not in run.stderr
    assert _leftovers(tmp_path) == []


# -- file-level noqa ------------------------------------------------------------------------------

@pytest.mark.parametrize("comment", ["# skiplint: noqa", "# flake8: noqa", "# FLAKE8= NOQA: E501"])
@pytest.mark.parametrize("argv", [["fix"], ["check", "--fix"], ["fix", "--diff"]])
def test_a_file_level_noqa_is_honoured_by_every_door_that_fixes(tmp_path: Path, comment: str,
                                                               argv: list[str]) -> None:
    path = tmp_path / "model.py"
    source = comment + "\n" + MODEL
    path.write_text(source, encoding="utf-8")
    run = inprocess.skiplint([*argv, "--isolated", "model.py"], tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert path.read_text(encoding="utf-8") == source


@pytest.mark.parametrize("argv", [["fix", "-"], ["check", "--fix", "-"]])
def test_a_file_level_noqa_on_standard_input_is_passed_through(tmp_path: Path, argv: list[str]) -> None:
    source = ("# skiplint: noqa\n" + MODEL).encode()
    run = inprocess.skiplint_bytes([*argv, "--isolated"], tmp_path, stdin=source)
    assert (run.returncode, run.stdout, run.stderr) == (0, source, b"")
