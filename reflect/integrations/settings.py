"""Hook settings files (Claude Code's ``settings.json``, Codex's ``hooks.json``): the same
``{"hooks": {event: [{"matcher": M, "hooks": [{"type": "command", ...}]}]}}`` shape.

Installing merges reflect's entries in and keeps every other key and hook, in their
order; installing again changes nothing; uninstalling removes only reflect's entries. A
file that is about to change is copied to ``<name>.bak`` first. A file a team commits
(a project's settings, a plugin) gets the command ``reflect hook …`` found on PATH; a
user's own file gets the path of this install's command, which works whatever PATH the
client has.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from reflect.base.config import DISTRIBUTION, repo_root
from reflect.index.atomic import write_atomically

TIMEOUT = 10  # seconds the client waits; the hook answers within its own, shorter budget


def located(path: Path) -> Path:
    """A user file (``~/…``) where it is; a project file at the repository's root."""
    if str(path).startswith("~"):
        return path.expanduser()
    return (repo_root(Path.cwd()) or Path.cwd()) / path


def command(client: str, portable: bool) -> str:
    """The hook command: on PATH where it must work on another machine, else by its path:
    the `reflect` script this install made (it names the interpreter it was installed
    with), else this interpreter's ``-m reflect``, which also loads runpy (~6 ms of every
    hook)."""
    if portable:
        return f"reflect hook {client}"
    script = installed_script()
    if script is not None:
        return f"{shlex.quote(str(script))} hook {client}"
    return f"{shlex.quote(sys.executable)} -m reflect hook {client}"


def installed_script() -> Path | None:
    """The `reflect` script the distribution of this package installed, from its record."""
    from importlib import metadata

    try:
        files = metadata.distribution(DISTRIBUTION).files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "reflect" and file.parent.name == "bin":
            path = Path(file.locate()).resolve()
            if os.access(path, os.X_OK):
                return path
    return None


def path_note(portable: bool) -> str:
    """What to do when the portable command would not be found here."""
    if not portable or shutil.which("reflect"):
        return ""
    return ("; note: `reflect` is not on this PATH, and the client runs `reflect hook` from "
            "its own: install reflect where the client's PATH finds it (`pipx install`, or "
            "the project's activated environment)")


def is_ours(handler: object, client: str) -> bool:
    return isinstance(handler, dict) and str(handler.get("command", "")).endswith(
        f"reflect hook {client}")


def hook_table(hooks: dict[str, str | None], client: str, portable: bool) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for event, matcher in hooks.items():
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": command(client, portable),
                           "timeout": TIMEOUT}]
        table[event] = [group]
    return table


def merge(path: Path, hooks: dict[str, str | None], client: str, uninstall: bool,
          portable: bool) -> str:
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
    if uninstall:
        _drop_ours(table, client)
    else:
        put = {event: _put_ours(table, event, groups[0], client)
               for event, groups in hook_table(hooks, client, portable).items()}
        _drop_ours(table, client, keep=[group for group, _ in put.values()])
        changed = [event for event, (_, same) in put.items() if not same]
    if table:
        data["hooks"] = table
    else:
        data.pop("hooks", None)
    after = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    note = "" if uninstall else path_note(portable)
    if before and json.loads(before) == data:
        return f"{path}: already {'without' if uninstall else 'with'} reflect's hooks{note}"
    if before:
        shutil.copyfile(path, path.with_name(path.name + ".bak"))
    write_text(path, after)
    backup = f" (the previous version is in {path.name}.bak)" if before else ""
    if uninstall:
        return f"{path}: removed reflect's hooks{backup}"
    return (f"{path}: added or updated reflect's hooks for {', '.join(changed)}"
            f"{backup}{note}")


def _put_ours(table: dict[str, Any], event: str, group: dict[str, Any],
              client: str) -> tuple[dict[str, Any], bool]:
    """Put reflect's handler of ``event`` where it is already, in a group with the same
    matcher, or else in a new group at the end: that group, and whether the handler was
    there unchanged."""
    groups = table.setdefault(event, [])
    if not isinstance(groups, list):
        raise ValueError(f"the hooks of {event} are not a list; fix or move the file, then "
                         "run this again")
    for existing in groups:
        handlers = existing.get("hooks") if isinstance(existing, dict) else None
        if not isinstance(handlers, list) or existing.get("matcher") != group.get("matcher"):
            continue
        for i, handler in enumerate(handlers):
            if is_ours(handler, client):
                same = handler == group["hooks"][0]
                handlers[i] = {**handler, **group["hooks"][0]}
                handlers[i + 1:] = [h for h in handlers[i + 1:] if not is_ours(h, client)]
                return existing, same
    groups.append(group)
    return group, False


def _drop_ours(table: dict[str, Any], client: str,
               keep: list[dict[str, Any]] | None = None) -> None:
    """Take reflect's handlers out of every event of a hooks table, in place, except those
    of the groups in ``keep``; a group or an event that held only reflect's goes with
    them."""
    for event in [e for e in table if isinstance(table[e], list)]:
        groups, kept = table[event], []
        for group in groups:
            if any(group is k for k in keep or ()):
                kept.append(group)
                continue
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


def write_json(path: Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Never half-written (``reflect.index.atomic``), its folder made if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)
