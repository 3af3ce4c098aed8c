"""Where the store is: ``REFLECT_HOME``, else ``.reflect`` at the repository root, else in
the working directory. A module of its own, so that a hook answered by the resident
helper finds the helper's socket without importing the settings."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def repo_root(start: Path) -> Path | None:
    for path in (start, *start.parents):
        if (path / ".git").exists():
            return path
    return None


def default_home(env: Mapping[str, str], cwd: Path | None = None) -> Path:
    """``REFLECT_HOME``, else ``.reflect`` at the repository root, else in the working directory."""
    if env.get("REFLECT_HOME"):
        return Path(env["REFLECT_HOME"]).expanduser()
    cwd = cwd or Path.cwd()
    return (repo_root(cwd) or cwd) / ".reflect"
