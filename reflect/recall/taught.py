"""Lessons no failure here stands for, a person's (taught) or another store's (imported):
they have no runs to predict from, so they enter on their trigger's words."""

from __future__ import annotations

from reflect.recall.predict import MAX_TERMS, words

COMMON_SHARE = 0.05  # a term in more than this share of lessons is not searched for...
COMMON_FLOOR = 20  # ...unless the store is small
CANDIDATES = 50


def rare_terms(store, text: str, limit: int = MAX_TERMS) -> list[str]:
    """The query's words that lessons hold, rarest first: a word most lessons hold tells
    them apart no better than none (and matching it would rank most of the store)."""
    unique = list(dict.fromkeys(words(text)))[:400]
    df, lessons = store.lesson_term_docs(unique)
    common = max(COMMON_FLOOR, COMMON_SHARE * lessons)
    present = [w for w in unique if 0 < df.get(w, 0) <= common]
    return sorted(present, key=lambda w: (df[w], unique.index(w)))[:limit]


def trigger_match(lesson: dict, query_words: set[str]) -> bool:
    """A lesson applies when most of its trigger's keywords are in the query."""
    trigger = set(words(lesson["trigger"]))
    return bool(trigger) and len(trigger & query_words) * 2 >= len(trigger)


def matching(store, query: str, scope: str) -> list[dict]:
    """Taught and imported lessons whose trigger the query matches, best match first."""
    query_words = set(words(query))
    return [lesson for lesson in store.unfailed_lessons(rare_terms(store, query), scope,
                                                        CANDIDATES)
            if trigger_match(lesson, query_words)]
