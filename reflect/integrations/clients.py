"""The clients whose hooks reflect installs and answers, and the scopes each one's
settings live in: defined once, for the integrations (where to write) and the command
line (what to offer, and its help), which reads it without importing an integration."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CLIENTS", "DEFAULT_SCOPE", "scopes", "user_dir"]

DEFAULT_SCOPE = "project"
# client -> scope -> (settings file, the rest of its help line)
CLIENTS: dict[str, dict[str, tuple[Path, str]]] = {
    "claude-code": {
        "project": (Path(".claude/settings.json"), ", committed with the project (default)"),
        "local": (Path(".claude/settings.local.json"), ", this clone only"),
        "user": (Path("~/.claude/settings.json"), ", every project"),
    },
    "codex": {
        "project": (Path(".codex/hooks.json"), " (loaded for trusted projects; default)"),
        "user": (Path("~/.codex/hooks.json"), ", every project"),
    },
}


# client -> the variable that moves its directory of user files, as the client reads it
USER_DIRS = {"claude-code": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}


def scopes(client: str, env: Mapping[str, str] = os.environ) -> dict[str, Path]:
    """scope -> the client's settings file for it; the user's in ``user_dir``."""
    found = {scope: path for scope, (path, _) in CLIENTS[client].items()}
    found["user"] = user_dir(client, env) / found["user"].name
    return found


def user_dir(client: str, env: Mapping[str, str] = os.environ) -> Path:
    """The client's directory of user files: where its own variable (``USER_DIRS``)
    moves it, else its default in the home directory."""
    if moved := env.get(USER_DIRS[client]):
        return Path(moved)
    default = CLIENTS[client]["user"][0].parent.relative_to("~")
    return Path(env.get("HOME") or Path.home()) / default
