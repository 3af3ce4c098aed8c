"""The durable queue, breaker and spend ledger on a real SQLite store."""

import subprocess
import sys
import textwrap

import pytest

from reflect import queue
from reflect.store import SQLiteStore


@pytest.fixture
def store(own_store):
    s = SQLiteStore(own_store)
    yield s
    s.close()


def add(store, n=1, now=100.0):
    with store.write() as conn:
        return [queue.enqueue(conn, "reflect", f"fp{i}", "r", now) for i in range(n)]


def lease(store, owner="w1", now=100.0, seconds=60.0):
    with store.write() as conn:
        return queue.lease(conn, owner, now, seconds, ("reflect",))


def test_a_pending_job_is_queued_once(store):
    assert add(store) == [True]
    assert add(store) == [False]
    assert store.job_counts() == {"queued": 1}


def test_a_leased_job_is_not_leased_again_until_its_lease_runs_out(store):
    add(store)
    job = lease(store, "w1", now=100.0, seconds=60.0)
    assert job.attempts == 1
    assert lease(store, "w2", now=150.0) is None
    taken = lease(store, "w2", now=161.0)  # w1 was killed: its lease ran out
    assert (taken.id, taken.attempts) == (job.id, 2)
    with store.write() as conn:
        assert not queue.finish(conn, job, "w1", 162.0)  # the old owner cannot finish it
        assert queue.finish(conn, taken, "w2", 162.0)
    assert store.job_counts() == {"done": 1}


def test_retry_backs_off_and_honours_retry_after_then_fails(store):
    add(store)
    job = lease(store, now=100.0)
    with store.write() as conn:
        queue.retry_later(conn, job, "w1", 100.0, "rate limited", retry_after=30.0)
    assert lease(store, now=129.0) is None
    now = 131.0
    for attempt in range(2, queue.MAX_ATTEMPTS + 1):
        job = lease(store, now=now)
        assert job.attempts == attempt
        with store.write() as conn:
            state = queue.retry_later(conn, job, "w1", now, "HTTP 503")
        now += queue.BACKOFF_CAP * 1.5 + 1
    assert state == "failed"
    (failed,) = store.failed_jobs()
    assert "HTTP 503" in failed["reason"] and f"{queue.MAX_ATTEMPTS} attempts" in failed["reason"]


def test_backoff_grows_exponentially_with_jitter(store, monkeypatch):
    monkeypatch.setattr(queue.random, "uniform", lambda a, b: 1.0)
    add(store)
    dues = []
    for now in (100.0, 1000.0, 2000.0):
        job = lease(store, now=now)
        with store.write() as conn:
            queue.retry_later(conn, job, "w1", now, "timeout")
            dues.append(conn.execute("SELECT due FROM jobs").fetchone()[0] - now)
    assert dues == [2.0, 4.0, 8.0]


def test_postponed_jobs_keep_their_attempts(store):
    add(store)
    job = lease(store, now=100.0)
    with store.write() as conn:
        queue.postpone(conn, job, "w1", 500.0, "circuit open", 100.0)
    assert lease(store, now=499.0) is None
    assert lease(store, now=500.0).attempts == 1


def test_breaker_opens_after_consecutive_failures_and_closes_on_success(store):
    with store.write() as conn:
        for _ in range(queue.BREAKER_THRESHOLD - 1):
            queue.breaker_record(conn, "openai", False, 100.0)
        assert queue.breaker_open_until(conn, "openai", 100.0) is None
        queue.breaker_record(conn, "openai", False, 100.0)
        assert queue.breaker_open_until(conn, "openai", 100.0) == 100.0 + queue.BREAKER_COOLDOWN
        assert queue.breaker_open_until(conn, "anthropic", 100.0) is None
        # After the cool-down one call goes through; its failure reopens at once.
        later = 100.0 + queue.BREAKER_COOLDOWN + 1
        assert queue.breaker_open_until(conn, "openai", later) is None
        queue.breaker_record(conn, "openai", False, later)
        assert queue.breaker_open_until(conn, "openai", later) is not None
        queue.breaker_record(conn, "openai", True, later)
        assert queue.breaker_open_until(conn, "openai", later) is None


OTHER_PROCESS = textwrap.dedent("""
    import sys
    from pathlib import Path
    from reflect import queue
    from reflect.store import SQLiteStore
    store = SQLiteStore(Path(sys.argv[1]))
    with store.write() as conn:
        for _ in range(queue.BREAKER_THRESHOLD):
            queue.breaker_record(conn, "openai", False, 1000.0)
        queue.record_spend(conn, "run-b", 0.75, 1000.0)
""")


def test_breaker_and_spend_hold_across_processes(store, own_store):
    with store.write() as conn:
        queue.record_spend(conn, "run-a", 0.5, 1000.0)
    out = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(own_store)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    with store.write() as conn:
        assert queue.breaker_open_until(conn, "openai", 1001.0) is not None
    assert store.spent_today(1000.0) == (1.25, 2)
    assert store.spent_today(1000.0 + 86400) == (0, 0)  # a new UTC day starts from zero


def test_a_job_whose_worker_keeps_dying_fails_after_the_last_attempt(store):
    add(store)
    now = 100.0
    for _ in range(queue.MAX_ATTEMPTS):  # each worker dies holding the lease
        assert lease(store, now=now, seconds=10.0) is not None
        now += 11.0
    assert lease(store, now=now) is None
    (failed,) = store.failed_jobs()
    assert "stopped during each of" in failed["reason"]


def test_after_the_cool_down_one_trial_call_goes_through(store):
    with store.write() as conn:
        for _ in range(queue.BREAKER_THRESHOLD):
            queue.breaker_record(conn, "openai", False, 100.0)
        later = 100.0 + queue.BREAKER_COOLDOWN + 1
        assert queue.breaker_open_until(conn, "openai", later) is None  # the trial
        assert queue.breaker_open_until(conn, "openai", later) is not None  # the others wait
