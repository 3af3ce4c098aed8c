"""Lessons no failure here stands for, a person's (taught) or another store's (imported):
they have no runs to predict from, so they enter on their trigger's words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reflect.recall.predict import words

if TYPE_CHECKING:
    from reflect.base.records import LessonRow
    from reflect.store.protocol import RunStore

# Common words a search leaves out that still name a step: a trigger made of them alone
# ("when running the tests") is matched on them.
STEP_WORDS = frozenset(
    "test tests testing run running runs file files code line lines error errors fails failed"
    " failing make build building issue".split())


def cues(trigger: str) -> tuple[list[str], bool]:
    """What a trigger is matched on: its keywords; or, for a trigger of common words
    alone, the stems of those that name a step, each matching a word that begins or ends
    with it (``test``: `tests`, `pytest`), and True."""
    keywords = list(dict.fromkeys(words(trigger)))
    if keywords:
        return keywords, False
    return list(dict.fromkeys(_stem(w) for w in words(trigger, common=True)
                              if w in STEP_WORDS)), True


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word[-1] == word[-2] else word  # runn -> run


def trigger_match(lesson: LessonRow, query_words: set[str]) -> bool:
    """A lesson applies when most of its trigger's cues are in the query's words."""
    cue, loose = cues(lesson["trigger"])
    found = [c for c in cue if c in query_words or (loose and any(
        w.startswith(c) or w.endswith(c) for w in query_words))]
    return bool(cue) and len(found) * 2 >= len(cue)


def matching(store: RunStore, query: str, scope: str) -> list[LessonRow]:
    """Taught and imported lessons whose trigger the query matches, oldest first."""
    query_words = set(words(query, common=True))
    return [lesson for lesson in store.taught_and_imported_lessons(scope)
            if trigger_match(lesson, query_words)]
