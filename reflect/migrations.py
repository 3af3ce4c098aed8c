"""Schema, as an ordered list of migrations recorded in the ``migrations`` table.

Never edit a shipped migration: append a new function to ``MIGRATIONS``.
"""

from __future__ import annotations

import sqlite3


def create_failures_and_lessons(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE lessons (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            fingerprint TEXT NOT NULL,
            trigger TEXT NOT NULL,
            guidance TEXT NOT NULL,
            category TEXT NOT NULL,
            severity TEXT NOT NULL,
            kind TEXT NOT NULL,
            confidence REAL NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',
            resolution TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX lessons_fingerprint ON lessons (fingerprint, status);
        -- seq is the true order of captures: AUTOINCREMENT never reuses a value.
        CREATE TABLE failures (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            run TEXT NOT NULL,
            iteration INTEGER NOT NULL,
            ts REAL NOT NULL,
            goal TEXT NOT NULL,
            phase TEXT NOT NULL,
            action TEXT NOT NULL,
            exit_code INTEGER,
            error_type TEXT NOT NULL,
            message TEXT NOT NULL,
            signature TEXT NOT NULL,
            friction TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            source TEXT NOT NULL,
            redactions INTEGER NOT NULL,
            category TEXT NOT NULL,
            severity TEXT NOT NULL,
            lesson_id TEXT NOT NULL REFERENCES lessons (id),
            resolution TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX failures_run_seq ON failures (run, seq);
        CREATE INDEX failures_fingerprint ON failures (fingerprint);
        """
    )


def add_jobs_and_model_lessons(conn: sqlite3.Connection) -> None:
    _script(
        conn,
        """
        -- The durable queue: a job is leased for a while, and a lease that runs out
        -- (its worker was killed) makes the job available again.
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            target TEXT NOT NULL,
            run TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'queued',
            attempts INTEGER NOT NULL DEFAULT 0,
            due REAL NOT NULL,
            lease_owner TEXT NOT NULL DEFAULT '',
            lease_until REAL NOT NULL DEFAULT 0,
            reason TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            updated REAL NOT NULL
        );
        CREATE INDEX jobs_state_due ON jobs (state, due);
        CREATE UNIQUE INDEX jobs_pending_once ON jobs (kind, target)
            WHERE state IN ('queued', 'leased');
        CREATE TABLE breaker (
            provider TEXT PRIMARY KEY,
            failures INTEGER NOT NULL,
            open_until REAL NOT NULL
        );
        CREATE TABLE spend (
            day TEXT NOT NULL,
            run TEXT NOT NULL,
            calls INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            PRIMARY KEY (day, run)
        );
        CREATE TABLE workers (
            id TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            started REAL NOT NULL,
            heartbeat REAL NOT NULL
        );
        ALTER TABLE lessons ADD COLUMN model TEXT NOT NULL DEFAULT '';
        ALTER TABLE lessons ADD COLUMN prompt_tokens INTEGER;
        ALTER TABLE lessons ADD COLUMN completion_tokens INTEGER;
        ALTER TABLE lessons ADD COLUMN cost_usd REAL;
        ALTER TABLE lessons ADD COLUMN quarantine TEXT NOT NULL DEFAULT '';
        ALTER TABLE lessons ADD COLUMN superseded_by TEXT NOT NULL DEFAULT '';
        ALTER TABLE lessons ADD COLUMN evidence INTEGER NOT NULL DEFAULT 1
        """,
    )


MIGRATIONS = [create_failures_and_lessons, add_jobs_and_model_lessons]


def _script(conn: sqlite3.Connection, sql: str) -> None:
    # Not executescript(): it commits first, which would split the migration
    # from its record in the migrations table. Statements split on ";", so
    # comments in migrations must not contain one.
    for statement in sql.split(";"):
        if statement.strip():
            conn.execute(statement)


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the schema up to date inside one write transaction.

    Safe when several processes open a new store at once: the first takes the
    write lock and migrates, the others find the work done.
    """
    if _applied(conn) == len(MIGRATIONS):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"
        )
        done = _applied(conn)
        for version, step in enumerate(MIGRATIONS[done:], start=done + 1):
            step(conn)
            conn.execute(
                "INSERT INTO migrations VALUES (?, ?, julianday('now'))", (version, step.__name__)
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _applied(conn: sqlite3.Connection) -> int:
    try:
        return conn.execute("SELECT COUNT(*) FROM migrations").fetchone()[0]
    except sqlite3.OperationalError:  # no migrations table yet: an empty database
        return 0
