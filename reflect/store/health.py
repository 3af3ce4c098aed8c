"""What ``reflect doctor`` asks of a store: its health, said so a person can act on it,
and the repair of what the backend can repair. Each backend answers for itself
(``health`` and ``repair`` on ``SQLiteStore`` and ``PostgresStore``); the doctor adds
what waits on this machine and the size bound."""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from reflect.store._sqlite_health import LOW_SPACE, DiskFull, free_bytes


@dataclass(frozen=True)
class Finding:
    what: str  # "store", "disk", "kept aside", "size"
    ok: bool
    text: str  # what was found, and when not ok what to do

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Health:
    """A store's findings (the store, then this machine's disk) and, when it can be read,
    its size and how many failures it holds."""

    findings: tuple[Finding, ...]
    writable: bool  # the store takes captures (and so what was kept aside)
    bytes: int = 0
    failures: int | None = None  # None: none yet, or not readable


class CannotRepair(Exception):
    pass


def unusable_home(home: Path, error: OSError) -> str:
    """What stops the store directory ``home`` from being made or written, and the fix."""
    blocker = next((p for p in (home, *home.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        return (f"the store directory {home} cannot be made: {blocker} is a file, not a"
                " directory; point REFLECT_HOME at a directory (made if missing), or move"
                " the file")
    return (f"the store directory {home} cannot be made or written here"
            f" ({error.strerror or error}): point REFLECT_HOME at a directory you can write,"
            " or run from one")


def foreign_home(home: Path) -> str:
    """Why the store directory ``home`` is not this user's alone, with the fix; "" when it
    is, or is not there yet (it is made private). Whoever else owns it or can write in it
    could plant a store, lessons or kept captures in it, or read what it keeps."""
    try:
        info = os.stat(home)
    except OSError:
        return ""
    mode, uid = stat.S_IMODE(info.st_mode), os.getuid()
    if info.st_uid != uid:
        return (f"the store directory {home} is owned by uid {info.st_uid}, not this user"
                f" (uid {uid}), so it is not used: point REFLECT_HOME at a directory of your"
                f" own, or take this one (`sudo chown {uid} {home} && chmod 700 {home}`)")
    if mode & 0o022:
        return (f"the store directory {home} is mode {mode:04o}: others can write in it, so"
                f" it is not used; make it private (`chmod 700 {home}`)")
    return ""


def home_problem(home: Path) -> str:
    """Why the store directory cannot be made or written, "" when it can. It tries: a
    directory made and removed where the store would go (file modes do not tell, for root
    or on a read-only file system), so nothing is left behind."""
    import tempfile  # here: a step never asks

    place = next(p for p in (home, *home.parents) if p.exists() or p == p.parent)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".reflect-probe-", dir=place))
    except OSError as e:
        return unusable_home(home, e)
    return ""


def disk(home: Path, said: str = "") -> list[Finding]:
    """The disk of ``home`` (the store's file, or what a shared store keeps here), unless
    the store's finding ``said`` it is full already."""
    free = free_bytes(home)
    if free is None or (free < LOW_SPACE and "disk is full" in said):
        return []
    if free < LOW_SPACE:  # DiskFull names the directory of the file it is given
        return [Finding("disk", False, str(DiskFull(home / "store", free)))]
    return [Finding("disk", True, f"{size(free)} free")]


def size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if n >= scale / 10:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1e3:.1f} kB"
