"""The clients whose hooks reflect installs and answers, and the scopes each one's
settings live in: defined once, for the integrations (where to write) and the command
line (what to offer, and its help), which reads it without importing an integration."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CLIENTS", "DEFAULT_SCOPE", "scopes"]

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


def scopes(client: str) -> dict[str, Path]:
    """scope -> the client's settings file for it."""
    return {scope: path for scope, (path, _) in CLIENTS[client].items()}
