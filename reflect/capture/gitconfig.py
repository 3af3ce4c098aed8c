"""The repository's ``owner/name``, read from its git config: the scrubber redacts the
pair, and the store scopes lessons to the project by it.

The config is read as a file: this runs on every capture, where starting ``git`` would
cost more than the rest of the capture.
"""

from __future__ import annotations

import re
from pathlib import Path

from reflect.base import lazy
from reflect.base.digest import sha256

__all__ = ["repo_from_git_config"]


def repo_from_git_config(start: Path) -> tuple[str, str] | None:
    """(owner, name) of the repository holding ``start``, from its origin remote."""
    start = Path(start).resolve()
    for directory in (start, *start.parents):
        dotgit = directory / ".git"
        try:
            if dotgit.is_dir():
                return _repo_from_config(dotgit / "config")
            if dotgit.is_file():
                return _repo_from_config(_gitdir(dotgit) / "config")
        except OSError:
            return None
    return None


def _gitdir(dotgit: Path) -> Path:
    """The directory a ``.git`` file points to (worktrees, submodules)."""
    text = dotgit.read_text(encoding="utf-8", errors="replace").strip()
    gitdir = dotgit.parent / text.removeprefix("gitdir:").strip()
    commondir = gitdir / "commondir"  # a worktree shares its main repository's config
    if commondir.is_file():
        gitdir = gitdir / commondir.read_text(encoding="utf-8", errors="replace").strip()
    return gitdir


_SECTION = lazy.compile(r'\s*\[\s*remote\s+"([^"]*)"\s*\]|\s*\[')
_URL = lazy.compile(r"\s*url\s*=\s*(.*?)\s*$", re.IGNORECASE)


def _repo_from_config(config: Path) -> tuple[str, str] | None:
    urls: dict[str, str] = {}
    remote = None
    for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
        if section := _SECTION.match(line):
            remote = section[1]  # None for a section that is not a remote
        elif remote is not None and (found := _URL.match(line)):
            urls.setdefault(remote, found[1].strip('"'))
    url = urls.get("origin") or next(iter(urls.values()), None)
    return _owner_name(url) if url else None


def _owner_name(url: str) -> tuple[str, str] | None:
    """https://host/o/n.git, ssh://git@host:22/o/n.git, git@host:o/n.git -> (o, n)."""
    if "://" in url:
        scheme, _, rest = url.partition("://")
        if scheme == "file":
            return None
        path = rest.partition("/")[2]
    elif ":" in url.split("/", 1)[0]:  # scp-like: a colon before the first slash
        path = url.partition(":")[2]
    else:
        return None  # a local path names no owner
    owner, _, name = path.strip("/").removesuffix(".git").rpartition("/")
    return (owner, name) if owner and name else None


def project_scope(name: str) -> str:
    """The scope of a project's lessons, named by its repository (``owner/name``) or
    path: a hash, so a shared store does not list the projects it serves."""
    return "project:" + sha256(name.encode()).hexdigest()[:12]
