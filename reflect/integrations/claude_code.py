"""Claude Code: ``reflect hook claude-code`` answers its hook events; ``reflect install
claude-code`` puts that command into a settings file or a plugin.

Every event carries ``session_id`` (the run), ``cwd`` and ``hook_event_name``. A failed
tool call arrives as ``PostToolUseFailure`` with ``error`` (for Bash: ``Exit code N``,
then the output) and ``is_interrupt``; a successful one as ``PostToolUse``.
"""

from __future__ import annotations

from pathlib import Path

from reflect.capture.tool_calls import CHANGING_TOOLS, failure_text
from reflect.integrations.clients import scopes
from reflect.integrations.hooks import Event, base_event

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import Any

CLIENT = "claude-code"
# event -> tool matcher (None: every tool, or an event without tools)
HOOKS = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Bash",
    "PostToolUse": "|".join(CHANGING_TOOLS[CLIENT]),  # what can change an outcome
    "PostToolUseFailure": None,
}


def parse(raw: dict[str, Any]) -> Event:
    event = base_event(raw, HOOKS)
    if event.name == "PostToolUse":
        return event._replace(failed=False)
    if event.name == "PostToolUseFailure" and not said_yes(raw.get("is_interrupt")):
        code, text = failure_text(str(raw.get("error") or ""))
        return event._replace(failed=True, exit_code=code, error_text=text)
    return event


def said_yes(flag: object) -> bool:
    """Whether a flag says yes: ``true``, or a word or number for it; ``"no"`` is no, and a
    failure is never dropped on a doubtful one."""
    if isinstance(flag, str):
        return flag.strip().lower() in ("true", "yes", "1")
    return flag is True or (type(flag) is int and flag == 1)


def install(scope: str, uninstall: bool = False, plugin: str | None = None) -> str:
    """Merge the hooks into the scope's settings file, or write a plugin into ``plugin``."""
    from reflect.integrations.settings import located, merge  # not for a hook

    if plugin is not None:
        return write_plugin(Path(plugin), uninstall)
    # the project's file is committed: a command on PATH
    return merge(located(scopes(CLIENT)[scope]), HOOKS, CLIENT, uninstall,
                 portable=scope == "project")


def write_plugin(root: Path, uninstall: bool) -> str:
    from reflect.integrations.settings import hook_table, path_note, write_json

    manifest, hooks = root / ".claude-plugin" / "plugin.json", root / "hooks" / "hooks.json"
    if uninstall:
        for path in (manifest, hooks):
            path.unlink(missing_ok=True)
        return f"removed the reflect plugin from {root}"
    from reflect import __version__

    write_json(manifest, {"name": "reflect", "version": __version__,
                          "description": "Failure memory: what failed in this project, "
                                         "and what fixed it, beside every tool result."})
    write_json(hooks, {"hooks": hook_table(HOOKS, CLIENT, portable=True)})
    return (f"wrote the reflect plugin to {root} ({manifest.relative_to(root)}, "
            f"{hooks.relative_to(root)}); add it with `claude --plugin-dir {root}`"
            f"{path_note(portable=True)}")
