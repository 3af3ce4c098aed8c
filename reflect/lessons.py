"""How lessons replace each other: supersession, merging, quarantine.

A fingerprint has at most one active lesson. A model lesson supersedes the
heuristic one (which stays in history); a model lesson that says what the
active one already says adds evidence to it instead of becoming a duplicate;
a quarantined lesson is kept with its reason and never recalled.
"""

from __future__ import annotations

import re
import sqlite3

from reflect.records import new_id

SAME_MEANING = 0.6  # word-set overlap above which two guidances say the same thing
_WORD = re.compile(r"[a-z0-9_]+")


def similar(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def active_lesson(conn: sqlite3.Connection, fingerprint: str) -> dict | None:
    row = conn.execute(
        "SELECT * FROM lessons WHERE fingerprint = ? AND status = 'active'"
        " ORDER BY seq DESC LIMIT 1",
        (fingerprint,),
    ).fetchone()
    return dict(row) if row else None


def add_model_lesson(conn: sqlite3.Connection, fingerprint: str, lesson: dict, now: float) -> str:
    """Store a reviewed model lesson for ``fingerprint``; returns the id that now holds it.

    ``lesson`` has trigger, guidance, category, kind, confidence, quarantine, model,
    prompt_tokens, completion_tokens, cost_usd. Call inside a write transaction.
    """
    current = active_lesson(conn, fingerprint)
    if (
        not lesson["quarantine"]
        and current is not None
        and current["kind"] == "model"
        and similar(current["guidance"], lesson["guidance"]) >= SAME_MEANING
    ):
        conn.execute(
            "UPDATE lessons SET evidence = evidence + 1, updated = ?,"
            " confidence = MAX(confidence, ?), prior = MAX(prior, ?) WHERE id = ?",
            (now, lesson["confidence"], lesson["confidence"], current["id"]),
        )
        return current["id"]
    lesson_id = new_id("L")
    severity = current["severity"] if current else "medium"
    conn.execute(
        """INSERT INTO lessons (id, fingerprint, trigger, guidance, category, severity, kind,
               confidence, prior, created, updated, status, quarantine, model, prompt_tokens,
               completion_tokens, cost_usd, resolution, scope, error_text)
           VALUES (?, ?, ?, ?, ?, ?, 'model', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            lesson_id, fingerprint, lesson["trigger"], lesson["guidance"], lesson["category"],
            severity, lesson["confidence"], lesson["confidence"], now, now,
            "quarantined" if lesson["quarantine"] else "active", lesson["quarantine"],
            lesson["model"], lesson["prompt_tokens"], lesson["completion_tokens"],
            lesson["cost_usd"], current["resolution"] if current else "",
            # The lesson it replaces says where it was learnt and what error it is about.
            current["scope"] if current else "global", current["error_text"] if current else "",
        ),
    )
    if not lesson["quarantine"]:
        # It replaces its fingerprint's lesson, and any other lesson with the same trigger
        # that says something else: the newer word on one situation wins.
        for other in conn.execute(
            "SELECT id, fingerprint, trigger, guidance FROM lessons WHERE status = 'active'"
            " AND id != ? AND kind != 'taught' AND lower(trigger) = lower(?)",
            (lesson_id, lesson["trigger"]),
        ).fetchall():
            if similar(other["guidance"], lesson["guidance"]) < SAME_MEANING:
                supersede(conn, other["id"], lesson_id, now)
        if current is not None:
            supersede(conn, current["id"], lesson_id, now)
    return lesson_id


def supersede(conn: sqlite3.Connection, old_id: str, new_id_: str, now: float) -> None:
    conn.execute(
        "UPDATE lessons SET status = 'superseded', superseded_by = ?, updated = ? WHERE id = ?",
        (new_id_, now, old_id),
    )
