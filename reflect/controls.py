"""A person's controls over lessons: list, show, search, pin, forget, quarantine, teach.

Every recalled line names its lesson id, so a person can act on what the agent
saw. Forgetting removes the text everywhere it lives: the lessons table, the
keyword index, the vectors and index files, and the WAL.
"""

from __future__ import annotations

import hashlib
import re

from reflect.credit import PRIOR_WEIGHT
from reflect.lessons import active_lesson, supersede
from reflect.records import new_id
from reflect.store import SQLiteStore

TAUGHT_CONFIDENCE = 0.9
FEEDBACK_WEIGHT = 2.0  # a person's verdict counts as two outcomes
_TEACH = re.compile(r"^\s*when\s+(?P<trigger>.+?)\s*:\s*(?P<guidance>.+?)\s*$", re.I | re.S)


class UnknownLesson(LookupError):
    def __init__(self, lesson_id: str):
        super().__init__(f"no lesson {lesson_id}; `reflect lessons list` shows the ids")


def get(store: SQLiteStore, lesson_id: str) -> dict:
    row = store.conn.execute("SELECT * FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
    if row is None:
        raise UnknownLesson(lesson_id)
    return dict(row)


def listing(store: SQLiteStore, *, status: str | None = "active", ineffective_after: int = 0,
            limit: int = 50) -> list[dict]:
    """Lessons newest first; ``ineffective_after`` keeps those that failed to prevent
    their failure at least that many times, worst first."""
    where: list[str] = []
    args: list[str | int] = []
    if status is not None:
        where.append("status = ?")
        args.append(status)
    order = "seq DESC"
    if ineffective_after:
        where.append("losses >= ?")
        args.append(ineffective_after)
        order = "losses DESC, seq DESC"
    sql = "SELECT * FROM lessons" + (f" WHERE {' AND '.join(where)}" if where else "")
    return [dict(r) for r in store.conn.execute(f"{sql} ORDER BY {order} LIMIT ?",
                                                [*args, limit])]


def search(store: SQLiteStore, text: str, limit: int = 20) -> list[dict]:
    terms = re.findall(r"\w+", text)
    if not terms:
        return []
    match = " ".join(f'"{t}"' for t in terms)
    return [dict(r) for r in store.conn.execute(
        "SELECT l.* FROM lessons_fts JOIN lessons l ON l.seq = lessons_fts.rowid"
        " WHERE lessons_fts MATCH ? ORDER BY bm25(lessons_fts) LIMIT ?", (match, limit))]


def detail(store: SQLiteStore, lesson_id: str) -> dict:
    """A lesson with its provenance: failures, runs, injections and their outcomes."""
    lesson = get(store, lesson_id)
    conn = store.conn
    lesson["failures"] = [dict(r) for r in conn.execute(
        "SELECT id, run, iteration, error_type, message FROM failures WHERE fingerprint = ?"
        " ORDER BY seq DESC LIMIT 10", (lesson["fingerprint"],))]
    lesson["outcomes"] = dict(conn.execute(
        "SELECT outcome, COUNT(*) FROM injections WHERE lesson_id = ? GROUP BY outcome",
        (lesson_id,)).fetchall())
    lesson["history"] = [dict(r) for r in conn.execute(
        "SELECT id, kind, status, guidance FROM lessons WHERE fingerprint = ? AND id != ?"
        " ORDER BY seq", (lesson["fingerprint"], lesson_id))]
    return lesson


def set_pinned(store: SQLiteStore, lesson_id: str, pinned: bool, now: float) -> None:
    get(store, lesson_id)
    with store.write() as conn:
        conn.execute("UPDATE lessons SET pinned = ?, updated = ? WHERE id = ?",
                     (int(pinned), now, lesson_id))


def feedback(store: SQLiteStore, lesson_id: str, good: bool, now: float) -> dict:
    get(store, lesson_id)
    wins, losses = (FEEDBACK_WEIGHT, 0) if good else (0, FEEDBACK_WEIGHT)
    with store.write() as conn:
        conn.execute(
            f"""UPDATE lessons SET wins = wins + ?, losses = losses + ?, updated = ?,
                   confidence = (wins + ? + {PRIOR_WEIGHT} * prior)
                                / (wins + ? + losses + ? + {PRIOR_WEIGHT})
                WHERE id = ?""",
            (wins, losses, now, wins, wins, losses, lesson_id),
        )
    return get(store, lesson_id)


def quarantine(store: SQLiteStore, lesson_id: str, why: str, now: float) -> None:
    """Take a lesson out of recall with the reason; the lesson it had replaced, if any,
    stands again."""
    lesson = get(store, lesson_id)
    with store.write() as conn:
        conn.execute("UPDATE lessons SET status = 'quarantined', quarantine = ?, updated = ?"
                     " WHERE id = ?", (why, now, lesson_id))
        if lesson["status"] == "active":
            conn.execute(
                "UPDATE lessons SET status = 'active', superseded_by = '', updated = ?"
                " WHERE seq = (SELECT MAX(seq) FROM lessons WHERE superseded_by = ?)",
                (now, lesson_id))


def release(store: SQLiteStore, lesson_id: str, now: float) -> None:
    """Back into recall: it supersedes whatever stands for its fingerprint meanwhile."""
    lesson = get(store, lesson_id)
    with store.write() as conn:
        current = active_lesson(conn, lesson["fingerprint"])
        if current is not None and current["id"] != lesson_id:
            supersede(conn, current["id"], lesson_id, now)
        conn.execute("UPDATE lessons SET status = 'active', quarantine = '', updated = ?"
                     " WHERE id = ?", (now, lesson_id))


def forget(store: SQLiteStore, lesson_id: str, now: float, reason: str = "forgotten") -> None:
    lesson = get(store, lesson_id)
    with store.write() as conn:
        conn.execute("DELETE FROM lessons WHERE id = ?", (lesson_id,))  # triggers: FTS, vectors
        conn.execute("INSERT INTO removals VALUES (?, ?, ?, ?)",
                     (lesson_id, lesson["fingerprint"], reason, now))
    store.purge()


def parse_teaching(text: str) -> tuple[str, str]:
    match = _TEACH.match(text)
    if match is None:
        raise ValueError('write it as "when <trigger>: <guidance>", e.g. '
                         '"when running the tests: use python -m pytest -x"')
    return match["trigger"], match["guidance"]


def teach(store: SQLiteStore, text: str, scope: str, scrub, now: float) -> str:
    """A person's lesson: pinned, confident, never removed by upkeep. A taught lesson with
    the same trigger as an earlier one supersedes it. It is reviewed as a model's lesson
    is: a hostile one is stored quarantined with the reason, for a person to release."""
    # Imported here: its patterns cost capture and recall, which never teach, a cold start.
    from reflect.review import GUIDANCE_MAX, TRIGGER_MAX, hostile_reason, trim

    trigger, guidance = parse_teaching(text)
    reason = hostile_reason(f"{trigger}\n{guidance}")
    # One line each, scrubbed before the cut: a cut through a secret hides it from its rule.
    trigger = trim(" ".join(scrub(trigger)[0].split()), TRIGGER_MAX)
    guidance = trim(" ".join(scrub(guidance)[0].split()), GUIDANCE_MAX)
    fingerprint = "taught:" + hashlib.sha256(trigger.lower().encode()).hexdigest()[:16]
    lesson_id = new_id("L")
    with store.write() as conn:
        if not reason:
            conn.execute(
                "UPDATE lessons SET status = 'superseded', superseded_by = ?, updated = ?"
                " WHERE fingerprint = ? AND status = 'active'", (lesson_id, now, fingerprint))
        conn.execute(
            "INSERT INTO lessons (id, fingerprint, trigger, guidance, category, severity, kind,"
            " confidence, prior, created, updated, scope, pinned, status, quarantine, origin)"
            " VALUES (?, ?, ?, ?, 'general', 'medium', 'taught', ?, ?, ?, ?, ?, 1, ?, ?,"
            " 'taught')",
            (lesson_id, fingerprint, trigger, guidance, TAUGHT_CONFIDENCE, TAUGHT_CONFIDENCE,
             now, now, scope, "quarantined" if reason else "active", reason))
    return lesson_id
