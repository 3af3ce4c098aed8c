"""The local store: one SQLite file in WAL mode behind a small interface.

Durability: WAL with ``synchronous=NORMAL``. A capture is committed before it
returns, so it survives the agent process being killed; a power loss or OS
crash may drop the last few commits (``synchronous=FULL`` would fsync each
one). A shared PostgreSQL backend will implement the same methods.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reflect import credit, queue
from reflect.config import repo_root
from reflect.fingerprint import cause
from reflect.lessons import active_lesson
from reflect.migrations import migrate
from reflect.records import RecallItem
from reflect.scrub import repo_from_git_config
from reflect.store_health import translated
from reflect.store_runs import MAX_GOAL_CHARS, Row, RunQueries
from reflect.text import clip, text_key

DB_NAME = "reflect.db"
EMBED_TARGET = "pending"  # one embed job covers everything that lacks a vector
STARTING = 10.0  # seconds a just-started worker gets to register before another is started


def newest(conn: sqlite3.Connection, table: str, order: str, limit: int,
           tests: dict[str, object], columns: str = "*") -> list[Row]:
    """Rows of ``table``, newest first by ``order``; ``tests`` maps an SQL condition with
    one placeholder to its value, and a None value leaves the condition out."""
    given = {sql: value for sql, value in tests.items() if value is not None}
    where = f" WHERE {' AND '.join(given)}" if given else ""
    return [dict(r) for r in conn.execute(
        f"SELECT {columns} FROM {table}{where} ORDER BY {order} DESC LIMIT ?",
        [*given.values(), limit])]


def error_query(failure: Row) -> str:
    """The text that stands for a failure in a search: its error type and message."""
    return f"{failure['error_type']}: {failure['message']}"


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


class SQLiteStore(RunQueries):
    def __init__(self, home: Path, busy_timeout: float = 5.0):
        prepare_home(home)
        self.path = home / DB_NAME
        # Private even inside a home that is not: created 0600 before SQLite opens it.
        # O_EXCL: never an fd on an open database, whose close would drop this
        # process's SQLite locks on it.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self.busy_timeout = busy_timeout
        self.conn = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        self.conn.row_factory = sqlite3.Row
        # One connection: threads of one process take turns at write transactions.
        self._writing = threading.RLock()
        try:
            with translated(self.path):  # a full disk, a damaged file: said so
                # Takes effect in a new file only (before its first table); upkeep
                # converts an older one. Free pages can then be given back.
                self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
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

    # -- capture ---------------------------------------------------------------

    def add_failure(self, failure: Row, lesson: Row, reflect: bool = False,
                    embed: bool = False, credit_outcome: bool = True) -> tuple[Row, Row]:
        """Insert a failure and link it to its fingerprint's lesson, in one transaction.

        ``failure["iteration"]`` may be None: the run's next number is taken
        inside the transaction. The lesson is only inserted when the
        fingerprint has no active lesson yet. Jobs are queued in the same
        transaction, so none can be lost: with ``reflect`` a reflection job for a
        fingerprint that has only its heuristic lesson; with ``embed`` vectors
        for the error's and the goal's texts. Returns the stored rows.
        """
        fp = failure["fingerprint"]
        # Derived here, the one place a failure enters the store (pending files kept by
        # an older version have no cause).
        failure["cause"] = cause(failure["error_type"], failure["message"])
        with self.write() as conn:
            if failure["iteration"] is None:
                failure["iteration"] = self._next_iteration(conn, failure["run"])
            scope = lesson.get("scope", "global")  # kept-aside records may lack it
            self._register_run(conn, failure["run"], failure["goal"], scope, failure["ts"])
            row = active_lesson(conn, fp)
            if row is None:
                conn.execute(
                    f"INSERT INTO lessons ({', '.join(lesson)})"
                    f" VALUES ({', '.join(':' + c for c in lesson)})",
                    lesson,
                )
                row = active_lesson(conn, fp)
                assert row is not None  # inserted just now
            failure["lesson_id"] = row["id"]
            new_run = conn.execute(
                "SELECT 1 FROM failures WHERE cause = ? AND run = ? LIMIT 1",
                (failure["cause"], failure["run"]),
            ).fetchone() is None
            cursor = conn.execute(
                f"INSERT INTO failures ({', '.join(failure)})"
                f" VALUES ({', '.join(':' + c for c in failure)})",
                failure,
            )
            conn.execute("INSERT OR IGNORE INTO fingerprints VALUES (?, ?)",
                         (fp, failure["cause"]))
            conn.execute(
                """INSERT INTO causes VALUES (?, 1, 1, ?) ON CONFLICT (cause)
                   DO UPDATE SET runs = runs + ?, failures = failures + 1, last_seen = ?""",
                (failure["cause"], failure["ts"], int(new_run), failure["ts"]),
            )
            if credit_outcome:
                credit.on_failure(conn, failure["run"], failure["iteration"], fp)
            if reflect and row["kind"] == "heuristic":
                queue.enqueue(conn, "reflect", fp, failure["run"], failure["ts"])
            if embed:  # the error's vector, and the goal's (by which runs are compared)
                self._queue_texts(conn, [error_query(failure), clip(failure["goal"],
                                                                    MAX_GOAL_CHARS)],
                                  failure["ts"])
            stored = conn.execute(
                "SELECT * FROM failures WHERE seq = ?", (cursor.lastrowid,)
            ).fetchone()
        return dict(stored), row

    def queue_texts(self, texts: list[str], now: float) -> None:
        """Ask the worker for these texts' vectors (goals, error lines)."""
        with self.write() as conn:
            self._queue_texts(conn, texts, now)

    def _queue_texts(self, conn: sqlite3.Connection, texts: list[str], now: float) -> None:
        added = sum(
            conn.execute(
                "INSERT OR IGNORE INTO query_vectors (key, text, created) VALUES (?, ?, ?)",
                (text_key(t), t, now),
            ).rowcount
            for t in texts
        )
        if added:
            queue.enqueue(conn, "embed", EMBED_TARGET, "", now)

    def project_scope(self, cwd: Path) -> str:
        """The scope of lessons learnt here: the repository's (by its remote's owner/name,
        else its path), derived once and cached in the store; "global" outside one."""
        root = repo_root(cwd)
        if root is None:
            return "global"
        key = "scope:" + hashlib.sha256(str(root).encode()).hexdigest()[:16]
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return str(row[0])
        repo = repo_from_git_config(root)
        name = "/".join(repo) if repo else str(root)
        scope = "project:" + hashlib.sha256(name.encode()).hexdigest()[:12]
        with self.write() as conn:
            conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (key, scope))
        return scope

    # -- reading ---------------------------------------------------------------

    def recent_failures(self, run: str, before_iteration: int | None, window: int,
                        columns: str = "*") -> list[Row]:
        """The run's latest ``window`` failures, newest first by sequence."""
        return newest(self.conn, "failures", "seq", window,
                      {"run = ?": run, "iteration < ?": before_iteration}, columns)

    def failures_by_id(self, ids: list[str]) -> dict[str, Row]:
        marks = ", ".join("?" * len(ids))
        return {r["id"]: dict(r) for r in self.conn.execute(
            f"SELECT * FROM failures WHERE id IN ({marks})", ids)}

    def active_lessons(self, fingerprints: list[str]) -> dict[str, Row]:
        """The lesson recall shows for each fingerprint."""
        marks = ", ".join("?" * len(fingerprints))
        rows = self.conn.execute(
            f"SELECT * FROM lessons WHERE status = 'active' AND fingerprint IN ({marks})"
            " ORDER BY seq",
            fingerprints,
        )
        return {r["fingerprint"]: dict(r) for r in rows}

    def failure(self, failure_id: str) -> Row | None:
        row = self.conn.execute("SELECT * FROM failures WHERE id = ?", (failure_id,)).fetchone()
        return dict(row) if row else None

    def failures(self, run: str | None, limit: int) -> list[Row]:
        return newest(self.conn, "failures", "seq", limit, {"run = ?": run})

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

    def failed_jobs(self) -> list[Row]:
        return queue.failed_jobs(self.conn)

    def live_workers(self, now: float, stale_after: float) -> int:
        return queue.live_workers(self.conn, now, stale_after)

    # -- changes ---------------------------------------------------------------

    def record_injections(self, run: str, iteration: int, items: list[RecallItem], tokens: int,
                          now: float, wait: float | None = None) -> None:
        with self.write(wait) as conn:
            credit.record(conn, run, iteration, items, tokens, now)

    def injections(self, run: str | None, limit: int) -> list[Row]:
        return newest(self.conn, "injections", "id", limit, {"run = ?": run})

    def resolve(self, run: str, iteration: int, action: str, resolutions: dict[str, str],
                now: float, reflect: bool = False, credit_outcome: bool = True) -> None:
        """``iteration`` succeeded with ``action``: credit what was injected before it, keep
        the step (it may be what changed before a rerun), give each failure in
        ``resolutions`` (id -> what worked) its text, and with ``reflect`` queue a
        revision of each of their lessons."""
        with self.write() as conn:
            if credit_outcome:
                credit.on_success(conn, run, iteration)
            conn.execute("INSERT INTO successes (run, iteration, action, ts) VALUES (?, ?, ?, ?)",
                         (run, iteration, action, now))
            for failure_id, text in resolutions.items():
                fingerprint = conn.execute(
                    "UPDATE failures SET resolution = ? WHERE id = ? RETURNING fingerprint",
                    (text, failure_id)).fetchone()[0]
                conn.execute(
                    "UPDATE lessons SET resolution = ?, updated = ?"
                    " WHERE fingerprint = ? AND status = 'active'",
                    (text, now, fingerprint),
                )
                if reflect:
                    queue.enqueue(conn, "reflect", fingerprint, run, now)

    def purge(self) -> None:
        """After a deletion: rewrite the keyword index without the deleted text, drop the
        index files (rebuilt from the store on next use) and empty the WAL."""
        with self.write() as conn:
            conn.execute("INSERT INTO lessons_fts (lessons_fts) VALUES ('optimize')")
        for pattern in ("runs-*.idx", "vectors-*.idx"):  # vectors-: older versions' files
            for path in self.path.parent.glob(pattern):
                path.unlink(missing_ok=True)
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def clear(self, run: str | None) -> int:
        """Delete one run's failures (or everything), and the lessons learnt only from them;
        a person's taught lessons stay."""
        with self.write() as conn:
            where, args = ("WHERE run = ?", (run,)) if run is not None else ("", ())
            n = conn.execute(f"DELETE FROM failures {where}", args).rowcount
            for table in ("injections", "benign", "successes", "runs"):
                conn.execute(f"DELETE FROM {table} {where}", args)
            kept = "(SELECT DISTINCT fingerprint FROM failures)"
            conn.execute(
                f"DELETE FROM lessons WHERE kind != 'taught' AND fingerprint NOT IN {kept}"
            )
            conn.execute(f"DELETE FROM jobs WHERE kind = 'reflect' AND target NOT IN {kept}")
            conn.execute("DELETE FROM fingerprints")
            conn.execute("INSERT INTO fingerprints SELECT DISTINCT fingerprint, cause"
                         " FROM failures")
            conn.execute("DELETE FROM causes")
            conn.execute("INSERT INTO causes SELECT cause, COUNT(DISTINCT run), COUNT(*),"
                         " MAX(ts) FROM failures GROUP BY cause")
            if run is None:
                conn.execute("DELETE FROM query_vectors")
        self.purge()
        return n

