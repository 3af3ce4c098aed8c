"""mini-swe-agent 2.x: ``ReflectAgent``, the agent mini would have used, with failure memory.

    mini --agent-class reflect.integrations.minisweagent.ReflectAgent

It is mini's own agent class with ``query`` and ``execute_actions`` extended, so every
setting and safety stays: the ``mini`` command's ``InteractiveAgent`` by default (its
confirm mode, whitelist, human mode, confirm on exit), or the class named by
``-c agent.wraps=...`` (``default``, ``interactive`` or a dotted path). Before the first
step, the house rules (what earlier runs of the project hit) join the task's message.
Every action of a step that ends with a non-zero ``returncode`` is captured (its
``raw_output`` as the error text, the task as the goal, the step as the iteration, one
run per agent run), and the run's block is appended to that step's last failed
observation, less the items this run was already shown; an action that passes is the
outcome of the failures it reruns. As for a hook, the embedding model is never loaded in
the agent's process: a step that failed starts the detached worker that embeds what its
captures queued.
"""

from __future__ import annotations

import functools
import uuid
from typing import TYPE_CHECKING, Any, cast

from minisweagent import Agent, Environment, Model
from minisweagent.agents import get_agent_class

from reflect import Memory, Recall, Settings
from reflect.base import config
from reflect.integrations.shown import unseen

MINI_DEFAULT = "interactive"  # the class `mini` builds when no --agent-class is given

if TYPE_CHECKING:
    # What the mixin extends: the methods and the step count of mini's own agents, all
    # built on this one (at run time the base is the wrapped class, put after the mixin).
    from minisweagent.agents.default import DefaultAgent as Extended
else:
    Extended = object


class ReflectAgent:
    """Builds an instance of the wrapped class (``wraps``) with memory: what
    ``get_agent`` calls as ``agent_class(model, env, **config)``."""

    # It returns no ReflectAgent but the wrapped class with memory, hence the ignore.
    def __new__(  # type: ignore[misc]
            cls, model: Model, env: Environment, *, wraps: str = MINI_DEFAULT, **kwargs: Any,
    ) -> MemoryMixin:
        return with_memory(get_agent_class(wraps))(model, env, **kwargs)


@functools.cache
def with_memory(base: type[Agent]) -> type[MemoryMixin]:
    """``base`` with failure memory, as a class of its own (one per base)."""
    return cast("type[MemoryMixin]", type(f"Reflect{base.__name__}", (MemoryMixin, base), {}))


class MemoryMixin(Extended):
    """What memory adds to an agent class; every other method is the class's own."""

    def run(self, task: str = "", **kwargs: Any) -> dict[str, Any]:
        self.reflect_run = f"mini-{uuid.uuid4().hex[:10]}"
        self.reflect_goal = task
        self.reflect_shown: set[str] = set()
        # As a hook's: what needs the embedding model is queued for the detached worker
        # that the step's capture starts, never loaded in the agent's process.
        with Memory(run=self.reflect_run, settings=Settings(embed_here=False)) as self.memory:
            try:
                self.reflect_opening = self.shown_new(self.memory.recall(goal=task, iteration=1))
            except Exception as e:  # memory never costs the agent its run
                config.warn(f"mini-swe-agent: memory failed ({e}); the agent goes on")
                self.reflect_opening = ""
            return super().run(task, **kwargs)

    def query(self) -> dict[str, Any]:
        # Before the first step: the house rules join the task's message, which mini
        # renders in `run` (the run's goal stays the task).
        if self.reflect_opening and self.messages:
            append(self.messages[-1], self.reflect_opening)
            self.reflect_opening = ""
        return super().query()

    def execute_actions(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        # The class's own: its confirmation comes first, and a rejected step runs nothing.
        observations = super().execute_actions(message)
        try:
            self.remember(message.get("extra", {}).get("actions", []), observations)
        except Exception as e:  # memory never costs the agent its step
            config.warn(f"mini-swe-agent: memory failed ({e}); the agent goes on")
        return observations

    def remember(self, actions: list[dict[str, Any]],
                 observations: list[dict[str, Any]]) -> None:
        failed = None
        step = self.n_calls
        for action, observation in zip(actions, observations, strict=False):
            extra = observation.get("extra", {})
            command = str(action.get("command", ""))
            if extra.get("returncode") == 0:
                self.memory.outcome(iteration=step, success=True, action=command)
            if extra.get("returncode") in (0, None):
                continue
            self.memory.capture(iteration=step, goal=self.reflect_goal, action=command,
                                exit_code=extra["returncode"],
                                error_text=str(extra.get("raw_output") or ""))
            failed = observation
        if failed is not None:
            self.memory.ensure_worker()
            block = self.shown_new(self.memory.recall(goal=self.reflect_goal, iteration=step + 1))
            if block:
                append(failed, block)

    def shown_new(self, rec: Recall) -> str:
        """The block less what this run was shown; what it shows is then shown."""
        block, digests = unseen(rec, self.reflect_shown)
        self.reflect_shown.update(digests)
        return block


def append(observation: dict[str, Any], text: str) -> None:
    """Add ``text`` to what the model reads of an observation, in any of the message
    shapes mini-swe-agent's models produce (text, tool result, Responses API)."""
    for key in ("content", "output"):
        if isinstance(observation.get(key), str):
            observation[key] += f"\n\n{text}"
            return
    parts = observation.get("content")
    if isinstance(parts, list) and parts and isinstance(parts[-1], dict) and "text" in parts[-1]:
        parts[-1]["text"] += f"\n\n{text}"
