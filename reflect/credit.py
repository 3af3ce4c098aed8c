"""Credit by outcome: what was injected before an iteration, and how that iteration ended.

A lesson injected before an iteration in which its fingerprint did not recur
earns a win; one injected before its own failure came back earns a loss (it
"did not prevent" it); lessons injected into a successful iteration share a
win. Confidence is the smoothed win rate around the lesson's prior, so a
lesson needs evidence to move far from what it started with.
"""

from __future__ import annotations

import sqlite3

from reflect.records import RecallItem

PRIOR_WEIGHT = 2.0  # the prior counts as this many outcomes


def record(conn: sqlite3.Connection, run: str, iteration: int, items: list[RecallItem],
           tokens: int, now: float) -> None:
    """Log what went into the prompt for ``iteration`` (hints of the recent section too)."""
    conn.executemany(
        "INSERT INTO injections (run, iteration, lesson_id, fingerprint, section, rank, score,"
        " tokens, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(run, iteration, i.id, i.fingerprint, i.section, rank, i.score, tokens, now)
         for rank, i in enumerate(items, 1)],
    )
    conn.executemany(
        "UPDATE lessons SET injected = injected + 1, last_used = ? WHERE id = ?",
        [(now, i.id) for i in items],
    )


def on_failure(conn: sqlite3.Connection, run: str, iteration: int, fingerprint: str) -> None:
    """The iteration failed with ``fingerprint``: a loss for its own lesson, wins for others."""
    pending = _pending(conn, run, iteration)
    for injection_id, lesson_id, injected_fp in pending:
        if injected_fp == fingerprint:
            _credit(conn, injection_id, lesson_id, "loss", wins=0.0, losses=1)
        else:
            _credit(conn, injection_id, lesson_id, "win", wins=1.0, losses=0)


def on_success(conn: sqlite3.Connection, run: str, iteration: int) -> None:
    pending = _pending(conn, run, iteration)
    for injection_id, lesson_id, _ in pending:
        _credit(conn, injection_id, lesson_id, "shared", wins=1.0 / len(pending), losses=0)


def _pending(conn: sqlite3.Connection, run: str, iteration: int) -> list[tuple]:
    return conn.execute(
        "SELECT id, lesson_id, fingerprint FROM injections"
        " WHERE run = ? AND iteration = ? AND outcome = ''",
        (run, iteration),
    ).fetchall()


def _credit(conn: sqlite3.Connection, injection_id: int, lesson_id: str, outcome: str,
            wins: float, losses: int) -> None:
    conn.execute("UPDATE injections SET outcome = ? WHERE id = ?", (outcome, injection_id))
    conn.execute(
        f"""UPDATE lessons SET wins = wins + ?, losses = losses + ?,
               confidence = (wins + ? + {PRIOR_WEIGHT} * prior)
                            / (wins + ? + losses + ? + {PRIOR_WEIGHT})
            WHERE id = ?""",
        (wins, losses, wins, wins, losses, lesson_id),
    )
