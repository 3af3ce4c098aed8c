"""The store is bounded: consolidate keeps the newest failures and every lesson, and the
file gives the space of what it dropped back to the file system."""

import sqlite3

import pytest
from conftest import run_cli

from reflect import Memory, Settings
from reflect.base import config
from reflect.store import DB_NAME


def pragma(home, name: str) -> int:
    """What SQLite says of the file itself."""
    conn = sqlite3.connect(home / DB_NAME)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def failure_ids(limit: int = 1000) -> list[str]:
    with Memory() as mem:
        return [f.failure_id for f in mem.failures(limit=limit)]


def size(home) -> int:
    return sum(p.stat().st_size for p in home.glob(f"{DB_NAME}*"))


def fill(n: int, text: str = "", start: int = 0, one_cause: bool = False) -> None:
    """``n`` failures, each of its own cause (and lesson) unless ``one_cause``, with
    ``text`` in its message."""
    with Memory() as mem:
        for i in range(start, start + n):
            module = "m" if one_cause else f"m{i}"
            mem.capture(run=f"run-{i // 5}", exit_code=1, goal=f"goal {i // 5}",
                        error_text=f"ModuleNotFoundError: No module named '{module}' {text}")
            if i % 5 == 0:
                mem.recall(run=f"run-{i // 5}", goal=f"goal {i // 5}")


def test_the_oldest_failures_go_first_and_every_lesson_stays(own_store):
    fill(30)
    with Memory() as mem:
        mem.teach("when the tests need a database: run make db first")
        lessons = sorted(lesson.id for lesson in mem.lessons(status=None, limit=100))
        learnt = [e.lesson_id for e in mem.failures(limit=100)]
    newest = failure_ids(10)
    out = run_cli("consolidate", "--format", "json", env={"REFLECT_MAX_FAILURES": "10"})
    assert out.returncode == 0, out.stderr
    assert failure_ids() == newest
    with Memory() as mem:
        assert sorted(lesson.id for lesson in mem.lessons(status=None, limit=100)) == lessons
        assert len(mem.injections(limit=100)) <= 10
        # What the store learnt of each cause stays: the runs it failed in, as the export
        # says of each lesson.
        exported = mem.export(min_confidence=0)
        assert len(set(learnt)) == 30
        assert [i for i in learnt if f"`{i}` · seen in 1 run ·" not in exported] == []


@pytest.mark.sqlite_only
def test_consolidate_gives_the_space_back(own_store):
    fill(400, text="detail " * 400, one_cause=True)
    before = size(own_store)
    out = run_cli("consolidate", env={"REFLECT_MAX_FAILURES": "40"})
    assert out.returncode == 0, out.stderr
    assert b"the file shrank by" in out.stdout
    after = size(own_store)
    assert after < before - 250_000, (before, after)  # 360 failures of ~1 kB each went
    assert pragma(own_store, "freelist_count") == 0
    fill(5, start=400)  # still a working store
    assert len(failure_ids()) == 45


@pytest.mark.sqlite_only
def test_a_store_made_without_incremental_vacuum_is_converted(own_store):
    Memory().capture(run="r", exit_code=1)
    conn = sqlite3.connect(own_store / DB_NAME, isolation_level=None)
    conn.execute("PRAGMA auto_vacuum=NONE")
    conn.execute("VACUUM")  # as an older version made it
    assert conn.execute("PRAGMA auto_vacuum").fetchone() == (0,)
    conn.close()
    fill(300, text="x" * 3000, one_cause=True)
    before = size(own_store)
    with Memory(settings=Settings(max_failures=30)) as mem:
        report = mem.consolidate()
    assert report.reclaimed_bytes > 200_000 and size(own_store) < before - 200_000
    assert pragma(own_store, "auto_vacuum") == 2


def test_the_bound_is_configurable_with_a_sane_default(caplog):
    def bound(env):
        return Settings().with_env(env).upkeep.max_failures

    assert bound({}) == config.DEFAULT_MAX_FAILURES == 20_000
    assert bound({"REFLECT_MAX_FAILURES": "500"}) == 500
    assert bound({"REFLECT_MAX_FAILURES": "0"}) is None  # no bound
    assert bound({"REFLECT_MAX_FAILURES": "lots"}) == 20_000
    assert "REFLECT_MAX_FAILURES='lots' is not a whole number" in caplog.text


def test_status_shows_the_store_and_its_bound(own_store):
    fill(3)
    out = run_cli("status", env={"REFLECT_MAX_FAILURES": "100"})
    assert out.returncode == 0 and b"3 failure(s) of at most 100" in out.stdout, out.stdout


def test_a_worker_run_by_a_memory_keeps_the_memory_s_bound(own_store):
    fill(12)
    with Memory(settings=Settings(max_failures=5)) as mem:
        mem.run_worker(idle_exit=0)  # upkeep first: none ran yet
    assert len(failure_ids()) == 5
