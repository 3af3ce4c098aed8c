"""Claude Code's transcripts: ``<config>/projects/<project>/<session>.jsonl``.

Each line is a record with ``type``; an ``assistant`` record's message holds the
``tool_use`` blocks, a ``user`` record's the ``tool_result`` blocks that answer them
(``is_error`` when the call failed). A subagent writes its side chain to
``<session>/subagents/agent-*.jsonl`` under the parent's ``sessionId``, which is what its
hooks carry too. A forked session (``--fork-session``) begins with a copy of the session
it forked, whose assistant records keep that session's id in ``requestSessionId``.

Which failures the hooks see was read off the client (2.1): a call refused before it ran
(``<tool_use_error>…``: an edit whose text is not in the file, a blocked command) fires no
hook; a denied or interrupted one (``toolDenialKind``) is no failure to them; every other
``is_error`` result is a ``PostToolUseFailure`` whose ``error`` is the result's text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from reflect.capture.tool_calls import action_of, failure_text
from reflect.capture.transcripts import (
    COPIED,
    INTERRUPTED,
    REFUSED,
    Session,
    ToolCall,
    TranscriptError,
    files_under,
    readable,
    timestamp,
)
from reflect.capture.transcripts.lines import NOT_A_TRANSCRIPT, Skipped, records

CLIENT = "claude-code"
KNOWN_MAJOR_VERSIONS = (1, 2)  # the transcript format read here
REFUSED_TAG = "<tool_use_error>"
# A result the user stopped, as the client words it (before 2.1 without toolDenialKind).
STOPPED = ("The user doesn't want to proceed with this tool use",
           "[Request interrupted by user")
NO_SESSION = ("files that hold no session (no message of a person or the model: a summary "
              "alone, or another tool's JSON)")
NOT_A_PROMPT = ("<task-notification>", "<command-", "<local-command-", "[Request interrupted")


def config_dir() -> Path:
    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def project_dir(cwd: Path) -> Path:
    """Where Claude Code keeps the sessions started in ``cwd``."""
    return config_dir() / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def sessions(paths: Iterable[str | os.PathLike[str]], skipped: Skipped) -> list[Session]:
    found: dict[str, Session] = {}
    for path in files_under(paths, "*.jsonl", skipped):
        head = _header(path, skipped)
        if head is None:
            continue
        run, cwd, goal, start, side = head
        session = found.setdefault(run, Session(CLIENT, run, [], reader=calls))
        if side:
            session.files.append(path)
        else:
            session.files.insert(0, path)
            session.cwd, session.goal, session.start = cwd, goal, start
        if session.start is None:
            session.start, session.cwd = start, session.cwd or cwd
    return sorted(found.values(), key=lambda s: s.start or 0.0)


def _header(path: Path, skipped: Skipped) -> tuple[str, str, str, float | None, bool] | None:
    """(session id, directory, first prompt, start, side chain?) of a transcript, read as
    far as they take (records of no session may come first); None, and counted, for a file
    with no session (a summary alone) or of a version not known here."""
    run = cwd = goal = ""
    start: float | None = None
    side = read = False
    for rec in readable(path, skipped, records(path, Skipped())):
        read = True
        version = rec.get("version")
        if isinstance(version, str) and not known(version):
            skipped[f"files from Claude Code {version.split('.')[0]}.x, whose transcript "
                    "format this reflect does not know (upgrade reflect)"] += 1
            return None
        if rec.get("type") in ("user", "assistant") and isinstance(rec.get("sessionId"), str):
            run = run or rec["sessionId"]
            cwd = cwd or str(rec.get("cwd") or "")
            start = timestamp(rec.get("timestamp")) if start is None else start
            side = side or rec.get("isSidechain") is True
            goal = goal or prompt(rec)
        if run and goal:
            break
    if not run:
        skipped[NO_SESSION if read else NOT_A_TRANSCRIPT] += 1
    return (run, cwd, goal, start, side) if run else None


def known(version: str) -> bool:
    major = version.split(".")[0]
    return major.isdigit() and int(major) in KNOWN_MAJOR_VERSIONS


def prompt(rec: dict[str, Any]) -> str:
    """The text of a person's prompt, "" for any other record."""
    if rec.get("type") != "user" or rec.get("isMeta") or rec.get("promptSource") == "system":
        return ""
    content = (rec.get("message") or {}).get("content")
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return ""
        content = "\n".join(b.get("text", "") for b in content
                            if isinstance(b, dict) and b.get("type") == "text")
    text = content.strip() if isinstance(content, str) else ""
    return "" if text.startswith(NOT_A_PROMPT) else text


def calls(path: Path, skipped: Skipped) -> Iterator[ToolCall]:
    """The calls a transcript file records, as each finished."""
    asked: dict[str, tuple[str, Any, bool]] = {}  # tool_use id -> (tool, input, copied)
    for rec in records(path, skipped):
        kind = rec.get("type")
        content = (rec.get("message") or {}).get("content") if kind in ("user", "assistant") \
            else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if kind == "assistant" and block.get("type") == "tool_use":
                copied = rec.get("requestSessionId") not in (None, rec.get("sessionId"))
                asked[str(block.get("id"))] = (str(block.get("name") or ""),
                                               block.get("input"), copied)
            elif kind == "user" and block.get("type") == "tool_result":
                call_id = str(block.get("tool_use_id"))
                call = asked.pop(call_id, None)
                if call is not None:
                    found = _result(rec, block, call_id, *call, skipped)
                    if found is not None:
                        yield found


def _result(rec: dict[str, Any], block: dict[str, Any], call_id: str, tool: str,
            tool_input: Any, copied: bool, skipped: Skipped) -> ToolCall | None:
    ts = timestamp(rec.get("timestamp"))
    action = action_of(tool, tool_input)
    if copied:
        skipped[COPIED] += 1
        return None
    if block.get("is_error") is not True:
        return ToolCall(ts, tool, action, failed=False, exit_code=0 if tool == "Bash" else None,
                        id=call_id)
    decision = rec.get("permissionDecision")
    text = result_text(block.get("content"))
    if rec.get("toolDenialKind") or text.startswith(STOPPED) or (
            isinstance(decision, dict) and decision.get("decision") == "reject"):
        skipped[INTERRUPTED] += 1
        return None
    if text.lstrip().startswith(REFUSED_TAG):
        skipped[REFUSED] += 1
        return None
    code, output = failure_text(text)
    return ToolCall(ts, tool, action, failed=True, exit_code=code, error_text=output,
                    id=call_id)


def result_text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return content if isinstance(content, str) else ""


def default_paths(cwd: Path) -> list[Path]:
    """The transcripts of the sessions started in ``cwd``."""
    where = project_dir(cwd)
    if not where.is_dir():
        raise TranscriptError(f"no Claude Code sessions for {cwd} (looked in {where}); run "
                              "`reflect learn claude-code` in the project's directory, or "
                              "give the transcripts' paths")
    return [where]
