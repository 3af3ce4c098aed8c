"""Hook settings files (Claude Code's ``settings.json``, Codex's ``hooks.json``): the same
``{"hooks": {event: [{"matcher": M, "hooks": [{"type": "command", ...}]}]}}`` shape.

Installing merges reflect's entries in and keeps every other key and hook; installing
again changes nothing; uninstalling removes only reflect's entries. A file that is
about to change is copied to ``<name>.bak`` first.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from reflect.config import repo_root

TIMEOUT = 10  # seconds the client waits; the hook answers within its own, shorter budget


def located(path: Path) -> Path:
    """A user file (``~/…``) where it is; a project file at the repository's root."""
    if str(path).startswith("~"):
        return path.expanduser()
    return (repo_root(Path.cwd()) or Path.cwd()) / path


def command(client: str) -> str:
    """The hook command, with this interpreter: works whatever PATH the client has."""
    return f"{shlex.quote(sys.executable)} -m reflect hook {client}"


def is_ours(handler, client: str) -> bool:
    return isinstance(handler, dict) and str(handler.get("command", "")).endswith(
        f"reflect hook {client}")


def hook_table(hooks: dict[str, str | None], client: str) -> dict:
    table = {}
    for event, matcher in hooks.items():
        group: dict = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": command(client), "timeout": TIMEOUT}]
        table[event] = [group]
    return table


def merge(path: Path, hooks: dict[str, str | None], client: str, uninstall: bool) -> str:
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else ""
        data = json.loads(before) if before.strip() else {}
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not readable JSON ({e}); fix or move it, then run "
                         "this again") from e
    if not isinstance(data, dict) or not isinstance(data.get("hooks", {}), dict):
        raise ValueError(f"{path} has no JSON object of hooks; fix or move it, then run "
                         "this again")
    if uninstall and not before:
        return f"{path}: no such file, nothing to remove"
    table = data.get("hooks", {})
    _drop_ours(table, client)
    if not uninstall:
        for event, groups in hook_table(hooks, client).items():
            table.setdefault(event, []).extend(groups)
    if table:
        data["hooks"] = table
    else:
        data.pop("hooks", None)
    after = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if before and json.loads(before) == data:
        return f"{path}: already {'without' if uninstall else 'with'} reflect's hooks"
    if before:
        shutil.copyfile(path, path.with_name(path.name + ".bak"))
    write_text(path, after)
    backup = f" (the previous version is in {path.name}.bak)" if before else ""
    return (f"{path}: {'removed' if uninstall else 'added'} reflect's hooks for "
            f"{', '.join(hooks)}{backup}")


def _drop_ours(table: dict, client: str) -> None:
    """Take reflect's handlers out of every event of a hooks table, in place; a group or
    an event that held only reflect's goes with them."""
    for event in [e for e in table if isinstance(table[e], list)]:
        groups, kept = table[event], []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(is_ours(h, client) for h in handlers):
                group = {**group, "hooks": [h for h in handlers if not is_ours(h, client)]}
                if not group["hooks"]:
                    continue
            kept.append(group)
        if kept or not groups:
            table[event] = kept
        else:
            del table[event]


def write_json(path: Path, data: dict) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Written to a temporary file and renamed: never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
