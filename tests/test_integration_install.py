"""``reflect install``: hooks merged into real settings files, idempotently, keeping
everything else, with a backup; and the installed command answers events."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli
from real_clients import reflect_path
from test_integration_claude_code import event

CLAUDE_EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                 "PostToolUseFailure"}
THEIRS = {
    "permissions": {"allow": ["Bash(npm run lint)"]},
    "hooks": {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [
        {"type": "command", "command": "npx prettier --write \"$CLAUDE_FILE\""}]}]},
}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")  # installs go to the repository's root
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def install(*args: str) -> str:
    done = run_cli("install", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def ours(settings: dict, client: str = "claude-code") -> dict:
    return {event: [h for g in groups for h in g["hooks"]
                    if h["command"].endswith(f"reflect hook {client}")]
            for event, groups in settings.get("hooks", {}).items()}


def test_project_install_merges_keeps_the_rest_and_is_idempotent(repo):
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    original = json.dumps(THEIRS, indent=4)
    path.write_text(original)
    assert "added" in install("claude-code")
    settings = json.loads(path.read_text())
    assert settings["permissions"] == THEIRS["permissions"]
    assert THEIRS["hooks"]["PostToolUse"][0] in settings["hooks"]["PostToolUse"]
    assert {e for e, hooks in ours(settings).items() if len(hooks) == 1} == CLAUDE_EVENTS
    assert [g.get("matcher") for g in settings["hooks"]["PreToolUse"]] == ["Bash"]
    assert (repo / ".claude" / "settings.json.bak").read_text() == original
    installed = path.read_text()
    assert "already" in install("claude-code", "--project")
    assert path.read_text() == installed
    assert "removed" in install("claude-code", "--uninstall")
    assert json.loads(path.read_text()) == THEIRS


@pytest.mark.parametrize(("flag", "where"), [("--local", ".claude/settings.local.json"),
                                         ("--user", "home/.claude/settings.json")])
def test_local_and_user_settings(repo, flag, where):
    install("claude-code", flag)
    assert set(ours(json.loads((repo / where).read_text()))) == CLAUDE_EVENTS
    assert not (repo / ".claude" / "settings.json").exists()


@pytest.mark.parametrize(("flag", "where", "path"), [
    ("--project", ".claude/settings.json", reflect_path()),
    ("--user", "home/.claude/settings.json", "/nonexistent")])  # whatever the PATH
def test_the_installed_command_answers_claude_code(repo, flag, where, path):
    install("claude-code", flag)
    settings = json.loads((repo / where).read_text())
    command = ours(settings)["PostToolUseFailure"][0]["command"]
    done = subprocess.run(command, shell=True, capture_output=True, timeout=60,
                          env={**os.environ, "PATH": path},
                          input=json.dumps(event("PostToolUseFailure")).encode())
    assert done.returncode == 0
    answer = json.loads(done.stdout)
    assert "pytest" in answer["hookSpecificOutput"]["additionalContext"]


def test_a_plugin(repo, tmp_path):
    install("claude-code", "--plugin", str(tmp_path / "plugin"))
    manifest = json.loads((tmp_path / "plugin" / ".claude-plugin" / "plugin.json").read_text())
    hooks = json.loads((tmp_path / "plugin" / "hooks" / "hooks.json").read_text())
    assert manifest["name"] == "reflect"
    assert set(ours(hooks)) == CLAUDE_EVENTS
    install("claude-code", "--plugin", str(tmp_path / "plugin"), "--uninstall")
    assert not (tmp_path / "plugin" / "hooks" / "hooks.json").exists()


def test_a_settings_file_that_is_not_json_is_left_alone(repo):
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{ not json")
    done = run_cli("install", "claude-code")
    assert done.returncode == 1 and b"fix or move it" in done.stderr
    assert path.read_text() == "{ not json"


@pytest.mark.parametrize(("flag", "where"), [("--project", ".codex/hooks.json"),
                                         ("--user", "home/.codex/hooks.json")])
def test_codex(repo, flag, where):
    install("codex", flag)
    hooks = ours(json.loads((repo / where).read_text()), "codex")
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"}
    install("codex", flag, "--uninstall")
    assert json.loads((repo / where).read_text()) == {}


@pytest.mark.parametrize(("client", "variable", "name"), [
    ("claude-code", "CLAUDE_CONFIG_DIR", "settings.json"), ("codex", "CODEX_HOME", "hooks.json")])
def test_a_user_install_goes_where_the_client_reads_its_user_files(repo, monkeypatch, client,
                                                                  variable, name):
    """The client's own variable moves its user directory, as `learn` and the trust check
    have it."""
    moved = repo / "elsewhere"
    monkeypatch.setenv(variable, str(moved))
    assert str(moved / name) in install(client, "--user")
    assert set(ours(json.loads((moved / name).read_text()), client))
    assert not (repo / "home").exists()


def test_codex_install_says_what_trust_codex_needs(repo, monkeypatch):
    said = install("codex")
    assert f"{repo} is not trusted in {repo / 'home' / '.codex' / 'config.toml'}" in said
    assert "codex exec --trust" in said and "/hooks" in said
    codex_home = repo / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        f'model = "gpt-5"\n[projects."{repo}"]\ntrust_level = "trusted"\n')
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    said = install("codex")
    assert f"{repo} is trusted in {codex_home / 'config.toml'}" in said, said
    user = install("codex", "--user")
    assert "trusted project" not in user and "/hooks" in user
    assert "trust" not in install("codex", "--uninstall")


def test_a_committed_file_names_a_command_on_path_a_user_s_this_install_s(repo, tmp_path):
    install("claude-code")
    install("claude-code", "--user")
    install("codex", "--project")
    install("claude-code", "--plugin", str(tmp_path / "plugin"))
    committed = [repo / ".claude" / "settings.json", repo / ".codex" / "hooks.json",
                 tmp_path / "plugin" / "hooks" / "hooks.json"]
    for path in committed:
        commands = {h["command"] for hooks in ours(json.loads(path.read_text()),
                                                   "codex" if "codex" in str(path)
                                                   else "claude-code").values()
                    for h in hooks}
        assert len(commands) == 1 and commands.pop().startswith("reflect hook ")
        assert str(Path(sys.executable).parent) not in path.read_text()
    # this install's script by its path (not `python -m reflect`, which loads runpy too)
    user = json.loads((repo / "home" / ".claude" / "settings.json").read_text())
    script = Path(sys.executable).parent.resolve() / "reflect"
    assert ours(user)["PostToolUse"][0]["command"] == f"{script} hook claude-code"


def test_post_tool_use_runs_only_for_tools_that_can_change_an_outcome(repo):
    install("claude-code")
    install("codex")
    claude = json.loads((repo / ".claude" / "settings.json").read_text())["hooks"]
    codex = json.loads((repo / ".codex" / "hooks.json").read_text())["hooks"]
    for hooks, tools in ((claude, ("Bash", "Edit", "Write")), (codex, ("Bash", "apply_patch"))):
        [group] = hooks["PostToolUse"]
        assert all(re.fullmatch(group["matcher"], tool) for tool in tools)
        assert not any(re.fullmatch(group["matcher"], tool) for tool in ("Read", "Grep", "Glob"))


def test_installing_again_keeps_reflect_where_it_was(repo):
    path = repo / ".claude" / "settings.json"
    install("claude-code")
    settings = json.loads(path.read_text())
    theirs = {"type": "command", "command": "./scripts/audit.sh"}
    settings["hooks"]["PreToolUse"][0]["hooks"].append(theirs)
    settings["hooks"]["PostToolUseFailure"].append({"hooks": [theirs]})
    path.write_text(json.dumps(settings))
    assert "already with reflect's hooks" in install("claude-code")
    assert json.loads(path.read_text()) == settings
    # An older install's command (this interpreter's path) is updated where it stands.
    old = path.read_text().replace('"reflect hook claude-code"',
                                   json.dumps(f"{sys.executable} -m reflect hook claude-code"))
    path.write_text(old)
    said = install("claude-code")
    assert "added or updated reflect's hooks for SessionStart, UserPromptSubmit" in said
    assert json.loads(path.read_text()) == settings


def test_a_portable_install_says_when_reflect_is_not_on_path(repo):
    done = run_cli("install", "claude-code", env={"PATH": "/nonexistent"})
    assert done.returncode == 0 and b"`reflect` is not on this PATH" in done.stdout
    assert b"not on this PATH" not in run_cli("install", "claude-code", "--user",
                                              env={"PATH": "/nonexistent"}).stdout


def test_each_registered_client_is_a_client_and_the_command_offers_each(capsys):
    """Clients are a registry (reflect/integrations/clients.py), not a naming convention:
    each entry's module gives a ``Client``'s hooks, parse and install, and the command line
    offers exactly the registered ones."""
    import inspect

    from reflect.cli.main import parser
    from reflect.integrations.clients import CLIENTS, Client, client

    members = {name for name, _ in inspect.getmembers(Client) if not name.startswith("_")}
    assert members == {"HOOKS", "parse", "install"}
    for name in CLIENTS:
        module = client(name)
        assert all(hasattr(module, member) for member in members), name
        assert callable(module.parse) and callable(module.install) and module.HOOKS
        assert inspect.signature(module.install).bind("project", True)
    for name in CLIENTS:
        assert parser().parse_args(["hook", name]).client == name
    with pytest.raises(SystemExit):
        parser().parse_args(["hook", "no-such-client"])
    offered = capsys.readouterr().err.rpartition("choose from ")[2]
    assert offered.strip().strip(")") == ", ".join(repr(name) for name in CLIENTS)
