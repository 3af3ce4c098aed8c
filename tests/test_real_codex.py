"""The real Codex (`codex exec`, from npm) with reflect's hooks installed, against a
scripted Responses API on loopback: a command fails, is run again unchanged, the script is
fixed, and the command passes."""

import os
import subprocess

from fake_model_api import FakeModelAPI
from real_clients import client, reflect_path

from reflect import Memory

COMMANDS = ["python3 report.py", "python3 report.py",
            "sed -i s/openpyxl/json/ report.py", "python3 report.py"]


def codex_session(tmp_path, commands: list[str]) -> tuple[FakeModelAPI, str]:
    codex = client("codex")
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".codex").mkdir(parents=True)
    project.mkdir()
    (project / "report.py").write_text("import openpyxl\nprint('report written')\n")
    env = {**os.environ, "HOME": str(home), "PATH": reflect_path(), "OPENAI_API_KEY": "sk-x"}
    installed = subprocess.run(["reflect", "install", "codex", "--user"], env=env,
                               cwd=project, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    with FakeModelAPI(commands) as api:
        (home / ".codex" / "config.toml").write_text(
            'model = "gpt-5"\nmodel_provider = "fake"\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "{api.url}/v1"\nwire_api = "responses"\n')
        done = subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
             "-s", "danger-full-access", "-C", str(project), "Make the weekly report run"],
            env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    return api, done.stderr


def test_codex_failures_reach_the_store_and_the_model(tmp_path):
    api, log = codex_session(tmp_path, COMMANDS)
    assert log.count("hook: PostToolUse Completed") == 4, log[-3000:]
    with Memory() as mem:
        entries = mem.failures()
    assert [(e.action, e.exit_code, e.error_type) for e in entries] == \
        [("python3 report.py", 1, "ModuleNotFoundError")] * 2  # the first and its rerun
    assert {e.goal for e in entries} == {"Make the weekly report run"}
    # What the model read: the block beside the first failure's output, the warning
    # before its unchanged rerun, each as a developer message of the next request.
    assert "PAST FAILURES TO AVOID" not in developer_messages(api.requests[0])
    assert "No module named 'openpyxl'" in block_of(developer_messages(api.requests[1]))
    assert "failed just now in this session" in developer_messages(api.requests[2])
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
