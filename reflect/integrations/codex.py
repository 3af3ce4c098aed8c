"""Codex CLI: ``reflect hook codex`` answers the hook events Codex has; ``reflect install
codex`` writes them into ``.codex/hooks.json`` or ``~/.codex/hooks.json``.

Codex sends ``session_id``, ``cwd``, ``hook_event_name`` and ``transcript_path`` like
Claude Code, and the same answer shape works, but it has no failure event: a Bash call,
failed or not, ends in ``PostToolUse`` whose ``tool_response`` is the command's raw output
(``"three\\n"`` for ``echo three``), with no exit code. The exit code is in the session's
rollout file (``transcript_path``), which Codex has written by the time the hook runs: the
call's ``item_completed`` event (``exit_code``), or an older Codex's ``exec_command_end``.
A call whose exit code cannot be found there is neither a failure nor a success.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from reflect.capture.numbers import whole_number
from reflect.capture.tool_calls import CHANGING_TOOLS, codex_exit_code
from reflect.integrations.clients import scopes, user_dir
from reflect.integrations.hooks import Event, base_event

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import Any

CLIENT = "codex"
HOOKS = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Bash",
    "PostToolUse": "|".join(CHANGING_TOOLS[CLIENT]),  # what can change an outcome
}
TAIL_CHUNK = 256 * 1024  # the rollout is read from its end, a chunk at a time
TAIL_LIMIT = 16 * 1024 * 1024  # and no further back than this


def parse(raw: dict[str, Any]) -> Event:
    event = base_event(raw, HOOKS)
    if event.name == "PostToolUse" and event.tool == "Bash":
        code, output = call_result(raw.get("transcript_path"), str(raw.get("tool_use_id") or ""))
        text = response_text(raw.get("tool_response")) or output
        return event._replace(exit_code=code, error_text=text,
                              failed=None if code is None else code != 0)
    return event


def call_result(transcript: object, call_id: str) -> tuple[int | None, str]:
    """The exit code and output the rollout file records for one call; ``(None, "")``
    when it is not there (no file, another format, a call still running)."""
    if not transcript or not call_id:
        return None, ""
    for line in reversed_lines(Path(str(transcript)), f'"{call_id}"'):
        try:
            # An exit code past int()'s 4300 digits is read as a number, not a bad line.
            payload = json.loads(line, parse_int=whole_number).get("payload")
        except (ValueError, AttributeError, RecursionError):
            continue
        if not isinstance(payload, dict):
            continue
        item = payload["item"] if isinstance(payload.get("item"), dict) else payload
        if call_id not in (item.get("id"), item.get("call_id")):
            continue
        code, output = codex_exit_code(payload)
        if code is not None:
            return code, output
    return None, ""


def response_text(response: object) -> str:
    """A call's raw output: text, or a list of text parts (``{"text": …}`` or strings)."""
    if isinstance(response, list):
        return "".join(part if isinstance(part, str) else str(part.get("text") or "")
                       for part in response if isinstance(part, (str, dict)))
    return response if isinstance(response, str) else ""


def reversed_lines(path: Path, needle: str) -> Iterator[str]:
    """The lines of a file that hold ``needle``, last first, read from the end."""
    key = needle.encode()
    try:
        with open(path, "rb") as f:
            pos = f.seek(0, os.SEEK_END)
            floor, rest = max(0, pos - TAIL_LIMIT), b""
            while pos > floor:
                size = min(TAIL_CHUNK, pos - floor)
                pos -= size
                f.seek(pos)
                lines = (f.read(size) + rest).split(b"\n")
                rest = lines.pop(0) if pos > floor else b""  # a line begun in the next chunk
                for line in reversed(lines):
                    if key in line:
                        yield line.decode("utf-8", "replace")
    except OSError:
        return


def install(scope: str, uninstall: bool = False) -> str:
    from reflect.integrations.settings import located, merge  # not for a hook

    path = located(scopes(CLIENT)[scope])
    said = merge(path, HOOKS, CLIENT, uninstall, portable=scope == "project")
    if uninstall:
        return said
    return f"{said}\n{trust_needed(path.parent.parent if scope == 'project' else None)}"


def trust_needed(project: Path | None, env: Mapping[str, str] = os.environ) -> str:
    """What Codex needs before it runs the hooks: a project's file is read only in a
    trusted project (its ``[projects."<path>"] trust_level`` in Codex's config.toml), and
    every hook runs once the user has reviewed it."""
    config = user_dir(CLIENT, env) / "config.toml"
    review = ("Codex runs a hook once it is reviewed and trusted in its /hooks view "
              "(`codex exec --dangerously-bypass-hook-trust` skips the review, for "
              "automation that vets its hooks).")
    if project is None:
        return review
    if trust_level(config, project) == "trusted":
        return f"Codex reads the project's hooks: {project} is trusted in {config}. {review}"
    return (f"Codex reads a project's hooks only in a trusted project, and {project} is not "
            f"trusted in {config}: trust it when Codex asks on its first start there, or "
            f"run `codex exec --trust` there once (or add [projects.\"{project}\"] "
            f"trust_level = \"trusted\" to that file). Then: {review}")


def trust_level(config: Path, project: Path) -> str | None:
    """The project's trust level in Codex's config.toml, None when it says none (or the
    file cannot be read: Codex would not trust the project either)."""
    import tomllib

    try:
        projects = tomllib.loads(config.read_text(encoding="utf-8")).get("projects")
    except (OSError, ValueError):
        return None
    entry = projects.get(str(project)) if isinstance(projects, dict) else None
    level = entry.get("trust_level") if isinstance(entry, dict) else None
    return level if isinstance(level, str) else None
