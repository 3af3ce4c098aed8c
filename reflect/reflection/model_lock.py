"""One embedding model loaded by a user's workers at a time, whatever the number of stores.

A worker that is about to load a model (torch and its weights: ~600 MB and seconds of
CPU) first takes a lock file in the user's runtime directory, and holds it for as long
as the model stays loaded; a worker that finds it taken leaves its embedding jobs queued
and looks again a little later. The lock is an ``flock``: the kernel lets go of it when
its holder exits, however it exits.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from reflect.base import config

LOCK_NAME = "embedding-model.lock"


def lock_path(env: Mapping[str, str] = os.environ) -> Path:
    """The user's lock: in ``$XDG_RUNTIME_DIR/reflect`` (private to the user, emptied at
    logout), else ``~/.cache/reflect`` (``$XDG_CACHE_HOME``)."""
    if env.get("XDG_RUNTIME_DIR"):
        base = Path(env["XDG_RUNTIME_DIR"])
    elif env.get("XDG_CACHE_HOME"):
        base = Path(env["XDG_CACHE_HOME"])
    else:
        base = Path(env.get("HOME") or Path.home()) / ".cache"
    return base / "reflect" / LOCK_NAME


class ModelLock:
    """The lock at ``path``; ``acquire`` never waits."""

    def __init__(self, path: Path):
        self.path = path
        self._file: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        return self._file is not None

    def acquire(self) -> bool:
        """Take the lock: True when taken (or already held here), False when another
        process holds it. A lock that cannot be kept private to this user (a folder of
        another user, or one others may write) is not used: the model loads without it,
        said once."""
        if self._file is not None:
            return True
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            folder = self.path.parent.stat()
            if folder.st_uid != os.getuid() or folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise PermissionError(f"{self.path.parent} is not private to this user")
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            config.warn(f"embedding model lock not used ({e}); a worker of each store may "
                        f"load its own model (make {self.path.parent} this user's, mode 0700)")
            return True
        lock = os.fdopen(fd, "rb")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            return False
        self._file = lock
        return True

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing the file lets go of the flock
            self._file = None
