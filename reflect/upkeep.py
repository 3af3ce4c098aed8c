"""Upkeep: confidence decays without use; weak lessons and old history are let go.

Run by ``reflect consolidate`` and by the worker once a day. Pinned and taught
lessons are never removed; every removal is recorded (id, reason, time, never
the text).
"""

from __future__ import annotations

from reflect.store import SQLiteStore

DAY = 86400.0
GRACE_DAYS = 14.0  # a new lesson gets this long to prove itself
MIN_CONFIDENCE = 0.2  # below this (after decay) a lesson is removed
RETAIN_DAYS = 180.0  # failures, injections and cached query texts older than this go


def effective_confidence(lesson: dict, now: float, half_life_days: float) -> float:
    """Confidence halves for every half-life the lesson goes unused."""
    idle = max(0.0, now - max(lesson["last_used"], lesson["updated"])) / DAY
    return lesson["confidence"] * 0.5 ** (idle / half_life_days)


def consolidate(store: SQLiteStore, now: float, half_life_days: float,
                retain_days: float = RETAIN_DAYS) -> dict:
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
        conn.execute("DELETE FROM jobs WHERE state IN ('done', 'failed', 'skipped')"
                     " AND updated < ?", (cutoff,))
        conn.execute("DELETE FROM query_vectors WHERE created < ?", (cutoff,))
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('consolidated', ?)", (now,))
    store.purge()
    return {"removed_lessons": [r["id"] for r in weak], "deleted_failures": failures,
            "deleted_injections": injections}


def due(store: SQLiteStore, now: float) -> bool:
    row = store.conn.execute("SELECT value FROM meta WHERE key = 'consolidated'").fetchone()
    return row is None or float(row[0]) < now - DAY
