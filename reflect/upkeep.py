"""Upkeep: confidence decays without use; weak lessons, old history and the oldest
failures past the store's bound are let go, and the file gives back the space.

Run by ``reflect consolidate`` and by the worker once a day. Pinned and taught
lessons are never removed; every removal is recorded (id, reason, time, never
the text).
"""

from __future__ import annotations

from reflect.store import SQLiteStore
from reflect.store.sqlite_health import reclaim

DAY = 86400.0
GRACE_DAYS = 14.0  # a new lesson gets this long to prove itself
MIN_CONFIDENCE = 0.2  # below this (after decay) a lesson is removed
RETAIN_DAYS = 180.0  # failures, injections and cached query texts older than this go


def effective_confidence(lesson: dict, now: float, half_life_days: float) -> float:
    """Confidence halves for every half-life the lesson goes unused."""
    idle = max(0.0, now - max(lesson["last_used"], lesson["updated"])) / DAY
    return lesson["confidence"] * 0.5 ** (idle / half_life_days)


def consolidate(store: SQLiteStore, now: float, half_life_days: float,
                retain_days: float = RETAIN_DAYS, max_failures: int | None = None) -> dict:
    """``max_failures``: the newest failures kept (and as many rows of the other raw
    history: injections, benign exits, steps that worked); lessons and the per-cause
    counts stay whatever goes. The space freed is given back to the file system."""
    conn = store.conn
    removable = [
        dict(r) for r in conn.execute(
            "SELECT id, fingerprint, confidence, last_used, updated FROM lessons"
            " WHERE pinned = 0 AND kind != 'taught' AND created < ?", (now - GRACE_DAYS * DAY,))
    ]
    weak = [r for r in removable
            if effective_confidence(r, now, half_life_days) < MIN_CONFIDENCE]
    cutoff = now - retain_days * DAY
    with store.write() as conn:
        for r in weak:
            conn.execute("DELETE FROM lessons WHERE id = ?", (r["id"],))
            conn.execute("INSERT INTO removals VALUES (?, ?, 'low confidence', ?)",
                         (r["id"], r["fingerprint"], now))
        # History goes; what it taught stays (lessons, and how many runs each cause failed in).
        failures = conn.execute("DELETE FROM failures WHERE ts < ?", (cutoff,)).rowcount
        injections = conn.execute("DELETE FROM injections WHERE ts < ?", (cutoff,)).rowcount
        if max_failures is not None:  # the oldest first
            failures += _keep_newest(conn, "failures", "seq", max_failures)
            injections += _keep_newest(conn, "injections", "id", max_failures)
            _keep_newest(conn, "benign", "seq", max_failures)
            _keep_newest(conn, "successes", "seq", max_failures)
            # Cached error texts; the goals of the runs kept are what similar runs are
            # found by.
            _keep_newest(conn, "query_vectors", "created", max_failures,
                         "key NOT IN (SELECT goal_key FROM runs)")
        conn.execute("DELETE FROM jobs WHERE state IN ('done', 'failed', 'skipped')"
                     " AND updated < ?", (cutoff,))
        conn.execute("DELETE FROM query_vectors WHERE created < ?", (cutoff,))
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('consolidated', ?)", (now,))
    store.purge()
    return {"removed_lessons": [r["id"] for r in weak], "deleted_failures": failures,
            "deleted_injections": injections, "reclaimed_bytes": reclaim(store)}


def _keep_newest(conn, table: str, order: str, keep: int, among: str = "1") -> int:
    """Delete the rows of ``table`` (those that match ``among``) but the ``keep`` newest."""
    return conn.execute(
        f"DELETE FROM {table} WHERE {among} AND {order} <= (SELECT {order} FROM {table}"
        f" WHERE {among} ORDER BY {order} DESC LIMIT 1 OFFSET ?)", (keep,)).rowcount


def due(store: SQLiteStore, now: float) -> bool:
    row = store.conn.execute("SELECT value FROM meta WHERE key = 'consolidated'").fetchone()
    return row is None or float(row[0]) < now - DAY
