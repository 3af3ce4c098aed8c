"""Where the store is: ``REFLECT_HOME``, else ``.reflect`` at the repository root, else in
the working directory. A module of its own, standard library only and without pathlib, so
that the thin client (``reflect.cli.client``) finds the helper's socket at the cost of a
few ``stat`` calls."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing's flag: the thin client loads no typing, nor pathlib
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


def root_of(start: str) -> str | None:
    """The nearest directory from ``start`` up that holds ``.git``, or None."""
    path = start
    while not os.path.exists(os.path.join(path, ".git")):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return path


def repo_root(start: Path) -> Path | None:
    root = root_of(str(start))
    return None if root is None else type(start)(root)


def home_dir(env: Mapping[str, str], cwd: str) -> str:
    """``REFLECT_HOME``, else ``.reflect`` at the repository root above ``cwd``, else in
    ``cwd``."""
    if env.get("REFLECT_HOME"):
        return os.path.expanduser(env["REFLECT_HOME"])
    return os.path.join(root_of(cwd) or cwd, ".reflect")


def default_home(env: Mapping[str, str], cwd: Path | None = None) -> Path:
    """``REFLECT_HOME``, else ``.reflect`` at the repository root, else in the working directory."""
    from pathlib import Path

    return Path(home_dir(env, str(cwd or Path.cwd())))
