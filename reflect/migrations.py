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


MIGRATIONS = [create_failures_and_lessons]


def _script(conn: sqlite3.Connection, sql: str) -> None:
    # Not executescript(): it commits first, which would split the migration
    # from its record in the migrations table.
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
