"""Lessons from earlier runs that fit the goal: keywords, meaning and evidence, gated.

Candidates come from three places: an FTS5 query on the goal's rarest terms,
a dense search with the goal's and the latest error's vectors, and lessons whose
cause (the mistake, whatever code it happened in) recurred in several runs:
environment-level failures recur whatever the goal says. Each candidate gets
calibrated signals (cosine, the share of query terms it holds, its number of
runs) that the gate can judge on any store size, where BM25 scores on a handful
of lessons would be near zero; the score then weighs relevance with confidence,
age and evidence. One lesson a cause: two lessons of one mistake say it twice.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from reflect.embedding import Vectors
from reflect.store import SQLiteStore
from reflect.upkeep import effective_confidence

MAX_TERMS = 12  # a goal is an issue text of hundreds of words: keep its rarest terms
CANDIDATES = 50
COMMON_SHARE = 0.05  # a term in more than this share of lessons is not searched for...
COMMON_FLOOR = 20  # ...unless the store is small
# Gate, tuned on labelled goal/lesson pairs (see bench/gate.py and the README). A goal
# is a long issue text, an error a short line: their cosines live on different scales.
# A goal's cosine mostly measures its topic: on SWE-bench issues, lessons of the same
# project score 0.3-0.5 whether they apply or not, so only a close match passes alone.
# How far a lesson stands above the goal's cosines with every lesson (a z-score) tells
# a fit from a topic better, once the store holds enough lessons to measure the spread;
# a floor on the cosine keeps a goal unlike every lesson from passing its least unlike.
MIN_GOAL_COSINE = 0.50
MIN_GOAL_Z = 1.5
MIN_Z_COSINE = 0.25
SPREAD_LESSONS = 30
MIN_ERROR_COSINE = 0.60
MIN_TERM_HITS = 4  # of the query's rarest terms; fewer admitted mostly noise
# Evidence: a cause seen in this many runs, and in this share of the store's runs,
# passes whatever the goal says; at most EVIDENCE_ITEMS lessons a block get in on
# evidence alone, the most widespread first. On 34 SWE-bench runs no cause reaches
# 15% and each lesson a lower share let in was noise (bench/gate.py); on 277 DebugBench
# runs the widespread ones foresee 57 of 150 cross-run repeats (the README).
EVIDENCE_RUNS = 3
EVIDENCE_SHARE = 0.15
EVIDENCE_ITEMS = 2
PROJECT_BONUS = 1.15

_WORD = re.compile(r"[a-z][a-z0-9]{2,}")  # as FTS5 unicode61 splits: "auth_user" is two
STOPWORDS = frozenset(
    "the and for that this with from are was were been have has had not but you your can"
    " will would should could into when then than there their them they what which who how"
    " all any each some such only also more most other use used using does did doing done"
    " its our out off one two get got may might must just like make made very here where"
    " about after before while because issue error fails failed failing test tests code"
    " file line run running should expected actual".split()
)


@dataclass
class Candidate:
    lesson: dict
    goal_cosine: float = 0.0
    goal_z: float = 0.0
    error_cosine: float = 0.0
    term_hits: int = 0
    runs: int = 1
    score: float = 0.0
    evidence_only: bool = False


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def rare_terms(store: SQLiteStore, text: str, limit: int = MAX_TERMS) -> list[str]:
    """The query's words that lessons hold, rarest first (fewest lessons holding them).
    A word most lessons hold tells them apart no better than none (and matching it
    would rank most of the store)."""
    unique = list(dict.fromkeys(words(text)))[:400]
    if not unique:
        return []
    marks = ", ".join("?" * len(unique))
    df = dict(store.conn.execute(
        f"SELECT term, doc FROM lessons_vocab WHERE term IN ({marks})", unique
    ).fetchall())
    lessons = store.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM lessons").fetchone()[0]
    common = max(COMMON_FLOOR, COMMON_SHARE * lessons)
    present = [w for w in unique if 0 < df.get(w, 0) <= common]
    return sorted(present, key=lambda w: (df[w], unique.index(w)))[:limit]


def find_lessons(store: SQLiteStore, vectors: Vectors, *, query: str,
                 goal_vector: np.ndarray | None, error_vector: np.ndarray | None, run: str,
                 scope: str, exclude: set[str], now: float, limit: int,
                 half_life_days: float) -> list[Candidate]:
    """The lessons learnt in runs other than ``run`` that pass the gate, best first.
    ``exclude``: the fingerprints and causes the recent section already shows."""
    found: dict[str, Candidate] = {}
    terms = rare_terms(store, query)
    if terms:
        match = " OR ".join(f'"{t}"' for t in terms)
        for row in store.conn.execute(
            "SELECT l.* FROM lessons_fts JOIN lessons l ON l.seq = lessons_fts.rowid"
            " WHERE lessons_fts MATCH ? ORDER BY bm25(lessons_fts) LIMIT ?",
            (match, CANDIDATES),
        ):
            found.setdefault(row["id"], Candidate(dict(row)))
    if goal_vector is not None:
        ranked = vectors.ranked(goal_vector, CANDIDATES)
        spread = ranked.std if ranked.rows >= SPREAD_LESSONS else 0.0
        for lesson_id, cosine in ranked.hits:
            c = found.setdefault(lesson_id, Candidate({"id": lesson_id}))
            c.goal_cosine = cosine
            c.goal_z = (cosine - ranked.mean) / spread if spread > 0 else 0.0
    if error_vector is not None:
        for lesson_id, cosine in vectors.search(error_vector, CANDIDATES):
            found.setdefault(lesson_id, Candidate({"id": lesson_id})).error_cosine = cosine
    evidence_runs = max(EVIDENCE_RUNS, EVIDENCE_SHARE * store.run_count())
    for row in store.conn.execute(  # the most widespread causes, each by the lesson of its
        # latest failure (an index walk that stops at the first: a cause can have thousands)
        """SELECT l.* FROM (SELECT cause FROM causes WHERE runs >= ?
                            ORDER BY runs DESC, last_seen DESC LIMIT ?) c
           JOIN lessons l ON l.id = (
               SELECT x.id FROM failures f JOIN lessons x ON x.fingerprint = f.fingerprint
               WHERE f.cause = c.cause AND x.status = 'active' AND x.scope IN (?, 'global')
               ORDER BY f.seq DESC LIMIT 1)""",
        (evidence_runs, CANDIDATES, scope),
    ):
        found.setdefault(row["id"], Candidate(dict(row)))
    _complete(store, found, run)
    kept = []
    query_words = set(words(query))
    for c in found.values():
        lesson = c.lesson
        if (lesson.get("status") != "active" or lesson["fingerprint"] in exclude
                or lesson["cause"] in exclude):
            continue
        if not lesson["elsewhere"]:  # only this run failed this way: not an earlier lesson
            continue  # (taught and imported lessons have no failures here: they count)
        if lesson["scope"] not in (scope, "global"):
            continue
        held = set(words(f"{lesson['trigger']} {lesson['guidance']} {lesson['error_text']}"))
        c.term_hits = len(set(terms) & held)
        relevant = passes(c) or taught_match(lesson, query_words)
        if not relevant:
            if c.runs < evidence_runs or not names_mistake(lesson["error_text"]):
                continue
            c.evidence_only = True
        c.score = _score(c, scope, now, half_life_days)
        kept.append(c)
    kept.sort(key=lambda c: c.score, reverse=True)
    causes: set[str] = set()
    fitting, on_evidence = [], []
    for c in kept:
        if c.lesson["cause"] and c.lesson["cause"] in causes:
            continue
        causes.add(c.lesson["cause"])
        (on_evidence if c.evidence_only else fitting).append(c)
    # The most widespread first; between equals, the one that recurred last.
    on_evidence.sort(key=lambda c: (c.runs, c.lesson["last_seen"]), reverse=True)
    chosen = fitting + on_evidence[:EVIDENCE_ITEMS]
    return sorted(chosen, key=lambda c: c.score, reverse=True)[:limit]


def names_mistake(error_text: str) -> bool:
    """Whether an error text says what went wrong: one captured without any error has its
    exit code for a message, and an error without a message (a bare AssertionError)
    is every failing check at once. Neither counts as evidence of one mistake."""
    kind, _, message = error_text.partition(": ")
    return bool(message.strip()) and kind != "Synthesized"


def _complete(store: SQLiteStore, found: dict[str, Candidate], run: str) -> None:
    """Fill in the rows of dense-only candidates, every candidate's cause and the number
    of runs it failed in, and whether its failure occurred in another run."""
    if not found:
        return
    ids = list(found)
    marks = ", ".join("?" * len(ids))
    for row in store.conn.execute(
        f"""SELECT l.*, COALESCE(c.runs, 1) AS runs, COALESCE(f.cause, '') AS cause,
                   COALESCE(c.last_seen, l.created) AS last_seen,
                   (EXISTS (SELECT 1 FROM failures o WHERE o.fingerprint = l.fingerprint
                                             AND o.run != ?)
                    OR NOT EXISTS (SELECT 1 FROM failures o
                                   WHERE o.fingerprint = l.fingerprint)) AS elsewhere
            FROM lessons l LEFT JOIN fingerprints f ON f.fingerprint = l.fingerprint
                           LEFT JOIN causes c ON c.cause = f.cause
            WHERE l.id IN ({marks})""",
        [run, *ids],
    ):
        c = found[row["id"]]
        c.lesson = dict(row)
        c.runs = row["runs"]


def passes(c: Candidate) -> bool:
    """The relevance gate: noise in a prompt is worse than nothing."""
    return (c.goal_cosine >= MIN_GOAL_COSINE
            or (c.goal_z >= MIN_GOAL_Z and c.goal_cosine >= MIN_Z_COSINE)
            or c.error_cosine >= MIN_ERROR_COSINE or c.term_hits >= MIN_TERM_HITS)


def taught_match(lesson: dict, query_words: set[str]) -> bool:
    """A person's lesson applies when most of its trigger's keywords are in the query."""
    if lesson["kind"] != "taught":
        return False
    trigger = set(words(lesson["trigger"]))
    return bool(trigger) and len(trigger & query_words) * 2 >= len(trigger)


def relevance(c: Candidate) -> float:
    """The strongest signal, each scaled so that its gate sits at 0.5."""
    return min(1.0, max(c.goal_cosine / (2 * MIN_GOAL_COSINE),
                        c.goal_z / (2 * MIN_GOAL_Z),
                        c.error_cosine / (2 * MIN_ERROR_COSINE),
                        c.term_hits / (2 * MIN_TERM_HITS),
                        0.5 if c.evidence_only or c.lesson["kind"] == "taught" else 0.0))


def _score(c: Candidate, scope: str, now: float, half_life_days: float) -> float:
    evidence = 1.0 + 0.25 * math.log2(max(c.runs, 1))
    confidence = 0.5 + effective_confidence(c.lesson, now, half_life_days)
    bonus = PROJECT_BONUS if c.lesson["scope"] == scope else 1.0
    return round(relevance(c) * evidence * confidence * bonus, 4)
