"""``ReflectAgent`` driven by mini-swe-agent's own DeterministicModel and LocalEnvironment:
real commands, no model call."""

import sys

import pytest

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

    def agent(*commands: str):
        model = DeterministicModel(outputs=[make_output(f"step {i}", [{"command": c}])
                                            for i, c in enumerate(commands)])
        # As `mini --agent-class reflect.integrations.minisweagent.ReflectAgent` builds it.
        return get_agent(model, LocalEnvironment(cwd=str(tmp_path)), {
            "agent_class": "reflect.integrations.minisweagent.ReflectAgent",
            "system_template": "You are a helpful assistant.",
            "instance_template": "{{task}}", "step_limit": 10, "cost_limit": 0})

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
