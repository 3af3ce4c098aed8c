"""The block for the next prompt: this run's recent failures, then lessons from earlier runs."""

from __future__ import annotations

from reflect.embedding import Vectors
from reflect.records import Recall, RecallItem
from reflect.render import LESSONS_HEADER, RECENT_HEADER, fit, lesson_item_text, recent_item_text
from reflect.retrieval import find_lessons
from reflect.store import SQLiteStore, error_query

RECENT_WINDOW = 200  # failures scanned for the recent section: bounds recall on long runs
MAX_RECENT_ITEMS = 8
MAX_LESSON_ITEMS = 6


def build(store: SQLiteStore, vectors: Vectors, *, run: str, goal: str, phase: str,
          iteration: int | None, max_tokens: int, sections: tuple[str, ...], scope: str,
          now: float, embed: bool, escalate_after: int, half_life_days: float) -> Recall:
    """``embed``: compute missing vectors in this process (the model loads once);
    otherwise use cached vectors and queue the rest for the worker. A lesson that failed
    to prevent its failure ``escalate_after`` times comes first in its section, marked."""
    rows = store.recent_failures(run, iteration, RECENT_WINDOW)
    groups: dict[str, list[dict]] = {}
    for row in rows:  # newest first, so each group's first row is its latest
        groups.setdefault(row["fingerprint"], []).append(row)
    recent: list[RecallItem] = []
    if "recent" in sections:
        latest = [group[0] for group in groups.values()][:MAX_RECENT_ITEMS]
        lessons = store.active_lessons([f["fingerprint"] for f in latest])
        for rank, f in enumerate(latest):
            group = groups[f["fingerprint"]]
            lesson = lessons.get(f["fingerprint"])
            recent.append(RecallItem(
                section="recent",
                id=lesson["id"] if lesson else f["lesson_id"],
                text=recent_item_text(f, len(group), lesson, escalate_after),
                fingerprint=f["fingerprint"],
                source_failure_ids=[g["id"] for g in group],
                score=round(1 / (1 + rank), 3),
            ))
        recent.sort(key=lambda item: not escalated(lessons.get(item.fingerprint),
                                                   escalate_after))
    earlier: list[RecallItem] = []
    if "lessons" in sections:
        # What the recent section covers is not repeated, nor another lesson of its mistake.
        shown = set(groups) | {row["cause"] for row in rows}
        earlier = lesson_items(store, vectors, goal=goal, phase=phase,
                               latest=rows[0] if rows else None, run=run, scope=scope,
                               exclude=shown, now=now, embed=embed,
                               escalate_after=escalate_after, half_life_days=half_life_days)
    return fit([(RECENT_HEADER, recent), (LESSONS_HEADER, earlier)], max_tokens)


def lesson_items(store: SQLiteStore, vectors: Vectors, *, goal: str, phase: str,
                 latest: dict | None, run: str, scope: str, exclude: set[str], now: float,
                 embed: bool, escalate_after: int, half_life_days: float
                 ) -> list[RecallItem]:
    if not store.has_other_lessons(exclude):
        return []  # nothing to search: no reason to load a model
    # The goal and phase, plus the run's latest error (searched by meaning too) and action.
    goal_text = f"{goal}\n{phase}".strip()  # the caller bounded the goal
    query = goal_text
    if latest is not None:
        query += f"\n{error_query(latest)}\n{latest['action']}"
    goal_vector = error_vector = None
    if vectors.spec is not None:
        if embed:
            vectors.embed_queued()
        if goal_text:
            goal_vector = vectors.query_vector(goal_text, embed)
        if latest is not None:
            error_vector = vectors.query_vector(error_query(latest), embed)
    found = find_lessons(store, vectors, query=query, goal_vector=goal_vector,
                         error_vector=error_vector, run=run, scope=scope, exclude=exclude,
                         now=now, limit=MAX_LESSON_ITEMS, half_life_days=half_life_days)
    found.sort(key=lambda c: not escalated(c.lesson, escalate_after))
    sources = store.failure_ids([c.lesson["fingerprint"] for c in found])
    return [
        RecallItem(
            section="lesson",
            id=c.lesson["id"],
            text=lesson_item_text(c.lesson, c.runs, escalate_after),
            fingerprint=c.lesson["fingerprint"],
            source_failure_ids=sources.get(c.lesson["fingerprint"], []),
            score=c.score,
        )
        for c in found
    ]


def escalated(lesson: dict | None, escalate_after: int) -> bool:
    return lesson is not None and lesson["losses"] >= escalate_after
