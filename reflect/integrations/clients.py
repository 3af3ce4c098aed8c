"""The clients whose hooks reflect installs and answers: a registry, defined once, for the
integrations (where to write) and the command line (what to offer, its help, and which
module answers a client's events). The command line reads it without importing an
integration: a client's module is imported when that client is asked for, and only it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path

from reflect.base.named import NamedTuple

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import Any, Protocol

    from reflect.integrations.hooks import Event
else:
    Protocol = object  # at run time, ``Client`` only says what a client's module gives

__all__ = ["CLIENTS", "DEFAULT_SCOPE", "Client", "Registered", "client", "scopes",
           "user_dir"]

DEFAULT_SCOPE = "project"


class Client(Protocol):
    """What a client's integration module gives: its hooks, how it reads one of its
    events, how its hooks are put into (or taken out of) a scope's settings."""

    @property
    def HOOKS(self) -> Mapping[str, str | None]:
        """event -> tool matcher (None: every tool, or an event without tools)."""

    def parse(self, raw: dict[str, Any]) -> Event | None: ...
    def install(self, scope: str, uninstall: bool = False) -> str: ...


class Registered(NamedTuple):
    """A named tuple, not a dataclass: every hook reads this registry, and dataclasses
    (with inspect) cost a PreToolUse hook, which needs neither, ~5 ms to import."""

    module: str  # the module that answers the client's events (a ``Client``)
    scopes: dict[str, tuple[Path, str]]  # scope -> (settings file, the rest of its help line)


CLIENTS: dict[str, Registered] = {
    "claude-code": Registered("reflect.integrations.claude_code", {
        "project": (Path(".claude/settings.json"), ", committed with the project (default)"),
        "local": (Path(".claude/settings.local.json"), ", this clone only"),
        "user": (Path("~/.claude/settings.json"), ", every project"),
    }),
    "codex": Registered("reflect.integrations.codex", {
        "project": (Path(".codex/hooks.json"), " (loaded for trusted projects; default)"),
        "user": (Path("~/.codex/hooks.json"), ", every project"),
    }),
}


def client(name: str) -> Client:
    """The integration of the client ``name`` (a key of ``CLIENTS``), imported now."""
    return import_module(CLIENTS[name].module)


# client -> the variable that moves its directory of user files, as the client reads it
USER_DIRS = {"claude-code": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}


def scopes(client: str, env: Mapping[str, str] = os.environ) -> dict[str, Path]:
    """scope -> the client's settings file for it; the user's in ``user_dir``."""
    found = {scope: path for scope, (path, _) in CLIENTS[client].scopes.items()}
    found["user"] = user_dir(client, env) / found["user"].name
    return found


def user_dir(client: str, env: Mapping[str, str] = os.environ) -> Path:
    """The client's directory of user files: where its own variable (``USER_DIRS``)
    moves it, else its default in the home directory."""
    if moved := env.get(USER_DIRS[client]):
        return Path(moved)
    default = CLIENTS[client].scopes["user"][0].parent.relative_to("~")
    return Path(env.get("HOME") or Path.home()) / default
