"""Codex's rollouts: ``<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-*.jsonl``.

The first record is ``session_meta`` (the session's ``id``, its ``cwd``, the
``cli_version`` that wrote it; a subagent's names its root session in ``session_id``,
which its hooks carry too). Then ``response_item``s (the model's ``function_call``s and
their ``function_call_output``s, the user's messages) and ``event_msg``s: a shell command
ends in ``item_completed`` (a ``CommandExecution`` with ``exit_code`` and
``aggregated_output``), in an older Codex in ``exec_command_end``, read as the hook reads
them (``tool_calls.codex_exit_code``). A resumed session appends to the same rollout.

What the hooks see was read off the client (0.171): ``PostToolUse`` for a shell command
that ran to its end; none for a command the user interrupted (its output ``aborted by
user``, its turn ``turn_aborted``) nor for a patch that did not apply.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from reflect.capture.tool_calls import codex_exit_code, codex_output
from reflect.capture.transcripts import (
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

CLIENT = "codex"
KNOWN_MAJOR_VERSIONS = (0,)
SHELL_TOOLS = ("exec_command", "shell", "container.exec", "local_shell")
ABORTED = "aborted by user"
ELSEWHERE = ("rollouts of sessions started in other directories (run `reflect learn codex` "
             "there, or give their files)")


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")


def sessions(paths: Iterable[str | os.PathLike[str]], skipped: Skipped,
             within: Path | None = None) -> list[Session]:
    """The sessions of the rollouts under ``paths``; with ``within``, only those whose
    directory is it or under it."""
    found: dict[str, Session] = {}
    for path in files_under(paths, "rollout-*.jsonl", skipped):
        head = _header(path, skipped)
        if head is None:
            continue
        run, own, cwd, goal, start = head
        if within is not None and not _inside(cwd, within):
            skipped[ELSEWHERE] += 1
            continue
        session = found.setdefault(run, Session(CLIENT, run, [], reader=calls))
        if own == run:
            session.files.insert(0, path)
            session.cwd, session.goal, session.start = cwd, goal, start
        else:
            session.files.append(path)
            if session.start is None:
                session.start, session.cwd = start, cwd
    return sorted(found.values(), key=lambda s: s.start or 0.0)


def _inside(cwd: str, root: Path) -> bool:
    try:
        return bool(cwd) and Path(cwd).resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def _header(path: Path, skipped: Skipped) -> tuple[str, str, str, str, float | None] | None:
    """(run, own id, directory, first prompt, start) of a rollout; None (and counted) for a
    file that is no rollout of a known version."""
    meta: dict[str, Any] | None = None
    goal = ""
    for n, rec in enumerate(readable(path, skipped, records(path, Skipped()))):
        payload = rec.get("payload")
        if n == 0:
            if rec.get("type") != "session_meta" or not isinstance(payload, dict):
                skipped["files that are no Codex rollout of a format known here (no "
                        "session_meta first)"] += 1
                return None
            version = str(payload.get("cli_version") or "")
            major = version.split(".")[0]
            if not (major.isdigit() and int(major) in KNOWN_MAJOR_VERSIONS):
                skipped[f"files from Codex {version or 'of no version'}, whose rollout format "
                        "this reflect does not know (upgrade reflect)"] += 1
                return None
            meta = payload
            continue
        goal = prompt(rec)
        if goal:  # read as far as it takes: many records may come first
            break
    if meta is None:  # not one record read
        skipped[NOT_A_TRANSCRIPT] += 1
        return None
    own = str(meta.get("id") or "")
    run = str(meta.get("session_id") or own)
    return run, own, str(meta.get("cwd") or ""), goal, timestamp(meta.get("timestamp"))


def prompt(rec: dict[str, Any]) -> str:
    """A person's prompt: a user message that is not the client's own (``<environment_context>``,
    ``<turn_aborted>``, …), or an older Codex's ``user_message`` event."""
    payload = rec.get("payload")
    if not isinstance(payload, dict):
        return ""
    if rec.get("type") == "event_msg" and payload.get("type") == "user_message":
        return str(payload.get("message") or "").strip()
    if (rec.get("type") != "response_item" or payload.get("type") != "message"
            or payload.get("role") != "user"):
        return ""
    text = "\n".join(str(c.get("text") or "") for c in payload.get("content") or []
                     if isinstance(c, dict)).strip()
    return "" if text.startswith("<") else text


def command_of(name: str, arguments: object) -> str:
    """A shell call's command line as the hook gives it (``tool_input.command``)."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return ""
    if not isinstance(args, dict):
        return ""
    command = args.get("cmd") if name == "exec_command" else args.get("command")
    if isinstance(command, list):
        words = [str(w) for w in command]
        if len(words) == 3 and words[1] in ("-lc", "-c"):  # ["bash", "-lc", "<line>"]
            return words[2]
        return shlex.join(words)
    return str(command or "")


def calls(path: Path, skipped: Skipped) -> Iterator[ToolCall]:
    """The shell commands a rollout records, as each finished."""
    rollout = _Rollout(skipped)
    for rec in records(path, skipped):
        payload = rec.get("payload")
        if not isinstance(payload, dict):
            continue
        found = (rollout.item(payload, rec) if rec.get("type") == "response_item" else
                 rollout.event(payload, rec) if rec.get("type") == "event_msg" else None)
        if found is not None:
            yield found


class _Rollout:
    """The calls of one rollout asked and not yet ended, and those the user stopped."""

    def __init__(self, skipped: Skipped):
        self.skipped = skipped
        self.asked: dict[str, str] = {}  # call id -> command, until it ends
        self.aborted: set[str] = set()  # calls whose output says the user stopped them
        self.aborted_turns: set[str] = set()
        self.patches: set[str] = set()  # apply_patch calls not yet answered

    def item(self, payload: dict[str, Any], rec: dict[str, Any]) -> ToolCall | None:
        kind, call_id = payload.get("type"), str(payload.get("call_id") or "")
        if kind == "function_call" and payload.get("name") in SHELL_TOOLS:
            self.asked[call_id] = command_of(str(payload["name"]), payload.get("arguments"))
        elif kind == "local_shell_call":
            action = payload.get("action")
            command = action.get("command") if isinstance(action, dict) else None
            self.asked[call_id] = command_of("local_shell", {"command": command})
        elif kind == "custom_tool_call" and payload.get("name") == "apply_patch":
            self.patches.add(call_id)
        elif kind == "custom_tool_call_output" and call_id in self.patches:
            self.patches.discard(call_id)
            if not codex_output(payload.get("output")).startswith("Exit code: 0"):
                self.skipped[REFUSED] += 1  # a patch that did not apply
        elif kind == "function_call_output" and call_id in self.asked:
            if codex_output(payload.get("output")).rstrip().endswith(ABORTED):
                self.aborted.add(call_id)
                return None
            return _ended(self.asked, call_id, payload, rec)
        return None

    def event(self, payload: dict[str, Any], rec: dict[str, Any]) -> ToolCall | None:
        kind = payload.get("type")
        if kind == "turn_aborted":
            self.aborted_turns.add(str(payload.get("turn_id") or ""))
            return None
        item = payload.get("item") if kind == "item_completed" else payload
        if kind not in ("item_completed", "exec_command_end") or not isinstance(item, dict) or (
                kind == "item_completed" and item.get("type") != "CommandExecution"):
            return None
        call_id = str((item.get("id") if kind == "item_completed" else item.get("call_id")) or "")
        if call_id in self.aborted or payload.get("turn_id") in self.aborted_turns:
            if self.asked.pop(call_id, None) is not None or call_id in self.aborted:
                self.skipped[INTERRUPTED] += 1
            self.aborted.discard(call_id)
            return None
        return _ended(self.asked, call_id, payload, rec)


def _ended(asked: dict[str, str], call_id: str, payload: dict[str, Any],
           rec: dict[str, Any]) -> ToolCall | None:
    """The call ``payload`` ends, once: None while its exit code is unknown."""
    code, output = codex_exit_code(payload)
    if code is None or call_id not in asked:
        return None
    action = asked.pop(call_id)
    return ToolCall(timestamp(rec.get("timestamp")), "Bash", action, failed=code != 0,
                    exit_code=code, error_text=output if code else "", id=call_id)


def default_paths() -> list[Path]:
    where = codex_home() / "sessions"
    if not where.is_dir():
        raise TranscriptError(f"no Codex sessions in {where}; give the rollouts' paths "
                              "(CODEX_HOME moves them)")
    return [where]
