"""``ReflectAgent`` driven by mini-swe-agent's own DeterministicModel and LocalEnvironment:
real commands, no model call; and the real ``mini`` command in a terminal."""

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from real_clients import reflect_path
from test_detached import no_stray_process  # noqa: F401 - a fixture
from test_worker import wait_for

from reflect import Memory

TASK = "Make scripts/report.py print the weekly report"
FAILING = f"{sys.executable} -c 'import yaml_for_the_report'"


@pytest.fixture
def mini(tmp_path, monkeypatch):
    # mini-swe-agent writes its global config directory when first imported.
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "mini-config"))
    monkeypatch.setenv("MSWEA_SILENT_STARTUP", "1")
    from minisweagent.agents import get_agent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel, make_output

    def agent(*commands: str, **settings):
        model = DeterministicModel(outputs=[make_output(f"step {i}", [{"command": c}])
                                            for i, c in enumerate(commands)])
        # As `mini -y --exit-immediately --agent-class …ReflectAgent` builds it.
        return get_agent(model, LocalEnvironment(cwd=str(tmp_path)), {
            "agent_class": "reflect.integrations.minisweagent.ReflectAgent",
            "system_template": "You are a helpful assistant.",
            "instance_template": "{{task}}", "step_limit": 10, "cost_limit": 0,
            "mode": "yolo", "confirm_exit": False, **settings}, default_type="interactive")

    return agent


def observations(agent) -> list[dict]:
    return [m for m in agent.messages if "returncode" in m.get("extra", {})]


def test_failed_actions_are_captured_and_their_block_joins_the_observation(mini):
    agent = mini(FAILING, "echo fixed", FAILING, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    result = agent.run(TASK)
    assert result["exit_status"] == "Submitted"
    first, success, second = observations(agent)
    for failed in (first, second):
        assert failed["extra"]["returncode"] == 1
        assert "yaml_for_the_report" in failed["extra"]["raw_output"]
        # The template shows the output only; the command is there because the block is.
        assert "import yaml_for_the_report" in failed["content"]
        assert len(failed["content"]) > len(failed["extra"]["raw_output"]) + 60
    assert "import yaml_for_the_report" not in success["content"]
    with Memory() as mem:
        entries = mem.failures(run=agent.reflect_run)
    assert [e.iteration for e in entries] == [3, 1]
    assert all(e.goal == TASK and e.action == FAILING and e.exit_code == 1 for e in entries)
    assert entries[0].error_type == "ModuleNotFoundError"


def test_each_agent_run_is_its_own_run(mini):
    one = mini(FAILING, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    two = mini(FAILING, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    one.run(TASK)
    two.run(TASK)
    assert one.reflect_run != two.reflect_run
    with Memory() as mem:
        assert len(mem.failures(run=two.reflect_run)) == 1


def test_a_passing_rerun_is_the_outcome_of_the_failure(mini):
    agent = mini(FAILING, "ls", FAILING.replace("yaml_for_the_report", "json"),
                 "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    agent.run(TASK)
    with Memory() as mem:
        [entry] = mem.failures(run=agent.reflect_run)
    # The `ls` between only looked: what worked is the rerun alone.
    assert entry.resolution == "`python -c 'import json'` passed"


def test_an_observation_shows_only_what_the_run_was_not_shown_yet(mini):
    other = f"{sys.executable} -c 'import toml_for_the_config'"
    agent = mini(FAILING, other, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    agent.run(TASK)
    first, second = observations(agent)
    assert "import yaml_for_the_report" in first["content"]
    assert "import toml_for_the_config" in second["content"]
    block = second["content"][len(second["extra"]["raw_output"]):]
    assert "yaml_for_the_report" not in block  # shown a step ago, unchanged


@pytest.mark.usefixtures("no_stray_process")
def test_the_run_s_embedding_jobs_are_run(mini, monkeypatch):
    """A capture queues the vectors of its error and goal; the agent starts the detached
    worker that makes them, as a hook does, and never loads the model itself."""
    monkeypatch.delenv("REFLECT_WORKER")  # capture may start the detached worker
    agent = mini(FAILING, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    agent.run(TASK)
    with Memory() as mem:
        wait_for(lambda: mem.status().jobs == {"done": 1}, 120,
                 "the run's embedding job to be run")
    assert not agent.memory.settings.embed_here


def test_the_wrapped_class_and_its_settings_are_mini_s(mini):
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.agents.interactive import InteractiveAgent

    interactive = mini("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
                       whitelist_actions=["^ls"])
    assert isinstance(interactive, InteractiveAgent)
    assert interactive.config.whitelist_actions == ["^ls"] and interactive.config.mode == "yolo"
    default = mini(FAILING, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", wraps="default",
                   mode=None, confirm_exit=None)
    assert type(default).__mro__[2] is DefaultAgent
    assert default.run(TASK)["exit_status"] == "Submitted"
    with Memory() as mem:
        assert len(mem.failures(run=default.reflect_run)) == 1


MINI_CONFIG = """model:
  model_class: deterministic
  model_name: deterministic
  outputs:
    - role: assistant
      content: "step 0"
      extra: {actions: [{command: "touch MARKER"}], cost: 0.0}
agent:
  step_limit: 1
"""


def test_mini_s_confirm_mode_asks_before_an_action_runs(tmp_path):
    """The real `mini` command in a terminal: it asks, the user says no, nothing runs."""
    (tmp_path / "steps.yaml").write_text(MINI_CONFIG)
    mini = Path(sys.executable).with_name("mini")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(mini), "--agent-class", "reflect.integrations.minisweagent.ReflectAgent",
         "-c", "mini.yaml", "-c", str(tmp_path / "steps.yaml"), "-t", "Make a marker",
         "-o", str(tmp_path / "trajectory.json")],
        stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path, close_fds=True,
        env={**os.environ, "PATH": reflect_path(), "MSWEA_CONFIGURED": "true",
             "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "mini-config"), "TERM": "dumb",
             "MSWEA_SILENT_STARTUP": "1"})
    os.close(slave)
    screen, answered = b"", False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and b"Commands not executed" not in screen:
            if not select.select([master], [], [], 0.5)[0]:
                if proc.poll() is not None:
                    break
                continue
            try:
                screen += os.read(master, 65536)
            except OSError:
                break
            if not answered and b"Execute 1 action(s)?" in screen:
                os.write(master, b"no, not that\r")
                answered = True
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    assert answered, screen.decode(errors="replace")[-2000:]
    assert b"Commands not executed" in screen
    assert not (tmp_path / "MARKER").exists()


def test_the_house_rules_join_the_task_before_the_first_step_and_are_not_repeated(mini):
    for _ in range(2):  # earlier runs of the project that hit the same mistake
        mini(FAILING, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT").run(TASK)
    agent = mini(FAILING, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    agent.run(TASK)
    task = agent.messages[1]
    assert task["content"].startswith(TASK)
    assert "HOUSE RULES (from 2 earlier runs" in task["content"]
    assert "yaml_for_the_report" in task["content"]
    [failed] = observations(agent)
    assert "HOUSE RULES" not in failed["content"]  # shown once, at the start
    with Memory() as mem:
        assert [e.goal for e in mem.failures(run=agent.reflect_run)] == [TASK]


def test_a_first_run_s_task_is_the_task_alone(mini):
    agent = mini("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    agent.run(TASK)
    assert agent.messages[1]["content"] == TASK
