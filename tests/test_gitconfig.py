"""The repository's owner/name, read from its git config without starting git."""

import subprocess

import pytest

from reflect.capture.gitconfig import repo_from_git_config


def write_config(git_dir, body):
    git_dir.mkdir(parents=True)
    (git_dir / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n" + body, encoding="utf-8"
    )


@pytest.fixture
def no_subprocess(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("repo_from_git_config must not start a process")

    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://github.com/acme/widget.git", ("acme", "widget")),
        ("https://user:tok@github.com/acme/widget/", ("acme", "widget")),
        ("git@github.com:acme/widget.git", ("acme", "widget")),
        ("ssh://git@gitlab.example.com:2222/group/sub/widget.git", ("group/sub", "widget")),
        ("/srv/git/widget.git", None),
    ],
)
def test_repo_from_git_config_parses_origin(tmp_path, no_subprocess, url, expected):
    write_config(
        tmp_path / "repo" / ".git",
        '[remote "upstream"]\n\turl = https://github.com/other/fork.git\n'
        f'[remote "origin"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
    )
    nested = tmp_path / "repo" / "src" / "pkg"
    nested.mkdir(parents=True)
    assert repo_from_git_config(nested) == expected


def test_repo_from_git_config_takes_the_first_remote_without_origin(tmp_path, no_subprocess):
    write_config(
        tmp_path / ".git",
        '[branch "main"]\n\turl = nope\n[remote "upstream"]\n\turl = git@host:acme/widget\n',
    )
    assert repo_from_git_config(tmp_path) == ("acme", "widget")


def test_repo_from_git_config_follows_a_git_file(tmp_path, no_subprocess):
    write_config(tmp_path / "main" / ".git", '[remote "origin"]\n\turl = git@h:acme/widget.git\n')
    # A worktree: .git names a directory whose commondir holds the shared config.
    worktree_dir = tmp_path / "main" / ".git" / "worktrees" / "wt"
    worktree_dir.mkdir(parents=True)
    (worktree_dir / "commondir").write_text("../..\n", encoding="utf-8")
    (tmp_path / "wt").mkdir()
    (tmp_path / "wt" / ".git").write_text(f"gitdir: {worktree_dir}\n", encoding="utf-8")
    assert repo_from_git_config(tmp_path / "wt") == ("acme", "widget")
    # A submodule: .git names a directory with a config of its own (relative path).
    write_config(
        tmp_path / "main" / ".git" / "modules" / "lib", '[remote "origin"]\n\turl = h:acme/lib\n'
    )
    (tmp_path / "main" / "lib").mkdir()
    (tmp_path / "main" / "lib" / ".git").write_text(
        "gitdir: ../.git/modules/lib\n", encoding="utf-8"
    )
    assert repo_from_git_config(tmp_path / "main" / "lib") == ("acme", "lib")


def test_repo_from_git_config_without_repo_or_remote(tmp_path, no_subprocess):
    assert repo_from_git_config(tmp_path) is None
    write_config(tmp_path / "bare" / ".git", "")
    assert repo_from_git_config(tmp_path / "bare") is None
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / ".git").write_text("gitdir: /nonexistent/x\n", encoding="utf-8")
    assert repo_from_git_config(tmp_path / "broken") is None
