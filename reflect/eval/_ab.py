"""Live A/B: run a real agent command on tasks with memory on and off.

Each arm has one persistent store across its tasks (so lessons can carry
from task to task) and a fresh working directory per task. For every task
and arm the agent is started up to ``trials`` times, stopping at its first
success; before each attempt the arm recalls a block (``on``: every section,
``recency``: this run's failures, ``off``: nothing) and writes a prompt file
holding the task's goal and the block. The agent's exit code and output
(stdout and stderr, its last 64 KB) are captured into the arm's store like
any harness's. Tasks are shuffled with the seed, and so is the order of the
arms within each task, so drift over time (a rate limit, a warm cache) hits
both arms alike.

Each arm writes ``DIR/<arm>/trace.jsonl`` (what happened, in the trace
format), ``iterations.jsonl`` and ``summary.json`` (as a replay does), so
``reflect eval compare DIR/on DIR/off`` reads them; ``DIR/ab.json`` keeps the
seed, the schedule and the wall times.

The agent command is run by the shell in the task's working directory, with
``{prompt_file}``, ``{workdir}``, ``{task}``, ``{arm}`` and ``{iteration}``
replaced by shell-quoted values (and set as ``REFLECT_AB_PROMPT_FILE``,
``REFLECT_AB_WORKDIR``, ``REFLECT_AB_TASK``, ``REFLECT_AB_ARM``,
``REFLECT_AB_ITERATION``). A run past ``timeout`` seconds is killed with
its process group and counts as a failure with no exit code.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reflect.api.memory import DEFAULT_MAX_TOKENS, Memory
from reflect.base.choices import REPLAY_MODES
from reflect.capture.entry import decode_tail
from reflect.eval._metrics import summarize
from reflect.eval._replay import ITERATIONS_FILE, SUMMARY_FILE, Injector
from reflect.eval._trace import TraceRecord, write_json, write_jsonl, write_text, write_trace

TRACE_FILE = "trace.jsonl"
AB_FILE = "ab.json"
PLACEHOLDERS = ("prompt_file", "workdir", "task", "arm", "iteration")


class ABError(RuntimeError):
    """An A/B run that cannot start; the message says how to fix it."""


@dataclass
class Task:
    id: str
    goal: str
    phase: str = ""


def read_tasks(path: str | Path) -> list[Task]:
    """Tasks from JSONL: one object a line with ``id`` and ``goal`` (``phase`` optional)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ABError(f"cannot read tasks {path}: {e.strerror or e}; give a JSONL file with "
                      'one {"id": …, "goal": …} a line') from e
    tasks, ids = [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            task = Task(str(data["id"]), str(data["goal"]), str(data.get("phase", "")))
        except (ValueError, KeyError) as e:
            raise ABError(f'{path}:{number}: {e}; each line must be {{"id": …, "goal": …}}'
                          ) from None
        if task.id in ids:
            raise ABError(f"{path}:{number}: task id {task.id!r} appears twice; ids must differ")
        ids.add(task.id)
        tasks.append(task)
    if not tasks:
        raise ABError(f"{path}: no tasks; add one JSON object a line")
    return tasks


def schedule(tasks: Sequence[Task], arms: Sequence[str], seed: int) -> list[tuple[Task, str]]:
    """Tasks in a seeded random order, each followed by its arms in a seeded random order."""
    rng = random.Random(seed)
    order = list(tasks)
    rng.shuffle(order)
    plan = []
    for task in order:
        arm_order = list(arms)
        rng.shuffle(arm_order)
        plan += [(task, arm) for arm in arm_order]
    return plan


def prompt_text(task: Task, block: str) -> str:
    """The prompt file: the task's goal, then the block when there is one."""
    parts = [task.goal.strip(), block.strip()]
    return "\n\n".join(p for p in parts if p) + "\n"


def render_command(template: str, values: dict[str, str]) -> str:
    command = template
    for name in PLACEHOLDERS:
        command = command.replace("{" + name + "}", shlex.quote(values[name]))
    return command


def run_agent(command: str, cwd: Path, env: dict[str, str], timeout: float
              ) -> tuple[int | None, str, float]:
    """Exit code (None on timeout), the output's last 64 KB and the wall time in seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        data, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        data, _ = proc.communicate()
        code = None
    text, _ = decode_tail(data)
    if code is None:
        text += f"\n[reflect eval ab: the agent was killed after the {timeout:g} s timeout]"
    return code, text, time.perf_counter() - start


def _slug(text: str, index: int) -> str:
    return f"{index:03d}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', text)[:60]}"


def run_ab(  # noqa: C901 - one A/B from its checks to its report, step by step
    agent: str,
    tasks: Sequence[Task],
    out: str | Path,
    *,
    trials: int = 3,
    arms: Sequence[str] = ("on", "off"),
    seed: int = 0,
    timeout: float = 600.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    embeddings: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the A/B; returns ``ab.json``'s content (per-arm summaries sit beside it).
    ``embeddings`` is handed to each arm's ``Memory`` (None: its default)."""
    out = Path(out)
    if trials < 1:
        raise ABError("--trials must be at least 1")
    if len(set(arms)) != len(arms) or not set(arms) <= set(REPLAY_MODES):
        raise ABError(f"arms must be distinct modes among {', '.join(REPLAY_MODES)}")
    if "{prompt_file}" not in agent:
        raise ABError("the agent command must contain {prompt_file}, e.g. "
                      "--agent 'my-agent --prompt {prompt_file}'")
    for arm in arms:
        if (out / arm / "store").exists():
            raise ABError(f"{out / arm / 'store'} already exists; each A/B needs fresh stores: "
                          "choose another --out")
    plan = schedule(tasks, arms, seed)
    index = {task.id: i for i, task in enumerate(tasks)}
    options: dict[str, Any] = {"embeddings": embeddings} if embeddings is not None else {}
    # Each arm learns in its own SQLite store, even where REFLECT_STORE names a shared one.
    mems = {arm: Memory(home=out / arm / "store", store_url="", **options) for arm in arms}
    injectors = {arm: Injector(mems[arm], arm, max_tokens) for arm in arms}
    rows: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
    records: dict[str, list[TraceRecord]] = {arm: [] for arm in arms}
    wall = dict.fromkeys(arms, 0.0)
    try:
        for task, arm in plan:
            slug = _slug(task.id, index[task.id])
            workdir = out / "work" / arm / slug
            workdir.mkdir(parents=True, exist_ok=True)
            for iteration in range(1, trials + 1):
                rec, injected = injectors[arm].recall(task.id, task.goal, task.phase, iteration)
                prompt = out / "prompts" / arm / slug / f"{iteration}.txt"
                write_text(prompt, prompt_text(task, rec.text))
                values = {"prompt_file": str(prompt.resolve()), "workdir": str(workdir.resolve()),
                          "task": task.id, "arm": arm, "iteration": str(iteration)}
                env = {**os.environ, **{f"REFLECT_AB_{k.upper()}": v for k, v in values.items()}}
                command = render_command(agent, values)
                started = time.time()
                code, output, seconds = run_agent(command, workdir, env, timeout)
                wall[arm] += seconds
                success = code == 0
                error_text = "" if success else output
                outcome = injectors[arm].report(task.id, iteration, task.goal, task.phase,
                                                command, code, error_text, success)
                rows[arm].append({"index": len(rows[arm]), "run": task.id,
                                  "iteration": iteration, "success": success,
                                  "agent_seconds": round(seconds, 3), **outcome, **injected})
                records[arm].append(TraceRecord(
                    run=task.id, iteration=iteration, goal=task.goal, phase=task.phase,
                    action=command, exit_code=code, error_text=error_text, success=success,
                    ts=started))
                if progress is not None:
                    progress(f"{arm:>7}  {task.id}  #{iteration}  "
                             f"{'ok' if success else f'exit {code}'}  {seconds:.1f}s")
                if success:
                    break
        for injector in injectors.values():
            injector.verify()
    finally:
        for mem in mems.values():
            mem.close()
    for arm in arms:
        summary = {"mode": arm, "trace": str(out / arm / TRACE_FILE),
                   "records": len(records[arm]), "wall_seconds": round(wall[arm], 3),
                   **summarize(rows[arm], seed=seed)}
        write_trace(out / arm / TRACE_FILE, records[arm])
        write_jsonl(out / arm / ITERATIONS_FILE, rows[arm])
        write_json(out / arm / SUMMARY_FILE, summary)
    report = {
        "agent": agent, "seed": seed, "trials": trials, "timeout": timeout,
        "arms": list(arms), "tasks": len(tasks),
        "schedule": [[task.id, arm] for task, arm in plan],
        "wall_seconds": {arm: round(s, 3) for arm, s in wall.items()},
    }
    write_json(out / AB_FILE, report)
    return report
