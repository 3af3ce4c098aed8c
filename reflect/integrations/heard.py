"""Whether a client's installed hooks have run: `reflect status` and `reflect doctor` say so.

A client runs no hook, and says nothing, when it does not take them (Codex reads a project's
hooks only in a trusted project, and runs one only once a person has reviewed it; a hook
command not on the client's PATH fails in its log alone), and memory then records nothing.
A hook records the first time one of its client's runs for a store (``hooks.HEARD_FILE``);
the settings files that install reflect's hooks are read here; and the sessions the client
kept of this project since the install tell hooks that have not run yet from hooks that
did not run when the client did.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from reflect.base.config import repo_root
from reflect.integrations.clients import CLIENTS, scopes
from reflect.integrations.hooks import HEARD_FILE, STATE_DIR, read_json
from reflect.integrations.settings import is_ours, located

NAMES = {"claude-code": "Claude Code", "codex": "Codex"}


class Heard(NamedTuple):
    client: str
    settings: str  # the file that installs the hooks, as a person finds it
    ran: float | None  # when one of the client's hooks first ran for this store
    sessions: int  # the client's sessions in this project since the install, none heard
    ok: bool  # False: the client ran here since the install, and no hook of it did
    text: str

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


def heard(home: Path, env: Mapping[str, str] = os.environ) -> list[Heard]:
    """Each settings file that installs reflect's hooks for a client, and whether they ran."""
    first = read_json(home / STATE_DIR / HEARD_FILE)
    root = repo_root(Path.cwd()) or Path.cwd()
    found = []
    for client in CLIENTS:
        for scope, given in scopes(client, env).items():
            path = located(given)
            if not installs(path, client):
                continue
            where = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
            ran = first.get(client)
            if isinstance(ran, int | float):
                when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ran))
                found.append(Heard(client, where, ran, 0, True,
                                   f"{client} ({where}): ran, the first time at {when}"))
                continue
            since = sessions_since(client, root, path.stat().st_mtime)
            found.append(never_ran(client, where, since, root if scope == "project" else None,
                                   env))
    return found


def never_ran(client: str, where: str, sessions: int, project: Path | None,
              env: Mapping[str, str]) -> Heard:
    name = NAMES[client]
    said = f"{client} ({where}): installed, never run"
    if not sessions:
        return Heard(client, where, None, 0, True,
                     f"{said} yet: {name} runs them at its next session here")
    s = "" if sessions == 1 else "s"
    return Heard(client, where, None, sessions, False,
                 f"{said}, and {name} ran {sessions} session{s} here since: "
                 f"{advice(client, project, env)}")


def advice(client: str, project: Path | None, env: Mapping[str, str]) -> str:
    """What makes the client run them."""
    if client == "codex":
        from reflect.integrations.codex import trust_needed

        return trust_needed(project, env)
    return ("check that Claude Code lists them in its /hooks view, and that the command runs "
            "where Claude Code runs it: a project's settings name `reflect hook claude-code`, "
            "found on the PATH Claude Code has (`claude --debug` shows each hook it runs)")


def installs(path: Path, client: str) -> bool:
    """Whether the settings file at ``path`` holds a hook of reflect's for ``client``."""
    table = read_json(path).get("hooks")
    if not isinstance(table, dict):
        return False
    groups = [g for gs in table.values() if isinstance(gs, list) for g in gs
              if isinstance(g, dict) and isinstance(g.get("hooks"), list)]
    return any(is_ours(handler, client) for group in groups for handler in group["hooks"])


def sessions_since(client: str, project: Path, since: float) -> int:
    """The sessions the client kept of ``project`` begun or written after ``since``."""
    from reflect.capture.transcripts import Skipped, claude_code, codex

    if client == "claude-code":
        where = claude_code.project_dir(project)
        return sum(1 for p in _files(where, "*.jsonl", recursive=False)
                   if _mtime(p) > since)
    newer = [p for p in _files(codex.codex_home() / "sessions", "rollout-*.jsonl")
             if _mtime(p) > since]
    return len(codex.sessions(newer, Skipped(), within=project)) if newer else 0


def _files(where: Path, pattern: str, recursive: bool = True) -> list[Path]:
    try:
        return list(where.rglob(pattern) if recursive else where.glob(pattern))
    except OSError:
        return []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
