"""What the PostgreSQL backend does its own way: the dialect's translation, its schema
beside SQLite's, keyword ranking as FTS5's, its errors, opening a new database at once.
The shared queries are tested on both backends by the modules in conftest.BOTH_BACKENDS."""

import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from reflect import Memory
from reflect.api import controls, doctor
from reflect.api.memory import port
from reflect.store import StoreUnavailable, open_store
from reflect.store.sqlite import SQLiteStore

postgres = pytest.importorskip("reflect.store.postgres", reason="psycopg is not installed")
from reflect.store.postgres_migrations import MIGRATIONS  # noqa: E402 - psycopg first


def on_postgres(test):
    """A test that needs the server: the autouse fixture gives it a schema of its own."""
    return pytest.mark.postgresql(
        pytest.mark.parametrize("backend", ["postgresql"], indirect=True)(test))

GOALS = ["fix the django auth tests and the auth admin", "django migrations fail on auth_user",
         "numpy array shape mismatch in the test", "the test of the parser fails",
         "café naïve résumé parser", "parser parser parser error in the test"]


@pytest.mark.parametrize(("shared", "translated"), [
    ("SELECT a FROM t WHERE a = ? AND b IN (?, ?)",
     "SELECT a FROM t WHERE a = %s AND b IN (%s, %s)"),
    ("INSERT INTO t (a, b) VALUES (:a, :b_2)", "INSERT INTO t (a, b) VALUES (%(a)s, %(b_2)s)"),
    ("SELECT 'a ? :b' || ? FROM t", "SELECT 'a ? :b' || %s FROM t"),
    ("SELECT 'it''s ?', \"odd ?\" FROM t", "SELECT 'it''s ?', \"odd ?\" FROM t"),
    ("SELECT x FROM t WHERE a LIKE '10%' AND b = 5 % ?",
     "SELECT x FROM t WHERE a LIKE '10%%' AND b = 5 %% %s"),
    ("SELECT CAST(x AS TEXT), y::text FROM t -- a ? here\nWHERE z = ?",
     "SELECT CAST(x AS TEXT), y::text FROM t -- a ? here\nWHERE z = %s"),
])
def test_the_shared_dialect_is_translated_outside_quotes(shared, translated):
    assert postgres.translate(shared) == translated


def test_an_unknown_store_url_is_refused_with_how_to_fix(own_store):
    with pytest.raises(StoreUnavailable, match="postgresql://"):
        open_store(own_store, "mysql://root:pw@host/db")


def test_an_unreachable_server_is_said_so_and_capture_keeps_the_failure(own_store,
                                                                         monkeypatch):
    monkeypatch.setenv("REFLECT_STORE", "postgresql://agent:s3cret@127.0.0.1:9/reflect")
    with pytest.raises(StoreUnavailable, match="is the server running") as raised:
        open_store(own_store, os.environ["REFLECT_STORE"])
    assert "s3cret" not in str(raised.value)
    with Memory() as mem:
        kept = mem.capture(run="r", exit_code=1, error_text="ValueError: while away")
        assert kept is not None and (own_store / "pending.jsonl").exists()
        assert "while away" in mem.recall(run="r").text  # from what was kept aside


@on_postgres
def test_its_tables_have_the_columns_of_sqlites(own_store):
    """Same tables, same columns in the same order (some inserts name no columns); the
    keyword tables are each backend's own."""
    sqlite = sqlite3.connect(SQLiteStore(own_store / "sqlite").path)
    own = {"lessons_fts", "lessons_vocab", "runs_fts", "runs_vocab", "sqlite_sequence"}
    expected = {
        name: [c[1] for c in sqlite.execute(f"PRAGMA table_info({name})")]
        for (name,) in sqlite.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if name not in own and not name.startswith(("lessons_fts_", "runs_fts_"))}
    store = open_store(own_store, os.environ["REFLECT_STORE"])
    try:
        found = {}
        for table, column in store._rows(
                "SELECT table_name, column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"):
            found.setdefault(table, []).append(column)
    finally:
        store.close()
    assert set(found) - set(expected) == {"lesson_words", "run_words", "runs_vocab"}
    assert {t: found[t] for t in expected} == expected


@on_postgres
def test_run_goals_rank_by_words_as_fts5_ranks_them(own_store):
    sqlite_store = SQLiteStore(own_store / "sqlite")
    shared = open_store(own_store, os.environ["REFLECT_STORE"])
    try:
        for store in (sqlite_store, shared):
            for i, goal in enumerate(GOALS):
                store.register_run(f"r{i}", goal, "global", float(i))
        for terms in (["django", "auth"], ["test", "parser"], ["the"], ["cafe", "resume"],
                      ["auth", "nowhere"], ["parser"]):
            assert shared.goal_term_runs(terms) == sqlite_store.goal_term_runs(terms)
            ours, fts5 = (s.runs_by_words(terms, "x", "global", 5)
                          for s in (shared, sqlite_store))
            assert [r for r, _ in ours] == [r for r, _ in fts5]
            assert [s for _, s in ours] == pytest.approx([s for _, s in fts5])
    finally:
        shared.close()
        sqlite_store.close()


@on_postgres
def test_lessons_are_found_by_all_of_the_words_as_in_sqlite(own_store):
    sqlite_store = SQLiteStore(own_store / "sqlite")
    shared = open_store(own_store, os.environ["REFLECT_STORE"])
    texts = ["when the auth_user table is missing: run the migrations first",
             "when the wheel is old: pin numpy below 2", "when auth tokens expire: refresh them",
             "when the parser fails: end the file with a newline"]
    try:
        for store in (sqlite_store, shared):
            for text in texts:
                controls.teach(store, text, "global", lambda t: (t, 0), 1.0)
        for query in (["auth"], ["auth_user"], ["the", "table"], ["numpy", "wheel"],
                      ["nothing"], ["naïve"]):
            ours, fts5 = (s.lessons_by_words(query, 10) for s in (shared, sqlite_store))
            assert {r["guidance"] for r in ours} == {r["guidance"] for r in fts5}, query
    finally:
        shared.close()
        sqlite_store.close()


@on_postgres
def test_a_newer_schema_is_refused_with_what_to_do(own_store):
    store = open_store(own_store, os.environ["REFLECT_STORE"])
    with store.write() as tx:
        tx.execute("INSERT INTO migrations (version, name) VALUES (99, 'from_the_future')")
    store.close()
    # its version, not how many migrations it holds (len(MIGRATIONS) + 1)
    with pytest.raises(StoreUnavailable, match=r"schema version 99, .*upgrade reflect"):
        open_store(own_store, os.environ["REFLECT_STORE"])


OPEN = textwrap.dedent("""
    from pathlib import Path
    import sys
    import os
    from reflect.store import open_store
    store = open_store(Path(sys.argv[1]), os.environ["REFLECT_STORE"])
    store.register_run(sys.argv[2], "goal", "global", 0.0)
    store.close()
""")


@on_postgres
def test_processes_opening_a_new_database_at_once_migrate_it_once(own_store):
    procs = [subprocess.Popen([sys.executable, "-c", OPEN, str(own_store), f"r{n}"],
                              stderr=subprocess.PIPE, env=os.environ) for n in range(6)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    store = open_store(own_store, os.environ["REFLECT_STORE"])
    try:
        assert store._value("SELECT COUNT(*) FROM migrations") == len(MIGRATIONS)
        assert store.earlier_runs("none", "global") == 6
    finally:
        store.close()


def test_the_doctor_says_an_unreachable_shared_store_cannot_be_reached(own_store,
                                                                       monkeypatch):
    monkeypatch.setenv("REFLECT_STORE", "postgresql://agent@127.0.0.1:9/reflect")
    store, *_ = doctor.diagnose(own_store, os.environ["REFLECT_STORE"], None)
    assert (store.what, store.ok) == ("store", False) and "server running" in store.text
    with pytest.raises(doctor.CannotRepair, match="server running"):
        doctor.repair(own_store, os.environ["REFLECT_STORE"], 0.0)


@on_postgres
def test_the_doctor_replays_what_was_kept_aside_into_the_shared_store(own_store,
                                                                      monkeypatch):
    shared = os.environ["REFLECT_STORE"]
    monkeypatch.setenv("REFLECT_STORE", "postgresql://agent@127.0.0.1:9/reflect")
    with Memory() as mem:
        mem.capture(run="r", exit_code=1, error_text="ValueError: while away")
    monkeypatch.setenv("REFLECT_STORE", shared)
    findings = doctor.diagnose(own_store, shared, None)
    assert [(f.what, f.ok) for f in findings] == [
        ("store", True), ("disk", True), ("kept aside", True), ("size", True)]
    assert doctor.repair(own_store, shared, 0.0) == ["replayed 1 kept-aside capture(s) into it"]
    with Memory() as mem:
        assert [f.message for f in mem.failures(run="r")] == ["while away"]


@on_postgres
def test_a_forgotten_lesson_leaves_no_words_and_no_vector(own_store):
    with Memory() as mem:
        entry = mem.capture(run="a", exit_code=1,
                            error_text="RuntimeError: unforgettable-marker-phrase in the pipeline")
        mem.recall(run="b", goal="fix the unforgettable-marker-phrase pipeline")
        mem.forget(entry.lesson_id)
        store = port(mem).store
        assert store._value("SELECT COUNT(*) FROM lesson_vectors WHERE lesson_id = ?",
                            (entry.lesson_id,)) == 0
        assert store._value("SELECT COUNT(*) FROM lesson_words") == store._value(
            "SELECT COUNT(*) FROM lessons")
        assert store.lessons_by_words(["unforgettable"], 10) == []
    assert not list(own_store.glob("runs-*.idx"))
