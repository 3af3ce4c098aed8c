"""Installed hooks that never ran are said: a client runs none, silently, when it does not
trust them (Codex, until a person has reviewed them), and memory then records nothing."""

import json
import os
import time

import pytest
from conftest import run_cli, run_hook
from test_integration_claude_code import event


@pytest.fixture
def project(tmp_path, monkeypatch, own_store):
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    own_store.mkdir(mode=0o700)
    return root


def said(*args: str) -> tuple[int, str]:
    done = run_cli(*args)
    return done.returncode, (done.stdout + done.stderr).decode()


def installed(client: str, project, an_hour_ago: bool = True) -> None:
    assert run_cli("install", client).returncode == 0
    if an_hour_ago:  # sessions found later are sessions since the install
        settings = project / {"claude-code": ".claude/settings.json",
                              "codex": ".codex/hooks.json"}[client]
        past = time.time() - 3600
        os.utime(settings, (past, past))


def codex_rollout(project, name: str = "rollout-2026-12-05T10-00-00-a.jsonl") -> None:
    """A session Codex kept of this project, as it writes one (its first record)."""
    where = project.parent / "home" / ".codex" / "sessions" / "2026" / "12" / "05"
    where.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(json.dumps({
        "timestamp": "2026-12-05T10:00:00.000Z", "type": "session_meta",
        "payload": {"id": "01a2", "timestamp": "2026-12-05T10:00:00.000Z",
                    "cwd": str(project), "cli_version": "0.171.0"}}) + "\n")


def test_no_hooks_installed_no_word_of_them(project):
    code, out = said("status")
    assert code == 0 and "hooks:" not in out
    code, out = said("doctor")
    assert code == 0 and "hooks:" not in out


def test_installed_hooks_that_never_ran_are_said_until_one_runs(project):
    installed("claude-code", project)
    code, out = said("status")
    assert code == 0, out
    assert "hooks: claude-code (.claude/settings.json): installed, never run" in out, out
    # No session of Claude Code here since: nothing is wrong yet.
    code, out = said("doctor")
    assert code == 0 and "hooks: ok: claude-code" in out and "never run" in out, out
    run_hook(event("SessionStart"))
    code, out = said("status")
    assert "never run" not in out and "hooks: claude-code (.claude/settings.json): ran" in out
    assert json.loads(run_cli("status", "--format", "json").stdout)["hooks"][0]["ran"]


def test_client_sessions_that_ran_no_hook_are_a_problem_with_what_to_do(project):
    installed("codex", project)
    codex_rollout(project)
    codex_rollout(project.parent / "elsewhere", "rollout-2026-12-05T11-00-00-b.jsonl")
    code, out = said("doctor")
    assert code == 1, out
    assert "hooks: PROBLEM: codex (.codex/hooks.json): installed, never run, and Codex " \
        "ran 1 session here since" in out, out
    assert "/hooks" in out and "trusted" in out  # what to do: trust, then review them
    findings = json.loads(run_cli("doctor", "--format", "json").stdout)["findings"]
    assert [f["ok"] for f in findings if f["what"] == "hooks"] == [False]
    code, out = said("status")
    assert code == 0 and "Codex ran 1 session here since" in out
    run_hook(event("SessionStart", client="codex"), "codex")
    code, out = said("doctor")
    assert code == 0 and "codex (.codex/hooks.json): ran" in out, out


def test_a_session_before_the_install_is_no_sign_of_hooks_that_do_not_run(project):
    codex_rollout(project)
    installed("codex", project, an_hour_ago=False)
    old = time.time() - 7200
    for rollout in (project.parent / "home" / ".codex" / "sessions").rglob("*.jsonl"):
        os.utime(rollout, (old, old))
    code, out = said("doctor")
    assert code == 0 and "never run" in out, out
