"""The local store: one SQLite file in WAL mode behind a small interface.

Durability: WAL with ``synchronous=NORMAL``. A capture is committed before it
returns, so it survives the agent process being killed; a power loss or OS
crash may drop the last few commits (``synchronous=FULL`` would fsync each
one). A shared PostgreSQL backend will implement the same methods.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reflect import queue
from reflect.migrations import migrate

DB_NAME = "reflect.db"
STARTING = 10.0  # seconds a just-started worker gets to register before another is started


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


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


class SQLiteStore:
    def __init__(self, home: Path, busy_timeout: float = 5.0):
        prepare_home(home)
        self.path = home / DB_NAME
        self.conn = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        self.conn.row_factory = sqlite3.Row
        self._set_wal(busy_timeout)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        migrate(self.conn)

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

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taking the lock up front so it cannot deadlock."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- capture ---------------------------------------------------------------

    def add_failure(self, failure: dict, lesson: dict, reflect: bool = False
                    ) -> tuple[dict, dict]:
        """Insert a failure and link it to its fingerprint's lesson, in one transaction.

        ``failure["iteration"]`` may be None: the run's next number is taken
        inside the transaction. The lesson is only inserted when the
        fingerprint has no active lesson yet. With ``reflect``, a fingerprint
        that has only its heuristic lesson gets a reflection job, queued in the
        same transaction so it cannot be lost. Returns the stored rows.
        """
        with self.write() as conn:
            if failure["iteration"] is None:
                failure["iteration"] = self._next_iteration(failure["run"])
            row = conn.execute(
                "SELECT * FROM lessons WHERE fingerprint = ? AND status = 'active' "
                "ORDER BY seq DESC LIMIT 1",
                (failure["fingerprint"],),
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO lessons (id, fingerprint, trigger, guidance, category, severity,"
                    " kind, confidence, created, updated) VALUES (:id, :fingerprint, :trigger,"
                    " :guidance, :category, :severity, :kind, :confidence, :created, :created)",
                    lesson,
                )
                row = conn.execute("SELECT * FROM lessons WHERE id = ?", (lesson["id"],)).fetchone()
            failure["lesson_id"] = row["id"]
            if reflect and row["kind"] == "heuristic":
                queue.enqueue(conn, "reflect", failure["fingerprint"], failure["run"],
                              failure["ts"])
            columns = ", ".join(failure)
            cursor = conn.execute(
                f"INSERT INTO failures ({columns}) VALUES ({', '.join(':' + c for c in failure)})",
                failure,
            )
            stored = conn.execute(
                "SELECT * FROM failures WHERE seq = ?", (cursor.lastrowid,)
            ).fetchone()
        return dict(stored), dict(row)

    def _next_iteration(self, run: str) -> int:
        last = self.conn.execute(
            "SELECT MAX(iteration) FROM failures WHERE run = ?", (run,)
        ).fetchone()[0]
        return (last or 0) + 1

    def next_iteration(self, run: str) -> int:
        return self._next_iteration(run)

    # -- reading ---------------------------------------------------------------

    def recent_failures(self, run: str, before_iteration: int | None, window: int) -> list[dict]:
        """The run's latest ``window`` failures, newest first by sequence."""
        sql = "SELECT * FROM failures WHERE run = ?"
        args: list = [run]
        if before_iteration is not None:
            sql += " AND iteration < ?"
            args.append(before_iteration)
        sql += " ORDER BY seq DESC LIMIT ?"
        args.append(window)
        return [dict(r) for r in self.conn.execute(sql, args)]

    def active_lessons(self, fingerprints: list[str]) -> dict[str, dict]:
        """The lesson recall shows for each fingerprint."""
        marks = ", ".join("?" * len(fingerprints))
        rows = self.conn.execute(
            f"SELECT * FROM lessons WHERE status = 'active' AND fingerprint IN ({marks})"
            " ORDER BY seq",
            fingerprints,
        )
        return {r["fingerprint"]: dict(r) for r in rows}

    def failure(self, failure_id: str) -> dict | None:
        row = self.conn.execute("SELECT * FROM failures WHERE id = ?", (failure_id,)).fetchone()
        return dict(row) if row else None

    def failures(self, run: str | None, limit: int) -> list[dict]:
        sql = "SELECT * FROM failures"
        args: list = []
        if run is not None:
            sql += " WHERE run = ?"
            args.append(run)
        sql += " ORDER BY seq DESC LIMIT ?"
        args.append(limit)
        return [dict(r) for r in self.conn.execute(sql, args)]

    def count_by(self, column: str, run: str | None) -> list[tuple[str, int]]:
        assert column in {"category", "error_type", "run", "fingerprint"}
        where, args = ("WHERE run = ?", [run]) if run is not None else ("", [])
        rows = self.conn.execute(
            f"SELECT {column}, COUNT(*) AS n FROM failures {where} "
            f"GROUP BY {column} ORDER BY n DESC, {column}",
            args,
        )
        return [(r[0], r[1]) for r in rows]

    def has_run(self, run: str) -> bool:
        row = self.conn.execute("SELECT 1 FROM failures WHERE run = ? LIMIT 1", (run,))
        return row.fetchone() is not None

    # -- the queue, as the CLI and status see it -----------------------------------

    def claim_worker_start(self, now: float, stale_after: float) -> bool:
        """True when jobs are due, no live worker holds the queue and no other process
        started one a moment ago: the caller then starts one."""
        with self.write() as conn:
            due = conn.execute(
                "SELECT 1 FROM jobs WHERE (state = 'queued' AND due <= ?)"
                " OR (state = 'leased' AND lease_until < ?) LIMIT 1",
                (now, now),
            ).fetchone()
            if due is None or queue.live_workers(conn, now, stale_after):
                return False
            last = conn.execute("SELECT value FROM meta WHERE key = 'worker_started'").fetchone()
            if last is not None and float(last[0]) > now - STARTING:
                return False
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('worker_started', ?)", (now,)
            )
            return True

    def spent_today(self, now: float) -> tuple[float, int]:
        return queue.spent_today(self.conn, now)

    def job_counts(self) -> dict[str, int]:
        return queue.counts(self.conn)

    def failed_jobs(self) -> list[dict]:
        return queue.failed_jobs(self.conn)

    def live_workers(self, now: float, stale_after: float) -> int:
        return queue.live_workers(self.conn, now, stale_after)

    # -- changes ---------------------------------------------------------------

    def resolve_open(self, run: str, iteration: int, resolution: str, now: float,
                     reflect: bool = False) -> list[str]:
        """Give the run's unresolved failures before ``iteration`` the action that worked;
        with ``reflect``, queue a revision of each of their lessons."""
        with self.write() as conn:
            open_failures = "run = ? AND iteration < ? AND resolution = ''"
            rows = conn.execute(
                f"SELECT id, fingerprint FROM failures WHERE {open_failures}", (run, iteration)
            ).fetchall()
            conn.execute(
                f"UPDATE failures SET resolution = ? WHERE {open_failures}",
                (resolution, run, iteration),
            )
            for fingerprint in {r["fingerprint"] for r in rows}:
                conn.execute(
                    "UPDATE lessons SET resolution = ?, updated = ?"
                    " WHERE fingerprint = ? AND status = 'active'",
                    (resolution, now, fingerprint),
                )
                if reflect:
                    queue.enqueue(conn, "reflect", fingerprint, run, now)
        return [r["id"] for r in rows]

    def clear(self, run: str | None) -> int:
        """Delete one run's failures (or everything), and lessons left with no failure."""
        with self.write() as conn:
            if run is None:
                n = conn.execute("DELETE FROM failures").rowcount
            else:
                n = conn.execute("DELETE FROM failures WHERE run = ?", (run,)).rowcount
            kept = "(SELECT DISTINCT fingerprint FROM failures)"
            conn.execute(f"DELETE FROM lessons WHERE fingerprint NOT IN {kept}")
            conn.execute(f"DELETE FROM jobs WHERE kind = 'reflect' AND target NOT IN {kept}")
        # Deleted text must not linger in the WAL or in free pages.
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

