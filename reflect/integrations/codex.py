"""Codex CLI: ``reflect hook codex`` answers the hook events Codex has; ``reflect install
codex`` writes them into ``.codex/hooks.json`` or ``~/.codex/hooks.json``.

Codex sends ``session_id``, ``cwd`` and ``hook_event_name`` like Claude Code, and the
same answer shape works, but it has no failure event: a Bash call, failed or not, ends
in ``PostToolUse`` whose ``tool_response`` is the output the model saw, with no exit
code field. The exit code is read from that text (``Exit code: N``, ``Process exited
with code N``) or from an object's ``exit_code``; a call without one is neither a
failure nor a success here.
"""

from __future__ import annotations

import re
from pathlib import Path

from reflect.integrations.hooks import Event, base_event
from reflect.integrations.settings import located, merge

CLIENT = "codex"
HOOKS = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Bash",
    "PostToolUse": None,  # every tool, so a PreToolUse warning knows a call ran since
}
SCOPES = {"project": Path(".codex/hooks.json"), "user": Path("~/.codex/hooks.json")}
EXIT_CODE = re.compile(r"^(?:Exit code:?|Process exited with code) (-?\d+)\b", re.MULTILINE)


def parse(raw: dict) -> Event:
    event = base_event(raw, HOOKS)
    if event.name == "PostToolUse" and event.tool == "Bash":
        code, text = exit_status(raw.get("tool_response"))
        failed = None if code is None else code != 0
        return event._replace(exit_code=code, error_text=text, failed=failed)
    return event


def exit_status(response) -> tuple[int | None, str]:
    if isinstance(response, dict):
        code = response.get("exit_code", response.get("exitCode"))
        text = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr", "output"))
        return (code if isinstance(code, int) else None), text.strip()
    text = str(response or "")
    match = EXIT_CODE.search(text)
    return (int(match[1]) if match else None), text


def install(scope: str, uninstall: bool = False) -> str:
    return merge(located(SCOPES[scope]), HOOKS, CLIENT, uninstall)
