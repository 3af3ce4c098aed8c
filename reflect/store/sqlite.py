"""The embedded store: one SQLite file in WAL mode.

Durability: WAL with ``synchronous=NORMAL``. A capture is committed before it
returns, so it survives the agent process being killed; a power loss or OS
crash may drop the last few commits (``synchronous=FULL`` would fsync each
one).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflect.base.records import LessonRow
from reflect.store._sql import SQLStore
from reflect.store._sqlite_health import (
    EMPTY,
    check,
    file_bytes,
    move_aside,
    move_log_aside,
    translated,
)
from reflect.store._sqlite_health import Health as FileHealth
from reflect.store.base import Args, NewerSchema, StoreUnavailable, lesson_row, marks
from reflect.store.health import (
    CannotRepair,
    Finding,
    Health,
    disk,
    foreign_home,
    home_problem,
    unusable_home,
)
from reflect.store.sqlite_migrations import MIGRATIONS, migrate, schema_names

if TYPE_CHECKING:
    from reflect.base.answers import Footprint

DB_NAME = "reflect.db"
_INCREMENTAL = 2  # PRAGMA auto_vacuum


def prepare_home(home: Path) -> None:
    """Create the store directory private (0700) with a ``.gitignore`` of ``*``."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    ignore = home / ".gitignore"
    if not ignore.exists():
        try:
            with open(ignore, "x") as f:
                f.write("*\n")
        except FileExistsError:  # another process got there first
            pass


def usable_home(home: Path) -> None:
    """``prepare_home`` for a store: what stops it is ``StoreUnavailable``, with the fix; a
    directory others own or can write is refused before anything is written in it."""
    if why := foreign_home(home):
        raise StoreUnavailable(why)
    try:
        prepare_home(home)
    except OSError as e:
        raise StoreUnavailable(unusable_home(home, e)) from e


def _greatest(*values: Any) -> Any:  # PostgreSQL's GREATEST/LEAST: NULLs are left out
    return max((v for v in values if v is not None), default=None)


def _least(*values: Any) -> Any:
    return min((v for v in values if v is not None), default=None)


def _say_if_lost(path: Path) -> None:
    """An empty file that no opening process is writing (SQLite writes a new store's
    first page within milliseconds): the store was lost or cut short. It becomes a new
    store, said so once, here."""
    with contextlib.suppress(OSError):
        st = os.stat(path)
        if st.st_size == 0 and time.time() - st.st_mtime > LOST_AFTER:
            from reflect.base import config

            config.warn(f"{path} is {EMPTY}; a new store starts in it")


def hold(home: Path, wake: Callable[[], bool]) -> None:
    """Keep the store's file in ``home`` open until ``wake()`` returns False, checkpointing
    its WAL each time it returns True. The last connection to a file in WAL mode to close
    checkpoints the log into it and removes it, and the next to open makes it again: an
    open connection elsewhere spares the others both (the resident helper's keeper,
    ``reflect.cli.resident``). It opens only a file that is there (it never makes a
    store; none yet: it tries again at the next wake) and holds no transaction open."""
    conn = None
    try:
        while True:
            if conn is None:
                conn = _opened(home / DB_NAME)
            else:
                with contextlib.suppress(sqlite3.Error):  # passive: it waits for no one
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            if not wake():
                return
    finally:
        if conn is not None:
            conn.close()


def _opened(path: Path) -> sqlite3.Connection | None:
    """A connection to the store file at ``path`` that has read its log's index, or None."""
    import urllib.parse

    try:
        conn = sqlite3.connect(f"file:{urllib.parse.quote(str(path))}?mode=rw", uri=True,
                               isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
    except sqlite3.Error:  # not a store
        conn.close()
        return None
    return conn


LOST_AFTER = 2.0  # seconds an empty store file may be a new store being created


class SQLiteStore(SQLStore):
    def __init__(self, home: Path, busy_timeout: float = 5.0):
        usable_home(home)
        self.home = home
        self.path = home / DB_NAME
        # Private even inside a home that is not: created 0600 before SQLite opens it.
        # O_EXCL: never an fd on an open database, whose close would drop this
        # process's SQLite locks on it.
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            _say_if_lost(self.path)
        self.busy_timeout = busy_timeout
        with translated(self.path):
            self.conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        self.conn.row_factory = sqlite3.Row
        for name, function in (("greatest", _greatest), ("least", _least)):
            self.conn.create_function(name, -1, function, deterministic=True)
        # One connection: threads of one process take turns at write transactions.
        self._writing = threading.RLock()
        try:
            with translated(self.path):  # a full disk, a damaged file: said so
                # Opening a store never needs the write lock, so reads go on while
                # another process writes: what only a new file needs is done to a new
                # file alone. auto_vacuum takes effect before the first table only
                # (upkeep converts an older file); free pages can then be given back.
                if self._value("PRAGMA page_count") == 0:
                    self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                if self._value("PRAGMA journal_mode") != "wal":
                    self._set_wal(busy_timeout)
                self.conn.execute("PRAGMA synchronous=NORMAL")
                # Deleted rows are overwritten, not left in free pages: a forgotten
                # secret is gone.
                self.conn.execute("PRAGMA secure_delete=ON")
                migrate(self.conn)
        except BaseException:
            self.conn.close()
            raise

    def _set_wal(self, busy_timeout: float) -> None:
        # Switching a new database to WAL needs a moment alone with it; when
        # many processes create the store at once, wait for our turn.
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def close(self) -> None:
        self.conn.close()

    # -- what ``reflect doctor`` asks: the file, without opening it as a store ----------

    @classmethod
    def health(cls, home: Path, url: str = "") -> Health:
        """The file (its header, pages and schema) and the disk it is on."""
        found = check(home / DB_NAME, schema_names(), len(MIGRATIONS))
        # no capture could make or write the file, or one would refuse the directory
        unusable = foreign_home(home) or home_problem(home)
        store = Finding("store", False, unusable) if unusable else _store_finding(found)
        return Health((store, *disk(home, found.problem)), writable=store.ok,
                      bytes=found.bytes,
                      failures=found.failures if store.ok and found.exists else None)

    @classmethod
    def repair(cls, home: Path, now: float, url: str = "") -> list[str]:
        """A damaged, empty or incomplete file is kept aside (``reflect.db.damaged-<UTC
        time>``, with its WAL) and a new store started; what was done. Raises
        ``CannotRepair`` when the trouble is not the file's (its mode, a newer schema)."""
        db = home / DB_NAME
        found = check(db, schema_names(), len(MIGRATIONS))
        if found.damaged:
            aside = move_aside(db, now)
            cls(home).close()
            return [f"kept the damaged store as {aside}", f"started a new store {db}"]
        if found.bad_log:
            return [f"kept the damaged write-ahead log as {move_log_aside(db, now)}"]
        if found.problem:
            raise CannotRepair(f"nothing repaired: {db}: {found.problem}")
        if found.schema > len(MIGRATIONS):
            raise CannotRepair(f"nothing repaired: {NewerSchema(found.schema, len(MIGRATIONS))}")
        return []

    @contextmanager
    def write(self, wait: float | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction, taking the lock up front so it cannot deadlock;
        ``wait``: seconds to wait for the lock instead of the busy timeout."""
        with self._writing:
            if wait is not None:
                self.conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            with translated(self.path):
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                finally:
                    if wait is not None:
                        self.conn.execute(
                            f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
                try:
                    yield self.conn
                    self.conn.execute("COMMIT")
                except BaseException:
                    if self.conn.in_transaction:  # SQLite may have rolled back already
                        self.conn.execute("ROLLBACK")
                    raise

    def _rows(self, sql: str, args: Args = ()) -> list[Any]:
        with translated(self.path):
            return self.conn.execute(sql, args).fetchall()

    # -- what SQLite does its own way ----------------------------------------------

    def runs_by_words(self, terms: list[str], run: str, scope: str, k: int
                      ) -> list[tuple[str, float]]:
        """The ``k`` runs whose goals best match ``terms`` (FTS5's BM25, higher is better)."""
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        return [(r[0], -r[1]) for r in self._rows(
            """SELECT r.run, bm25(runs_fts) FROM runs_fts JOIN runs r ON r.seq = runs_fts.rowid
               WHERE runs_fts MATCH ? AND r.run != ? AND r.scope IN (?, 'global')
               ORDER BY bm25(runs_fts) LIMIT ?""", (match, run, scope, k))]

    def goal_term_runs(self, terms: list[str]) -> dict[str, int]:
        """How many run goals hold each term."""
        if not terms:
            return {}
        return {r[0]: r[1] for r in self._rows(
            f"SELECT term, doc FROM runs_vocab WHERE term IN ({marks(terms)})", terms)}

    def lessons_by_words(self, terms: list[str], limit: int) -> list[LessonRow]:
        """The ``limit`` lessons whose texts best match all of ``terms`` (FTS5's BM25)."""
        if not terms:
            return []
        match = " ".join(f'"{t}"' for t in terms)
        return [lesson_row(r) for r in self._rows(
            "SELECT l.* FROM lessons_fts JOIN lessons l ON l.seq = lessons_fts.rowid"
            " WHERE lessons_fts MATCH ? ORDER BY bm25(lessons_fts) LIMIT ?", (match, limit))]

    def purge(self) -> None:
        """After a deletion: rewrite the keyword index without the deleted text, drop the
        index files (rebuilt from the store on next use) and empty the WAL."""
        with self.write() as conn:
            conn.execute("INSERT INTO lessons_fts (lessons_fts) VALUES ('optimize')")
        for pattern in ("runs-*.idx", "vectors-*.idx"):  # vectors-: older versions' files
            for path in self.path.parent.glob(pattern):
                path.unlink(missing_ok=True)
        with translated(self.path):
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def reclaim(self) -> int:
        """Give the file's free pages back to the file system; the bytes it shrank by. A
        store made before incremental vacuum is converted once, by a VACUUM (a rewrite)."""
        before = file_bytes(self.path)
        with self._writing, translated(self.path):
            if self.conn.execute("PRAGMA auto_vacuum").fetchone()[0] != _INCREMENTAL:
                if self.conn.execute("PRAGMA freelist_count").fetchone()[0]:
                    self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                    self.conn.execute("VACUUM")
            else:
                self.conn.executescript("PRAGMA incremental_vacuum")  # every free page at once
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return before - file_bytes(self.path)

    def footprint(self) -> Footprint:
        """The file (with its WAL), its size and how many failures it holds."""
        failures = int(self._value("SELECT COUNT(*) FROM failures"))
        return {"path": str(self.path), "bytes": file_bytes(self.path), "failures": failures}


def _store_finding(health: FileHealth) -> Finding:
    where = str(health.path)
    if not health.exists:
        return Finding("store", True, f"{where}: none yet (the first capture creates it)")
    if health.damaged:
        return Finding("store", False,
                       f"{where} is {health.problem}: `reflect doctor --repair` keeps it as"
                       f" {DB_NAME}.damaged-<time> and starts a new store, which takes in"
                       " what was kept aside")
    if health.bad_log:
        return Finding("store", False,
                       f"{where}-wal is {health.problem}: `reflect doctor --repair` keeps it as"
                       f" {DB_NAME}-wal.damaged-<time>")
    if health.problem:
        return Finding("store", False, f"{where}: {health.problem}")
    if health.schema > len(MIGRATIONS):
        return Finding("store", False, str(NewerSchema(health.schema, len(MIGRATIONS))))
    behind = len(MIGRATIONS) - health.schema
    return Finding("store", True, f"{where}: sound, schema {health.schema}"
                   + (f" ({behind} migration(s) to apply on next use)" if behind else ""))
