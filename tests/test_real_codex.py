"""The real Codex (`codex exec`, from npm) with reflect's hooks installed in the project,
against a scripted Responses API on loopback: a command fails, is run again unchanged, the
script is fixed, and the command passes."""

import json
import os
import subprocess

import pytest
from fake_model_api import FakeModelAPI
from real_clients import client, items_sent, reflect_path, said_once

from reflect import Memory

COMMANDS = ["python3 report.py", "python3 report.py",
            "sed -i s/openpyxl/json/ report.py", "python3 report.py"]


def codex_session(tmp_path, commands: list[str], trust: bool = True,
                  files: dict[str, str] | None = None) -> tuple[FakeModelAPI, str]:
    """``codex exec`` in a project where ``reflect install codex`` put its hooks, as a user
    installs them (the project's own file), the project trusted as that command says
    (``--trust``) unless ``trust`` is False; returns the model API and Codex's log."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".codex").mkdir(parents=True)
    project.mkdir()
    for name, text in {"report.py": "import openpyxl\nprint('report written')\n",
                       **(files or {})}.items():
        (project / name).write_text(text)
    env = codex_env(tmp_path)
    installed = subprocess.run(["reflect", "install", "codex"], env=env, cwd=project,
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    # What it says Codex needs: the project trusted, then the hooks reviewed (which
    # --dangerously-bypass-hook-trust skips, for automation).
    assert f"{project} is not trusted" in installed.stdout, installed.stdout
    assert "codex exec --trust" in installed.stdout, installed.stdout
    api, log = codex_exec(tmp_path, commands, trust=trust)
    if trust:  # Codex kept it, and reflect now says so
        again = subprocess.run(["reflect", "install", "codex"], env=env, cwd=project,
                               capture_output=True, text=True)
        assert f"{project} is trusted" in again.stdout, again.stdout
    return api, log


def codex_env(tmp_path) -> dict[str, str]:
    return {**os.environ, "HOME": str(tmp_path / "home"), "PATH": reflect_path(),
            "OPENAI_API_KEY": "sk-x"}


def codex_exec(tmp_path, commands: list[str], trust: bool = True,
               then: tuple[str, ...] = ("Make the weekly report run",)) -> tuple[FakeModelAPI,
                                                                               str]:
    """``codex exec`` in the project of ``codex_session``, its arguments ended by ``then``
    (a prompt, or ``resume --last`` and one)."""
    home, project = tmp_path / "home", tmp_path / "project"
    with FakeModelAPI(commands) as api:
        (home / ".codex" / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "{api.url}/v1"\nwire_api = "responses"\n')
        done = subprocess.run(
            [str(client("codex")), "exec", "--skip-git-repo-check",
             "--dangerously-bypass-hook-trust", *(["--trust"] if trust else []),
             "-s", "danger-full-access", "-C", str(project), *then],
            env=codex_env(tmp_path), capture_output=True, text=True, timeout=180,
            stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return api, done.stderr


@pytest.mark.usefixtures("resident_helper")
def test_codex_failures_reach_the_store_and_the_model(tmp_path):
    api, log = codex_session(tmp_path, COMMANDS)
    # Four commands, the second refused: it ran no PostToolUse.
    assert log.count("hook: PostToolUse Completed") == 3, log[-3000:]
    assert log.count("hook: PreToolUse Blocked") == 1, log[-3000:]
    with Memory() as mem:
        entries = mem.failures()
    # Its unchanged rerun, nothing run since, was refused with the reason: it never ran.
    assert [(e.action, e.exit_code, e.error_type) for e in entries] == \
        [("python3 report.py", 1, "ModuleNotFoundError")]
    assert {e.goal for e in entries} == {"Make the weekly report run"}
    # What the model read: the block beside the first failure's output (a developer
    # message of the next request), then the refusal of its unchanged rerun.
    assert "PAST FAILURES TO AVOID" not in developer_messages(api.requests[0])
    assert "No module named 'openpyxl'" in block_of(developer_messages(api.requests[1]))
    assert "reflect refused to run `python3 report.py`" in json.dumps(api.requests[2])
    # The fixed script passed when rerun: both failures are resolved by it.
    assert all("`python3 report.py` passed" in e.resolution for e in entries)


def developer_messages(request: dict) -> str:
    return "\n".join(part.get("text", "") for item in request.get("input", [])
                     if item.get("role") == "developer" for part in item.get("content", []))


def block_of(text: str) -> str:
    assert "PAST FAILURES TO AVOID" in text, text[-2000:]
    return text[text.index("PAST FAILURES TO AVOID"):]


def test_a_passing_command_that_prints_an_exit_code_is_no_failure(tmp_path):
    codex_session(tmp_path, ["printf 'Exit code: 3\\nProcess exited with code 3\\n'"])
    with Memory() as mem:
        assert mem.failures() == []


def test_an_untrusted_project_runs_no_hook(tmp_path):
    """Why ``reflect install codex`` names the trust: without it Codex ignores the
    project's hooks, even with --dangerously-bypass-hook-trust."""
    _, log = codex_session(tmp_path, ["python3 report.py"], trust=False)
    assert "hook:" not in log, log[-3000:]
    with Memory() as mem:
        assert mem.failures() == []
    # Codex says nothing of it; reflect's doctor does, with what to do.
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PATH": reflect_path()}
    env.pop("CODEX_HOME", None)
    doctor = subprocess.run(["reflect", "doctor"], env=env, cwd=tmp_path / "project",
                            capture_output=True, text=True)
    assert doctor.returncode == 1, doctor.stdout + doctor.stderr
    assert "hooks: PROBLEM: codex (.codex/hooks.json): installed, never run, and Codex ran " \
        "1 session here since" in doctor.stdout, doctor.stdout
    assert "codex exec --trust" in doctor.stdout


def test_each_item_reaches_the_model_once_a_context_across_a_fix_and_a_resume(tmp_path):
    """A failure, its fix, a second failure: the context holds each failure's item once (the
    first one is not said again, fixed, beside the second); resumed, the session is sent
    nothing its context holds already."""
    steps = ["python3 report.py", "sed -i s/openpyxl/json/ report.py", "python3 report.py",
             "python3 total.py", "ls"]
    api, _ = codex_session(tmp_path, steps, files={"total.py": "print(totl)\n"})
    said_once(items_sent(api.requests[-1]), "openpyxl", "totl")
    resumed, log = codex_exec(tmp_path, steps, then=("resume", "--last", "Now add a total"))
    assert "hook: SessionStart Completed" in log, log[-3000:]
    said_once(items_sent(resumed.requests[-1]), "openpyxl", "totl")
    assert "Now add a total" in json.dumps(resumed.requests[-1])  # the resumed context
