"""Whether a module Python could not import is the run's or the repository's own: a file
or directory of that name under the working directory, or a path the run's steps named
(``mkdir reproduce_app``, ``cat <<'EOF' > reproduce_app/models.py``) or the code they wrote
defines (a Django script's ``app_label = 'reproduce_app'`` for an app it never made). No
package provides such a module: it is not made yet or not on the import path, and
``pip install`` is the wrong fix.

Capture asks only for a missing module, with a stat or two and the run's earlier steps
from the store: no subprocess, nothing slow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from reflect.base import lazy
from reflect.capture import commands

_MISSING = lazy.compile(r"No module named '?([A-Za-z_]\w*)")


def missing_module(message: str) -> str:
    """The top-level package of the module ``message`` says is missing, or ""."""
    m = _MISSING.search(message or "")
    return m[1] if m else ""


def own_module(name: str, cwd: Path, actions: Iterable[str]) -> bool:
    """``name`` (a top-level module) is a file or directory under ``cwd``, or one of
    ``actions`` names it as the run's own (``named``)."""
    if not name:
        return False
    try:
        if (cwd / name).is_dir() or (cwd / f"{name}.py").is_file():
            return True
    except OSError:  # an unreadable working directory says nothing either way
        pass
    return named(name, actions)


def named(name: str, actions: Iterable[str]) -> bool:
    """One of ``actions`` names ``name`` as a path, or the code it wrote gives it as its own
    name (a heredoc's ``app_label = 'reproduce_app'``): the run made it, means to, or works
    beside it. A string alone (``INSTALLED_APPS = ['rest_framework']``) may name a package:
    it does not count."""
    if not name:
        return False
    n = re.escape(name)
    as_path = re.compile(rf"(?<![\w./-])(?:\./)?{n}(?:/|\.py\b)"
                         rf"|\bmkdir\b[^\n;&|]*(?<![\w./-]){n}(?![\w.-])")
    defined = re.compile(rf"""\b(?:app_label|label|name)\s*=\s*(['"]){n}\1""")
    return any(as_path.search(action) or defined.search(_written(action))
               for action in actions)


def _written(action: str) -> str:
    """The code an action wrote: its heredocs' bodies."""
    kept = set(commands.without_heredocs(action).splitlines())
    return "\n".join(line for line in action.splitlines() if line not in kept)
