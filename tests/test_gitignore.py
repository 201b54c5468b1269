"""What git ignores, read without running git: the checked tree's configuration never executes,
the answer is the same with git absent, nested repositories read the same from either side, and
the patterns mean what git means by them (compared with git itself over generated trees)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from skiplint import cli, config, gitignore

from tests.test_cli_commands import UNDECLARED, write

HAS_GIT = shutil.which("git") is not None


def walked(top: Path, start: str = ".") -> list[str]:
    finder = config.Finder(isolated=True)
    cwd = os.getcwd()
    os.chdir(top)
    try:
        return [p.replace(os.sep, "/") for p, _ in finder.discover([start])]
    finally:
        os.chdir(cwd)


def make_repo(root: Path) -> None:
    """A `.git` directory as `git init` leaves it, written by hand (git need not be installed)."""
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")


@pytest.fixture
def no_git_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery must not start any process: fail the test if it tries."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a process was started: {args!r}")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse, raising=False)
    monkeypatch.setattr(os, "system", refuse)


# -- the tree's configuration never runs ---------------------------------------------------------

@pytest.mark.skipif(not HAS_GIT, reason="git is not installed: nothing could run the trap")
@pytest.mark.parametrize("argv", [["--isolated", "."], ["--isolated", "-j", "2", "."],
                                  ["fix", "--isolated", "."]])
def test_a_trapped_git_config_never_runs(tmp_path: Path, argv: list[str]) -> None:
    tree = tmp_path / "tree"
    write(tree, {"model.py": UNDECLARED, "out/gen.py": UNDECLARED, ".gitignore": "out/\n"})
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    proof = tmp_path / "ran"
    for key in ("core.fsmonitor", "core.pager", "core.editor", "core.sshCommand"):
        subprocess.run(["git", "-C", str(tree), "config", key, f"touch {proof}"], check=True)
    done = subprocess.run([sys.executable, "-m", "skiplint", *argv], cwd=tree,
                          capture_output=True, text=True, timeout=120)
    assert not proof.exists()
    assert done.returncode == (0 if argv[0] == "fix" else 1), done.stderr  # SKP101 has no fix
    if argv[0] != "fix":
        assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["./model.py"]


def test_discovery_starts_no_process_and_needs_no_git(tmp_path: Path, no_git_run: None) -> None:
    make_repo(tmp_path)
    write(tmp_path, {"a.py": "", "gen_a.py": "", "out/b.py": "", "keep/c.py": "",
                     ".gitignore": "out/\ngen_*.py\n"})
    assert walked(tmp_path) == ["./a.py", "./keep/c.py"]


def test_results_do_not_change_without_git_on_path(tmp_path: Path) -> None:
    write(tmp_path, {"model.py": UNDECLARED, "out/model.py": UNDECLARED, ".gitignore": "out/\n"})
    make_repo(tmp_path)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))
    if shutil.which("git", path=env["PATH"]) is not None:
        pytest.skip("git lies beside this Python")
    done = subprocess.run([sys.executable, "-m", "skiplint", "--isolated", "-j", "1", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert (done.returncode, [line.split(":")[0] for line in done.stdout.splitlines()]) == (1, ["./model.py"])


# -- which rules apply where ---------------------------------------------------------------------

def test_outside_a_repository_no_ignore_file_is_read(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "", "out/b.py": "", ".gitignore": "out/\n"})
    if any((parent / ".git").exists() for parent in [tmp_path, *tmp_path.parents]):
        pytest.skip("the temporary directory is inside a repository")
    assert walked(tmp_path) == ["./a.py", "./out/b.py"]


def test_nested_repository_reads_the_same_from_either_side(tmp_path: Path) -> None:
    make_repo(tmp_path)
    make_repo(tmp_path / "inner")
    write(tmp_path, {".gitignore": "*_outer.py\n", "a_outer.py": "", "a.py": "",
                     "inner/.gitignore": "gen/\n*_inner.py\n", "inner/b_outer.py": "", "inner/b_inner.py": "",
                     "inner/gen/c.py": "", "inner/d.py": ""})
    (tmp_path / "inner" / ".git" / "info" / "exclude").write_text("d.py\n")
    from_outer = [p for p in walked(tmp_path) if p.startswith("./inner/")]
    assert from_outer == ["./inner/b_outer.py"]  # the outer repository's rules stop at the inner one
    assert walked(tmp_path / "inner") == ["./b_outer.py"]
    assert walked(tmp_path, "inner") == ["inner/b_outer.py"]


def test_precedence_and_negation(tmp_path: Path) -> None:
    make_repo(tmp_path)
    (tmp_path / ".git" / "info" / "exclude").write_text("*.py\n")
    write(tmp_path, {".gitignore": "!*.py\nsub/keep_*.py\n", "a.py": "", "sub/.gitignore": "!keep_me.py\n",
                     "sub/keep_me.py": "", "sub/keep_not.py": "", "sub/other.py": ""})
    assert walked(tmp_path) == ["./a.py", "./sub/keep_me.py", "./sub/other.py"]


def test_a_directory_named_on_purpose_is_walked_whole(tmp_path: Path) -> None:
    make_repo(tmp_path)
    write(tmp_path, {".gitignore": "build/\n", "build/gen_a.py": "", "build/sub/b.py": ""})
    assert walked(tmp_path) == []
    assert walked(tmp_path, "build") == ["build/gen_a.py", "build/sub/b.py"]


def test_a_worktree_git_file_finds_its_exclude_file(tmp_path: Path) -> None:
    common = tmp_path / "repo.git"
    (common / "info").mkdir(parents=True)
    (common / "info" / "exclude").write_text("secret_*.py\n")
    (common / "worktrees" / "wt").mkdir(parents=True)
    (common / "worktrees" / "wt" / "commondir").write_text("../..\n")
    write(tmp_path, {"wt/.git": f"gitdir: {common / 'worktrees' / 'wt'}\n", "wt/a.py": "", "wt/secret_b.py": ""})
    assert walked(tmp_path / "wt") == ["./a.py"]


def test_the_global_excludes_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    write(home, {".gitconfig": "[user]\n\tname = x\n[core]\n\texcludesFile = ~/ignores  # mine\n",
                 "ignores": "scratch_*.py\n"})
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    repo = tmp_path / "repo"
    make_repo(repo)
    write(repo, {"a.py": "", "scratch_b.py": ""})
    assert walked(repo) == ["./a.py"]
    (home / ".gitconfig").unlink()
    write(home, {".config/git/ignore": "a.py\n"})
    assert walked(repo) == ["./scratch_b.py"]


@pytest.mark.parametrize("special", ["fifo", "huge", "directory"])
def test_ignore_files_that_are_not_small_regular_files_are_skipped(tmp_path: Path, special: str) -> None:
    make_repo(tmp_path)
    write(tmp_path, {"a.py": ""})
    target = tmp_path / ".gitignore"
    if special == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(target)  # never opened for a blocking read
    elif special == "huge":
        target.write_bytes(b"#" * (5 * 1024 * 1024))
    else:
        target.mkdir()
    assert walked(tmp_path) == ["./a.py"]


# -- patterns, as gitignore(5) defines them ------------------------------------------------------

@pytest.mark.parametrize("pattern, path, is_dir, expected", [
    ("*.py", "a/b/c.py", False, True),
    ("/*.py", "c.py", False, True),
    ("/*.py", "a/c.py", False, False),
    ("a/*.py", "a/c.py", False, True),
    ("a/*.py", "x/a/c.py", False, False),
    ("build/", "x/build", True, True),
    ("build/", "x/build", False, False),
    ("**/gen", "gen", True, True),
    ("**/gen", "a/b/gen", False, True),
    ("a/**/b", "a/b", False, True),
    ("a/**/b", "a/x/y/b", False, True),
    ("a/**/b", "a/xb", False, False),
    ("a/**", "a/x/y", False, True),
    ("a/**", "a", True, False),
    ("foo**bar", "fooxbar", False, True),
    ("foo**bar", "foo/bar", False, False),
    ("?.py", "a.py", False, True),
    ("?.py", "ab.py", False, False),
    ("[a-c].py", "b.py", False, True),
    ("[!a-c].py", "b.py", False, False),
    ("[!a-c].py", "d.py", False, True),
    ("[[:digit:]]x.py", "7x.py", False, True),
    ("[]]x.py", "]x.py", False, True),
    ("[ab", "[ab", False, True),
    ("\\#x.py", "#x.py", False, True),
    ("\\!x.py", "!x.py", False, True),
    ("x.py\\ ", "x.py ", False, True),
    ("x.py  ", "x.py", False, True),
    ("a*b*c*d*e*f*g*h*i*j*k*l*m*n*o*p*q", "a" * 200, False, False),
])
def test_pattern(pattern: str, path: str, is_dir: bool, expected: bool) -> None:
    (compiled,) = gitignore.parse(pattern + "\n")
    assert compiled.matches(path, is_dir) is expected


def test_comments_blank_lines_crlf_and_bom() -> None:
    assert [p.text for p in gitignore.parse("\ufeff# c\n\n\\#a\r\n!b\n/\n")] == ["\\#a", "!b"]


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_agrees_with_git_on_generated_trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random trees and ignore files, each answered by `git ls-files` (in a repository this test
    made itself) and by the walk: the same files, every time."""
    rng = random.Random(7)
    parts = ["a", "b", "gen", "bld", "x.y", "sub"]
    files = ["m.py", "gen_m.py", "a.py", "test_x.py", "x.pyi", "b1.py"]
    atoms = ["*.py", "gen*", "/a.py", "bld/", "sub/", "a/**", "**/gen", "!gen_m.py", "b?.py", "[ab].py",
             "*/test_*.py", "!bld/", "a/**/m.py", "x.*", "!/sub", "**", "!*.pyi", "*_m.py"]
    for trial in range(25):
        repo = tmp_path / f"t{trial}"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        for _ in range(30):
            depth = rng.randint(0, 3)
            path = repo.joinpath(*(rng.choice(parts) for _ in range(depth)), rng.choice(files))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
        directories = [repo] + [d for d in repo.rglob("*") if d.is_dir() and ".git" not in d.parts]
        for directory in rng.sample(directories, min(3, len(directories))):
            (directory / ".gitignore").write_text("\n".join(rng.sample(atoms, rng.randint(1, 4))) + "\n")
        listed = subprocess.run(["git", "-C", str(repo), "-c", "core.excludesFile=/dev/null", "ls-files",
                                 "--others", "--exclude-standard", "-z"], capture_output=True, check=True)
        expected = sorted(name for name in listed.stdout.decode().split("\0") if name.endswith((".py", ".pyi")))
        with monkeypatch.context() as patch:
            patch.setenv("HOME", str(tmp_path / "empty-home"))
            patch.delenv("XDG_CONFIG_HOME", raising=False)
            got = sorted(p[2:] for p in walked(repo))
        assert got == expected, (trial, [(d, (d / ".gitignore").read_text()) for d in directories
                                         if (d / ".gitignore").exists()])


def test_the_cli_still_checks_an_ignored_file_named_on_purpose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    make_repo(tmp_path)
    write(tmp_path, {"out/model.py": UNDECLARED, ".gitignore": "out/\n"})
    monkeypatch.chdir(tmp_path)
    assert cli.main(["--isolated", "-j", "1", "out/model.py"]) == 1
    assert capsys.readouterr().out.startswith("out/model.py:9:15: SKP101")


# -- matching in linear time ---------------------------------------------------------------------

def _automaton(tokens: list, subject: str) -> bool:
    """The reference: a plain automaton over the pattern's tokens (states: token index, inside a
    name that `**/` consumes), each character stepping every state. Right whatever the pattern
    (it agreed with git on every generated tree) and slow: states times characters per match."""
    end = len(tokens)

    def closure(states: set) -> set:
        pending = list(states)
        while pending:
            index, inside = pending.pop()
            if not inside and index < end and tokens[index][0] in (gitignore._STAR, gitignore._DIRS, gitignore._ALL):
                if (index + 1, 0) not in states:
                    states.add((index + 1, 0))
                    pending.append((index + 1, 0))
        return states

    states = closure({(0, 0)})
    for char in subject:
        following = set()
        for index, _ in states:
            if index == end:
                continue
            kind, data = tokens[index]
            if kind == gitignore._LITERAL and char == data or kind == gitignore._ONE and char != "/" \
                    or kind == gitignore._SET and data(char) or kind == gitignore._STAR and char != "/":
                following.add((index + 1, 0) if kind != gitignore._STAR else (index, 0))
            elif kind == gitignore._ALL:
                following.add((index, 0))
            elif kind == gitignore._DIRS:
                following.add((index, 0 if char == "/" else 1))
        states = closure(following)
    return (end, 0) in states


def test_the_matcher_agrees_with_the_automaton_on_random_patterns() -> None:
    rng = random.Random(41)
    atoms = ["a", "b", "ab", "*", "**", "?", "[ab]", "[!a]", "/", "**/", "/**", ".", "x", "\\*"]
    names = ["a", "b", "ab", "ba", "aab", "x.py", "a.b", "*", "bab"]
    checked = 0
    for _ in range(3000):
        text = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 7))).strip("/") or "a"
        for pattern in gitignore.parse(text + "\n"):
            for _ in range(6):
                path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
                subject = path.rsplit("/", 1)[-1] if pattern.basename else path
                assert pattern.matches(path, False) is _automaton(pattern.tokens, subject), (text, path)
                checked += 1
    assert checked > 10_000


def test_star_heavy_ignore_files_cost_a_walk_no_more_than_their_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 patterns of up to 40 stars over a 200-file walk: each pattern is tried once per name
    and each of its star segments looked for once (the automaton stepped up to 40 states through
    every character of every path: 595 s for this walk). The segment searches are counted."""
    rng = random.Random(2000)
    patterns = ["*" + "*".join(rng.choice("ab") for _ in range(rng.randint(10, 40))) + "*" + rng.choice(["x", "?z", "[xz]"])
                for _ in range(1999)] + ["*a*b*a*b*a*b*a*b*a*b*a*b*a*b*a*b*a*b*a*b*7.py"]
    make_repo(tmp_path)
    write(tmp_path, {".gitignore": "\n".join(patterns) + "\n"})
    expected = []
    for d in range(10):
        for f in range(20):
            name = f"ab{d}/" + "ab" * 12 + "ba" * f + f"{f % 8}.py"
            write(tmp_path, {name: ""})
            if f % 8 != 7:
                expected.append("./" + name)
    searches = [0]
    find = gitignore._Name._find

    def counted(self: object, *args: object) -> int:
        searches[0] += 1
        return find(self, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(gitignore._Name, "_find", counted)
    assert sorted(walked(tmp_path)) == sorted(expected)
    # Only a name that starts and ends as a pattern does gets its middle searched: the 20 middle
    # segments of the 7.py pattern, once each, for each of the 20 files it ignores; nothing else.
    assert searches[0] == 20 * 20
