"""The real transcripts in tests/fixtures/transcripts (written by the Claude Code and Codex
binaries against a scripted model API: tests/fixtures/transcripts/record.py), and new
sessions made from them: the same records under new session ids, with texts replaced."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from reflect.capture.transcripts import Session, Skipped

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
CLAUDE_PROJECT = FIXTURES / "claude-code" / "projects" / "-tmp-learn-rec-claude-project"
CLAUDE_SESSION = "a5f6db3f-bd8a-4870-94b3-61edc92e60de"  # resumed, interrupted, a side chain
CLAUDE_FORK = "95406772-6fe6-431f-8ed8-e231415c7886"  # forked from it
CODEX_SESSIONS = FIXTURES / "codex" / "sessions"
CODEX_SESSION = "01a23acf-decc-7ba0-bf5e-582e690276c5"  # resumed, interrupted
CODEX_SUBAGENT = "01a23acf-dff4-7060-b8a8-96c912e78fb6"


def fixture_files(client: str) -> list[Path]:
    """The files of the fixture's main session and its side chains."""
    if client == "claude-code":
        return [CLAUDE_PROJECT / f"{CLAUDE_SESSION}.jsonl",
                *sorted((CLAUDE_PROJECT / CLAUDE_SESSION).rglob("*.jsonl"))]
    return sorted(p for p in CODEX_SESSIONS.rglob("*.jsonl")
                  if CODEX_SESSION in p.name or CODEX_SUBAGENT in p.name)


def synthesize(client: str, out: Path, n: int = 1, texts: dict[str, str] | None = None,
               start: int = 0) -> list[Path]:
    """``n`` new sessions made of the fixture's main session (with its side chains), each
    under new ids, each string with ``texts`` replaced; returns the files written."""
    written = []
    ids = (CLAUDE_SESSION,) if client == "claude-code" else (CODEX_SESSION, CODEX_SUBAGENT)
    for k in range(start, start + n):
        fresh = {old: str(uuid.uuid5(uuid.NAMESPACE_URL, f"{client}/{old}/{k}")) for old in ids}
        for path in fixture_files(client):
            name = str(path.relative_to(FIXTURES))
            for old, new in fresh.items():
                name = name.replace(old, new)
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(path, encoding="utf-8") as src, open(target, "w", encoding="utf-8") as dst:
                for line in src:
                    record = _replaced(json.loads(line), {**fresh, **(texts or {})})
                    dst.write(json.dumps(record, ensure_ascii=False) + "\n")
            written.append(target)
    return written


def _replaced(value: Any, texts: dict[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in texts.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [_replaced(v, texts) for v in value]
    if isinstance(value, dict):
        return {k: _replaced(v, texts) for k, v in value.items()}
    return value


def hook_events(session: Session) -> list[bytes]:
    """What the client's hooks were given for the session's calls, in order."""
    events = []
    for call in session.calls(Skipped()):
        target = call.action.partition(" ")[2]
        event = {"session_id": session.run, "cwd": session.cwd, "tool_name": call.tool,
                 "tool_input": {"command": call.action} if call.tool == "Bash"
                 else {"file_path": target}, "tool_use_id": call.id}
        if call.failed:
            code = "" if call.exit_code is None else f"Exit code {call.exit_code}\n"
            event.update(hook_event_name="PostToolUseFailure", error=code + call.error_text)
        else:
            event.update(hook_event_name="PostToolUse")
        events.append(json.dumps(event).encode())
    return events
