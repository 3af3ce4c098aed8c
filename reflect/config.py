"""Settings read from the environment (the table in the README), and the store's location."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

log = logging.getLogger("reflect")

DEFAULT_RUN = "default"
PATTERNS_FILE = "scrub-patterns"  # in the store directory: one extra regex a line


def warn(message: str) -> None:
    """One line on stderr; the CLI prefixes it with ``reflect: warning:``."""
    log.warning(message)


def enabled(env=os.environ) -> bool:
    """``REFLECT_FAILURE_MEMORY=0`` turns capture and recall into silent no-ops."""
    return env.get("REFLECT_FAILURE_MEMORY", "1").strip().lower() not in {"0", "false", "off", "no"}


def offline(env=os.environ) -> bool:
    return env.get("REFLECT_OFFLINE", "").strip().lower() in {"1", "true", "on", "yes"}


def repo_root(start: Path) -> Path | None:
    for path in (start, *start.parents):
        if (path / ".git").exists():
            return path
    return None


def default_home(env=os.environ, cwd: Path | None = None) -> Path:
    """``REFLECT_HOME``, else ``.reflect`` at the repository root, else in the working directory."""
    if env.get("REFLECT_HOME"):
        return Path(env["REFLECT_HOME"]).expanduser()
    cwd = cwd or Path.cwd()
    return (repo_root(cwd) or cwd) / ".reflect"


def default_run(env=os.environ) -> str:
    return env.get("REFLECT_RUN") or DEFAULT_RUN


def read_patterns(home: Path) -> list[str]:
    """Extra scrub patterns from the store directory; a bad line is skipped with a warning."""
    path = home / PATTERNS_FILE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    patterns = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            re.compile(line)
        except re.error as e:
            warn(f"{path}:{number}: skipped invalid pattern ({e}); fix or remove the line")
            continue
        patterns.append(line)
    return patterns
