"""The scope of the lessons learnt in a working directory: the repository's (named by
its remote's ``owner/name``, else its path), "global" outside one.

Derived here, before the store, from the git config read as a file; the store only
keeps the answer (``ScopeCache``), so a capture reads the config once per repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from reflect.base.config import repo_root
from reflect.base.digest import sha256
from reflect.capture.gitconfig import project_scope, repo_from_git_config

__all__ = ["UNCACHED", "ScopeCache", "elsewhere", "scope_of"]

GLOBAL = "global"


class ScopeCache(Protocol):
    def cached_scope(self, key: str) -> str | None: ...
    def cache_scope(self, key: str, scope: str) -> None: ...


class _Uncached:
    """For a store that cannot be reached: the scope derived afresh, remembered nowhere."""

    def cached_scope(self, key: str) -> str | None:
        return None

    def cache_scope(self, key: str, scope: str) -> None:
        pass


UNCACHED = _Uncached()


def scope_of(cwd: Path, cache: ScopeCache) -> str:
    root = repo_root(cwd)
    if root is None:
        return GLOBAL

    key = "scope:" + sha256(str(root).encode()).hexdigest()[:16]
    cached = cache.cached_scope(key)
    if cached is not None:
        return cached
    repo = repo_from_git_config(root)
    scope = project_scope("/".join(repo) if repo else str(root))
    cache.cache_scope(key, scope)
    return scope


def elsewhere(cwd: Path, others: int) -> str:
    """What an empty recall in ``cwd`` says when ``others`` lessons of other repositories
    are in the store: where it looked, and how to recall theirs; "" when there are none."""
    if not others:
        return ""
    root = repo_root(cwd)
    here = (f"the repository {root}" if root is not None
            else f"{cwd}, which is in no git repository (the global scope)")
    return (f"looked in the lessons of {here}: lessons are kept per repository, the working"
            f" directory's, and {others} lesson(s) of other repositories are in this store;"
            " recall from inside one of them (an MCP server: start it there)")
