"""What can go wrong with the SQLite file itself, said so a person can fix it.

SQLite reports a full disk as ``database or disk is full``, or, when the shared
memory file beside a WAL cannot grow, as ``disk I/O error``; a foreign or
overwritten file as ``file is not a database``; a damaged one as ``database disk
image is malformed``. The store raises these as :class:`DiskFull` and
:class:`Damaged`, and any other error of the file (locked, read-only) as
:class:`StoreUnavailable`, so every caller that keeps a capture aside when the
store cannot be written goes on doing so, with a message that says what to do.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from reflect.store.base import Rejected, StoreUnavailable

HEADER = b"SQLite format 3\x00"
LOW_SPACE = 1 << 20  # bytes free below which an I/O error is taken for a full disk
_FULL, _IOERR, _CORRUPT, _NOTADB = 13, 10, 11, 26  # SQLite's primary result codes


class DiskFull(StoreUnavailable):
    def __init__(self, path: Path, free: int | None):
        space = f", {free:,} bytes free" if free is not None else ""
        super().__init__(
            f"the disk is full (the file system of {path.parent}{space}): free some space"
            " or point REFLECT_HOME at another disk; captures are kept aside meanwhile and"
            " replayed once the store can be written")


class Damaged(StoreUnavailable):
    def __init__(self, path: Path, what: str):
        self.what = what  # what is wrong, without the path and the fix the message adds
        super().__init__(
            f"{path} is {what}: `reflect doctor --repair` keeps it aside (renamed with the"
            " time) and starts a new store, which takes in the captures kept aside meanwhile")


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use where ``path`` lives."""
    for place in (path, *path.parents):
        try:
            st = os.statvfs(place)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize
    return None


def translate(error: sqlite3.Error, path: Path) -> Exception:
    """The error a person can act on for what SQLite raised about the store at ``path``."""
    if isinstance(error, (sqlite3.IntegrityError, sqlite3.InterfaceError)):
        return Rejected(str(error))  # this record, not the store
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    if code == _FULL:
        return DiskFull(path, free_bytes(path))
    if code == _IOERR:
        free = free_bytes(path)
        if free is not None and free < LOW_SPACE:
            return DiskFull(path, free)
    if code == _NOTADB:
        return Damaged(path, "not a SQLite database (overwritten, or a foreign file)")
    if code == _CORRUPT:
        return Damaged(path, f"damaged ({error})")
    return StoreUnavailable(f"{path}: {error}")


@contextmanager
def translated(path: Path) -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as e:
        raise translate(e, path) from e


@dataclass(frozen=True)
class Health:
    """What ``check`` found: ``problem`` is "" for a sound file (or none yet)."""

    path: Path
    exists: bool
    bytes: int
    problem: str = ""
    damaged: bool = False  # a repair may move it aside
    bad_log: bool = False  # its write-ahead log is not one: a repair moves the log aside
    schema: int = 0  # the version of the last migration applied
    failures: int = 0


WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")  # a WAL's header, either byte order
BAD_LOG = ("not a write-ahead log (overwritten, or garbage): what was written since the"
           " last checkpoint is not in the store, which SQLite opens without it")
EMPTY = ("empty (0 bytes): a store that was lost or cut short, its history gone unless a"
         " copy of the file has it")


def check(path: Path, expected: frozenset[str] = frozenset(), current: int = 0,
          busy_timeout: float = 5.0) -> Health:
    """Look at the database file without changing it: its header, SQLite's own quick
    check of every page, then (at schema version ``current``) that the ``expected``
    tables and triggers are all there."""
    try:
        size = file_bytes(path)
        with open(path, "rb") as f:
            head = f.read(len(HEADER))
        log = _log_head(path)
    except FileNotFoundError:
        return Health(path, False, 0)
    except OSError as e:
        return Health(path, True, 0, f"cannot be read ({e.strerror}); check its owner and mode")
    # Both before SQLite opens the file: its close would delete the log and its evidence.
    if not head:  # a log beside it cannot bring back the pages it changed
        return Health(path, True, size, EMPTY, damaged=True)
    if head != HEADER:
        return Health(path, True, size, "not a SQLite database (overwritten, or a foreign file)",
                      damaged=True)
    if log and log[:4] not in WAL_MAGIC:
        return Health(path, True, size, BAD_LOG, bad_log=True)
    try:
        conn = sqlite3.connect(path, timeout=busy_timeout)
        try:
            found = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
            names = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'trigger')")}
            schema = conn.execute("SELECT COALESCE(MAX(version), 0) FROM migrations"
                                  ).fetchone()[0] if "migrations" in names else 0
            failures = conn.execute("SELECT COUNT(*) FROM failures").fetchone()[0] \
                if "failures" in names else 0
        finally:
            conn.close()
    except sqlite3.Error as e:
        better = translate(e, path)
        if isinstance(better, Damaged):  # the finding names the path and the fix itself
            return Health(path, True, size, better.what, damaged=True)
        # A full disk's message says where and what to do; any other, SQLite's own words
        # (the finding names the path)
        return Health(path, True, size, str(better) if isinstance(better, DiskFull) else str(e))
    if found != ["ok"]:
        return Health(path, True, size, "damaged: " + "; ".join(found), damaged=True)
    missing = sorted(expected - names) if schema == current else []
    if missing:
        return Health(path, True, size, f"incomplete: its schema {schema} lacks "
                      f"{', '.join(missing)} (dropped by hand, or a foreign tool)",
                      damaged=True, schema=schema, failures=failures)
    return Health(path, True, size, schema=schema, failures=failures)


def move_aside(path: Path, now: float | None = None) -> Path:
    """Rename the database (and its WAL, so both open together) to
    ``reflect.db.damaged-<UTC time>``; the shared-memory file is only a cache."""
    aside = _aside(path, now)
    os.rename(path, aside)
    for suffix in ("-wal", "-journal"):
        if Path(f"{path}{suffix}").exists():
            os.rename(f"{path}{suffix}", f"{aside}{suffix}")
    Path(f"{path}-shm").unlink(missing_ok=True)
    return aside


def _aside(path: Path, now: float | None) -> Path:
    """A name beside ``path`` that is free: ``<name>.damaged-<UTC time>[-n]``."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    return aside


def _log_head(path: Path) -> bytes:
    try:
        with open(f"{path}-wal", "rb") as f:
            return f.read(4)
    except FileNotFoundError:
        return b""


def move_log_aside(path: Path, now: float | None = None) -> Path:
    """Rename the database's log to ``reflect.db-wal.damaged-<UTC time>``, keeping it for a
    person; SQLite would otherwise drop it on the next open."""
    aside = _aside(Path(f"{path}-wal"), now)
    os.rename(f"{path}-wal", aside)
    Path(f"{path}-shm").unlink(missing_ok=True)  # the log's index: only a cache
    return aside


def file_bytes(path: Path) -> int:
    """The database's size with its WAL."""
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))
