"""mini-swe-agent 2.x: ``ReflectAgent``, its ``DefaultAgent`` with failure memory.

    mini --agent-class reflect.integrations.minisweagent.ReflectAgent

Every action of a step that ends with a non-zero ``returncode`` is captured (its
``raw_output`` as the error text, the task as the goal, the step as the iteration,
one run per agent run), and the run's block is appended to that step's last failed
observation, so the model reads it beside the error.
"""

from __future__ import annotations

import uuid

from minisweagent.agents.default import DefaultAgent

from reflect import Memory, config


class ReflectAgent(DefaultAgent):
    def run(self, task: str = "", **kwargs) -> dict:
        self.reflect_run = f"mini-{uuid.uuid4().hex[:10]}"
        self.reflect_goal = task
        with Memory(run=self.reflect_run) as self.memory:
            return super().run(task, **kwargs)

    def execute_actions(self, message: dict) -> list[dict]:
        observations = super().execute_actions(message)
        try:
            self.remember(message.get("extra", {}).get("actions", []), observations)
        except Exception as e:  # memory never costs the agent its step
            config.warn(f"mini-swe-agent: memory failed ({e}); the agent goes on")
        return observations

    def remember(self, actions: list[dict], observations: list[dict]) -> None:
        failed = None
        for action, observation in zip(actions, observations, strict=False):
            extra = observation.get("extra", {})
            if extra.get("returncode") in (0, None):
                continue
            self.memory.capture(iteration=self.n_calls, goal=self.reflect_goal,
                                action=str(action.get("command", "")),
                                exit_code=extra["returncode"],
                                error_text=str(extra.get("raw_output") or ""))
            failed = observation
        if failed is not None:
            block = self.memory.recall(goal=self.reflect_goal, iteration=self.n_calls + 1).text
            if block:
                append(failed, block)


def append(observation: dict, text: str) -> None:
    """Add ``text`` to what the model reads of an observation, in any of the message
    shapes mini-swe-agent's models produce (text, tool result, Responses API)."""
    for key in ("content", "output"):
        if isinstance(observation.get(key), str):
            observation[key] += f"\n\n{text}"
            return
    parts = observation.get("content")
    if isinstance(parts, list) and parts and isinstance(parts[-1], dict) and "text" in parts[-1]:
        parts[-1]["text"] += f"\n\n{text}"
