"""Whether a module Python could not import is the run's or the repository's own: a file
or directory of that name under the working directory, or a path the run's steps named
(``mkdir reproduce_app``, ``cat <<'EOF' > reproduce_app/models.py``). No package provides
such a module: it is missing from the import path, and ``pip install`` is the wrong fix.

Capture asks only for a missing module, with a stat or two and the run's earlier steps
from the store: no subprocess, nothing slow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from reflect import lazy

_MISSING = lazy.compile(r"No module named '?([A-Za-z_]\w*)")


def missing_module(message: str) -> str:
    """The top-level package of the module ``message`` says is missing, or ""."""
    m = _MISSING.search(message or "")
    return m[1] if m else ""


def own_module(name: str, cwd: Path, actions: Iterable[str]) -> bool:
    """``name`` (a top-level module) is a file or directory under ``cwd``, or a path in
    one of ``actions``: the run made it, or works beside it."""
    if not name:
        return False
    try:
        if (cwd / name).is_dir() or (cwd / f"{name}.py").is_file():
            return True
    except OSError:  # an unreadable working directory says nothing either way
        pass
    as_path = re.compile(rf"(?<![\w./-])(?:\./)?{re.escape(name)}(?:/|\.py\b)"
                         rf"|\bmkdir\b[^\n;&|]*(?<![\w./-]){re.escape(name)}(?![\w.-])")
    return any(as_path.search(action) for action in actions)
