"""A person's controls over lessons: list, show, search, pin, forget, quarantine, teach.

Every recalled line names its lesson id, so a person can act on what the agent
saw. Forgetting removes the text everywhere it lives: the lessons table, the
keyword index, the vectors and index files, and the WAL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reflect.base.digest import sha256
from reflect.base.records import Lesson, LessonRow, new_lesson
from reflect.store.protocol import LessonStore

if TYPE_CHECKING:
    from reflect.base.answers import LessonDetail, Measured

TAUGHT_CONFIDENCE = 0.9
FEEDBACK_WEIGHT = 2  # a person's verdict counts as two outcomes
PROVENANCE_FAILURES = 10  # a lesson's latest failures shown with it
_TEACH = re.compile(r"^\s*when\s+(?P<trigger>.+?)\s*:\s*(?P<guidance>.+?)\s*$", re.I | re.S)


class UnknownLesson(LookupError):
    def __init__(self, lesson_id: str):
        super().__init__(f"no lesson {lesson_id}; `reflect lessons list` shows the ids")


class PinnedLesson(ValueError):
    """A pinned lesson stands where a person's lesson would go: nothing supersedes it."""

    def __init__(self, pinned: LessonRow):
        super().__init__(
            f"{pinned['id']} is pinned and says what to do when {pinned['trigger']}: "
            f"`reflect lessons unpin {pinned['id']}` lets another lesson take its place")


def get(store: LessonStore, lesson_id: str) -> LessonRow:
    row = store.lesson(lesson_id)
    if row is None:
        raise UnknownLesson(lesson_id)
    return row


def listing(store: LessonStore, *, status: str | None = "active", ineffective_after: int = 0,
            limit: int = 50) -> list[Lesson]:
    """Lessons newest first; ``ineffective_after`` keeps those that failed to prevent
    their failure at least that many times, worst first."""
    return [Lesson.from_row(row) for row in store.lessons(status, ineffective_after, limit)]


@dataclass(frozen=True)
class SearchBound:
    """How much of a search's text is read: no lesson holds more words than this."""

    chars: int = 10_000
    words: int = 32


def search(store: LessonStore, text: str, limit: int = 20, bound: SearchBound = SearchBound()
           ) -> list[Lesson]:
    """The lessons that hold every word of ``text`` (each word once, the first ones that
    ``bound`` keeps): a megabyte pasted into a search answers as fast as a line."""
    words = dict.fromkeys(re.findall(r"\w+", text[:bound.chars]))
    return [Lesson.from_row(row)
            for row in store.lessons_by_words(list(words)[:bound.words], limit)]


def detail(store: LessonStore, lesson_id: str, holdout: Measured | None) -> LessonDetail:
    """A lesson with its provenance (failures, runs, injections and their outcomes) and
    what the holdout measured of it."""
    from reflect.base.answers import LessonDetail  # an answer's types: not on capture's path

    lesson = get(store, lesson_id)
    return LessonDetail.from_row({**lesson, **store.lesson_provenance(
        lesson_id, lesson["fingerprint"], PROVENANCE_FAILURES), "holdout": holdout})


def set_pinned(store: LessonStore, lesson_id: str, pinned: bool, now: float) -> None:
    get(store, lesson_id)
    store.set_pinned(lesson_id, pinned, now)


def feedback(store: LessonStore, lesson_id: str, good: bool, now: float) -> Lesson:
    """A person's verdict counts as outcomes, judged by the one formula credit uses."""
    get(store, lesson_id)
    wins, losses = (FEEDBACK_WEIGHT, 0) if good else (0, FEEDBACK_WEIGHT)
    store.add_outcomes(lesson_id, wins, losses, now)
    return Lesson.from_row(get(store, lesson_id))


def quarantine(store: LessonStore, lesson_id: str, why: str, now: float) -> None:
    """Take a lesson out of recall with the reason; the lesson it had replaced, if any,
    stands again."""
    get(store, lesson_id)
    store.quarantine_lesson(lesson_id, why, now)


def release(store: LessonStore, lesson_id: str, now: float) -> None:
    """Back into recall: it supersedes whatever stands for its fingerprint meanwhile,
    unless that is pinned."""
    pinned = store.release_lesson(get(store, lesson_id), now)
    if pinned is not None:
        raise PinnedLesson(pinned)


def forget(store: LessonStore, lesson_id: str, now: float, reason: str = "forgotten") -> None:
    store.forget_lesson(lesson_id, get(store, lesson_id)["fingerprint"], reason, now)


def parse_teaching(text: str) -> tuple[str, str]:
    match = _TEACH.match(text)
    if match is None:
        raise ValueError('write it as "when <trigger>: <guidance>", e.g. '
                         '"when running the tests: use python -m pytest -x"')
    return match["trigger"], match["guidance"]


def teach(store: LessonStore, text: str, scope: str,
          scrub: Callable[[str], tuple[str, int]], now: float) -> str:
    """A person's lesson: pinned, confident, never removed by upkeep. A taught lesson with
    the same trigger as an earlier one supersedes it, unless that one is pinned (as taught
    lessons are, until unpinned): then ``PinnedLesson`` says so and nothing is stored. It
    is reviewed as a model's lesson is: a hostile one is stored quarantined with the
    reason, for a person to release."""
    # Imported here: its patterns cost capture and recall, which never teach, a cold start.
    from reflect.capture.heuristics import GUIDANCE_MAX, TRIGGER_MAX
    from reflect.capture.review import reviewed_texts

    trigger, guidance = parse_teaching(text)
    texts, reason, _ = reviewed_texts(
        {"trigger": (trigger, TRIGGER_MAX), "guidance": (guidance, GUIDANCE_MAX)}, scrub)
    trigger, guidance = texts["trigger"], texts["guidance"]
    fingerprint = "taught:" + sha256(trigger.lower().encode()).hexdigest()[:16]
    lesson = new_lesson(
        fingerprint=fingerprint, trigger=trigger, guidance=guidance, kind="taught",
        confidence=TAUGHT_CONFIDENCE, prior=TAUGHT_CONFIDENCE, now=now, scope=scope,
        pinned=True, quarantine=reason, origin="taught")
    pinned = store.add_taught_lesson(lesson, now)
    if pinned is not None:
        raise PinnedLesson(pinned)
    return lesson["id"]
