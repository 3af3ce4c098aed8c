"""The real Claude Code (`claude -p`, from npm) with reflect's hooks installed in the
project, against a scripted Messages API on loopback: a command fails, is run again
unchanged (refused), the script is fixed and the command passes; then a new session
starts."""

import json
import os
import subprocess
import uuid

import pytest
from fake_model_api import FakeModelAPI
from real_clients import client, items_sent, reflect_path, said_once

from reflect import Memory

COMMANDS = ["python3 report.py", "python3 report.py",
            "sed -i s/openpyxl/json/ report.py", "python3 report.py"]
BLOCK = "PAST FAILURES TO AVOID"  # this run's
EARLIER = "HOUSE RULES"


def claude_session(project, commands: list[str], prompt: str,
                   session: tuple[str, str] = ()) -> FakeModelAPI:
    """``claude -p`` in ``project``; ``session``: ``("--session-id", id)`` names the session
    it starts, ``("--resume", id)`` resumes one."""
    home = project.parent / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "PATH": reflect_path()}
    with FakeModelAPI(commands) as api:
        done = subprocess.run(
            [str(client("claude")), "-p", "--allowedTools=Bash", *session, prompt],
            cwd=project, env={**env, "ANTHROPIC_BASE_URL": api.url,
                              "ANTHROPIC_API_KEY": "sk-ant-x"},
            capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return api


def installed_project(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "report.py").write_text("import openpyxl\nprint('report written')\n")
    env = {**os.environ, "PATH": reflect_path()}
    done = subprocess.run(["reflect", "install", "claude-code", "--project"], cwd=project,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return project


def system_text(request: dict) -> str:
    """What reflect's hooks added to a request: Claude Code puts hook context in system
    blocks and system reminders of the messages."""
    return json.dumps(request.get("messages", []), ensure_ascii=False)


@pytest.mark.usefixtures("resident_helper")
def test_claude_code_failures_reach_the_store_and_the_model(tmp_path):
    project = installed_project(tmp_path)
    api = claude_session(project, COMMANDS, "Make the weekly report run")
    with Memory() as mem:
        entries = mem.failures()
    # Its unchanged rerun, nothing run since, was refused with the reason: it never ran.
    assert [(e.action, e.exit_code, e.error_type) for e in entries] == \
        [("python3 report.py", 1, "ModuleNotFoundError")]
    assert {e.goal for e in entries} == {"Make the weekly report run"}
    turns = [r for r in api.requests if r.get("tools")]
    assert BLOCK not in system_text(turns[0])
    assert "No module named 'openpyxl'" in system_text(turns[1]).partition(BLOCK)[2]
    assert "reflect refused to run `python3 report.py`" in system_text(turns[2])
    assert all("`python3 report.py` passed" in e.resolution for e in entries)

    # A second session hits it too (one session's mistake is no house rule); a new
    # session of the project then gets the house rules once, in its first request.
    (project / "report.py").write_text("import openpyxl\nprint('report written')\n")
    claude_session(project, COMMANDS, "Make the monthly report run")
    later = claude_session(project, [], "Add a total to the weekly report")
    first = system_text(next(r for r in later.requests if r.get("tools")))
    assert first.count(EARLIER) == 1, first[-3000:]
    assert "openpyxl" in first.partition(EARLIER)[2]


def test_each_item_reaches_the_model_once_a_context_across_a_fix_and_a_resume(tmp_path):
    """A failure, its fix, a second failure: the context holds each failure's item once (the
    first one is not said again, fixed, beside the second); resumed, the session is sent
    nothing its context holds already."""
    project = installed_project(tmp_path)
    (project / "total.py").write_text("print(totl)\n")
    session = str(uuid.uuid4())
    steps = ["python3 report.py", "sed -i s/openpyxl/json/ report.py", "python3 report.py",
             "python3 total.py", "ls"]
    api = claude_session(project, steps, "Make the weekly report run",
                         ("--session-id", session))
    said_once(items_sent([r for r in api.requests if r.get("tools")][-1]), "openpyxl", "totl")
    resumed = claude_session(project, steps, "Now add a total", ("--resume", session))
    turns = [r for r in resumed.requests if r.get("tools")]
    said_once(items_sent(turns[-1]), "openpyxl", "totl")
    assert "Now add a total" in system_text(turns[-1])  # the resumed context, not a new one


def test_claude_code_connects_to_the_mcp_server_at_the_first_try(tmp_path):
    """Its server/discover probe and subscription answered before the SDK is imported,
    the server is connected once: started once, with no refused initialize (-32022) and
    no reconnection in the client's log of it."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    project = tmp_path / "project"
    home = tmp_path / "home"
    project.mkdir()
    home.mkdir()
    starts = tmp_path / "starts"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"reflect": {
        "command": "sh", "args": ["-c", 'echo started >> "$0"; exec reflect mcp', str(starts)],
        "env": {"REFLECT_HOME": os.environ["REFLECT_HOME"]}}}}))
    env = {**os.environ, "HOME": str(home), "PATH": reflect_path()}
    with FakeModelAPI([]) as api:
        done = subprocess.run(
            [str(client("claude")), "-p", "--mcp-config", str(config), "--strict-mcp-config",
             "Say hello"], cwd=project,
            env={**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-x"},
            capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert starts.read_text().split() == ["started"]
    [log] = home.glob(".cache/claude-cli-nodejs/*/mcp-logs-reflect/*.jsonl")
    said = [json.loads(line).get("debug") or json.loads(line).get("error", "")
            for line in log.read_text().splitlines()]
    assert sum(s.startswith("Successfully connected") for s in said) == 1, said
    # (its stop of the server at the end says "SIGINT failed, sending SIGTERM")
    assert not [s for s in said if "32022" in s
                or ("failed" in s.lower() and not s.startswith("SIGINT failed"))], said
