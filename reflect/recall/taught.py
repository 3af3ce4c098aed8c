"""Lessons no failure here stands for, a person's (taught) or another store's (imported):
they have no runs to predict from, so they enter on their trigger's words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reflect.recall.predict import words

if TYPE_CHECKING:
    from reflect.base.records import Lesson
    from reflect.store.protocol import RunStore


def trigger_match(lesson: Lesson, query_words: set[str]) -> bool:
    """A lesson applies when most of its trigger's keywords are in the query."""
    trigger = set(words(lesson["trigger"]))
    return bool(trigger) and len(trigger & query_words) * 2 >= len(trigger)


def matching(store: RunStore, query: str, scope: str) -> list[Lesson]:
    """Taught and imported lessons whose trigger the query matches, oldest first."""
    query_words = set(words(query))
    return [lesson for lesson in store.taught_and_imported_lessons(scope)
            if trigger_match(lesson, query_words)]
