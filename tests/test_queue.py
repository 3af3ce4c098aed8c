"""The durable queue, breaker and spend ledger on a real store, through the store's
methods as workers call them; jobs are queued as capture queues them."""

import itertools
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from reflect import Memory, Settings
from reflect.base.limits import Limits, next_day, postpone
from reflect.base.records import DONE, Job, Verdict
from reflect.reflection.queue import Retries
from reflect.store import open_store

RULE = Retries()
MODEL = "openai/test-model"  # with a model each new failure queues a job; none is called
_causes = itertools.count()


@pytest.fixture
def store(own_store):
    s = open_store(own_store, os.environ.get("REFLECT_STORE", ""))
    yield s
    s.close()


def add(n=1, now=100.0, run="r", module=None):
    """``n`` failures captured at ``now``, each of a new cause (or all of ``module``'s):
    a job to reflect on each."""
    with Memory(model=MODEL, embeddings="off", settings=Settings(clock=lambda: now)) as mem:
        for _ in range(n):
            name = module or f"m{next(_causes)}"
            mem.capture(run=run, exit_code=1,
                        error_text=f"ModuleNotFoundError: No module named '{name}'")


def lease(store, owner="w1", now=100.0, seconds=60.0):
    return store.lease(owner, 1, "host", now, seconds, ("reflect",), RULE.max_attempts)


def due(store, job) -> float:
    return store._value("SELECT due FROM jobs WHERE id = ?", (job.id,))


def test_a_pending_job_is_queued_once(store):
    add(module="yaml")
    assert store.job_counts() == {"queued": 1}
    add(module="yaml")  # the same cause again
    assert store.job_counts() == {"queued": 1}


def test_a_leased_job_is_not_leased_again_until_its_lease_runs_out(store):
    add()
    job = lease(store, "w1", now=100.0, seconds=60.0)
    assert job.attempts == 1
    assert lease(store, "w2", now=150.0) is None
    taken = lease(store, "w2", now=161.0)  # w1 was killed: its lease ran out
    assert (taken.id, taken.attempts) == (job.id, 2)
    assert not store.settle(job, "w1", 162.0, DONE)  # the old owner cannot finish it
    assert store.settle(taken, "w2", 162.0, DONE)
    assert store.job_counts() == {"done": 1}


def test_a_renewed_lease_holds_until_the_renewal_runs_out(store):
    add()
    job = lease(store, "w1", now=100.0, seconds=60.0)
    assert store.renew_lease(job, "w1", 150.0, 210.0)
    assert lease(store, "w2", now=170.0) is None  # past the first lease, within the renewal
    taken = lease(store, "w2", now=211.0)
    assert taken.id == job.id
    assert not store.renew_lease(job, "w1", 212.0, 272.0)  # w1 lost it: renewal says so
    assert not store.settle(job, "w1", 212.0, DONE)
    assert store.settle(taken, "w2", 212.0, DONE)


def test_retry_backs_off_and_honours_retry_after_then_fails(store):
    add()
    job = lease(store, now=100.0)
    assert store.settle(job, "w1", 100.0, RULE.retry(job, 100.0, "rate limited", 30.0))
    assert lease(store, now=129.0) is None
    now = 131.0
    for attempt in range(2, RULE.max_attempts + 1):
        job = lease(store, now=now)
        assert job.attempts == attempt
        verdict = RULE.retry(job, now, "HTTP 503")
        store.settle(job, "w1", now, verdict)
        now += RULE.backoff_cap * 1.5 + 1
    assert verdict.state == "failed"
    (failed,) = store.failed_jobs()
    assert "HTTP 503" in failed["reason"] and f"{RULE.max_attempts} attempts" in failed["reason"]


def test_backoff_grows_exponentially(store):
    add()
    dues = []
    for now in (100.0, 1000.0, 2000.0):
        job = lease(store, now=now)
        store.settle(job, "w1", now, Retries(jitter=0).retry(job, now, "timeout"))
        dues.append(due(store, job) - now)
    assert dues == [2.0, 4.0, 8.0]


def test_jitter_spreads_the_backoff_within_its_bounds():
    job = Job(1, "reflect", "fp", "r", attempts=3)  # 8 s without jitter
    delays = {RULE.retry(job, 0.0, "timeout").due for _ in range(200)}
    assert len(delays) > 100 and min(delays) >= 4.0 and max(delays) <= 12.0


def test_postponed_jobs_keep_their_attempts(store):
    add()
    job = lease(store, now=100.0)
    store.settle(job, "w1", 100.0, postpone(500.0, "circuit open"))
    assert lease(store, now=499.0) is None
    assert lease(store, now=500.0).attempts == 1


def test_work_queued_while_a_job_is_leased_folds_into_its_requeue(store):
    add(module="yaml")
    job = lease(store, now=100.0)
    add(now=101.0, module="yaml")  # the same cause again, while its job is leased
    assert store.job_counts() == {"leased": 1, "queued": 1}
    store.settle(job, "w1", 102.0, RULE.retry(job, 102.0, "timeout"))
    assert store.job_counts() == {"queued": 1}
    assert lease(store, now=1000.0).id == job.id


# -- the breaker and the spend, as model calls meet them ---------------------------------

def limits(provider="openai", max_cost_usd=None, max_calls_per_run=50):
    return Limits(provider, max_cost_usd, max_calls_per_run, RULE.breaker_threshold,
                        RULE.breaker_cooldown)


def leased(store, now, run="r"):
    """A job leased by w1 (one of its own was queued; an older due one may come first)."""
    add(now=now, run=run)
    return lease(store, now=now)


def call(store, ok, now, cost=None, run="r", provider="openai"):
    """A model call was made for a job: the provider answered (``ok``) or failed."""
    job = leased(store, now, run)
    verdict = DONE if ok else Verdict("failed", "HTTP 503")
    assert store.settle_call(job, "w1", now, limits(provider), cost, ok, verdict)


def may_call(store, now, provider="openai", **limit):
    """True when a job may call the provider now; else when its job was put back for."""
    job = leased(store, now)
    if store.gate_job(job, "w1", now, limits(provider, **limit)):
        return True
    return due(store, job)


def test_breaker_opens_after_consecutive_failures_and_closes_on_success(store):
    for _ in range(RULE.breaker_threshold - 1):
        call(store, False, 100.0)
    assert may_call(store, 100.0) is True
    call(store, False, 100.0)
    assert may_call(store, 100.0) == 100.0 + RULE.breaker_cooldown
    assert may_call(store, 100.0, provider="anthropic") is True
    # After the cool-down one call goes through; its failure reopens at once.
    later = 100.0 + RULE.breaker_cooldown + 1
    assert may_call(store, later) is True
    call(store, False, later)
    assert may_call(store, later) == later + RULE.breaker_cooldown
    call(store, True, later)
    assert may_call(store, later) is True


def test_after_the_cool_down_one_trial_call_goes_through(store):
    for _ in range(RULE.breaker_threshold):
        call(store, False, 100.0)
    later = 100.0 + RULE.breaker_cooldown + 1
    assert may_call(store, later) is True  # the trial
    assert may_call(store, later) is not True  # the others wait


def test_the_spend_cap_and_the_runs_cap_hold_a_call_back(store):
    call(store, True, 1000.0, cost=0.5)
    assert may_call(store, 1000.0, max_cost_usd=1.0) is True
    assert may_call(store, 1000.0, max_cost_usd=0.5) == next_day(1000.0)
    job = leased(store, 1000.0, run="r")
    assert not store.gate_job(job, "w1", 1000.0, limits(max_calls_per_run=1))
    (skipped,) = store.failed_jobs()
    assert skipped["state"] == "skipped" and "cap of 1 model calls" in skipped["reason"]
    assert may_call(store, 1000.0, max_calls_per_run=2) is True  # the run made one call


OTHER_PROCESS = textwrap.dedent("""
    import sys
    from pathlib import Path
    from reflect import Memory, Settings
    from reflect.base.limits import Limits
    from reflect.base.records import DONE
    from reflect.reflection.queue import Retries
    import os
    from reflect.store import open_store
    store = open_store(Path(sys.argv[1]), os.environ.get("REFLECT_STORE", ""))
    mem = Memory(Path(sys.argv[1]), model="openai/test-model", embeddings="off",
                 settings=Settings(clock=lambda: 1000.0))
    rule = Retries()
    limits = Limits("openai", None, 50, rule.breaker_threshold, rule.breaker_cooldown)
    for n in range(rule.breaker_threshold + 1):  # one answered call, then failures
        mem.capture(run="run-b", exit_code=1,
                    error_text=f"ModuleNotFoundError: No module named 'other{n}'")
        job = store.lease("w2", 2, "host", 1000.0, 60.0, ("reflect",), rule.max_attempts)
        store.settle_call(job, "w2", 1000.0, limits, 0.75 if n == 0 else None, n == 0,
                          DONE)
    store.close()
    mem.close()
""")


def test_breaker_and_spend_hold_across_processes(store, own_store):
    call(store, True, 1000.0, cost=0.5, run="run-a")
    out = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(own_store)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert may_call(store, 1001.0) is not True
    assert store.spent_today(1000.0) == (1.25, RULE.breaker_threshold + 2)
    assert store.spent_today(1000.0 + 86400) == (0, 0)  # a new UTC day starts from zero


def test_a_job_whose_worker_keeps_dying_fails_after_the_last_attempt(store):
    add()
    now = 100.0
    for _ in range(RULE.max_attempts):  # each worker dies holding the lease
        assert lease(store, now=now, seconds=10.0) is not None
        now += 11.0
    assert lease(store, now=now) is None
    (failed,) = store.failed_jobs()
    assert "stopped during each of" in failed["reason"]


def test_workers_on_their_own_connections_never_lease_one_job_twice(store, own_store):
    n, workers = 40, 4
    add(n)
    taken: list[list[int]] = [[] for _ in range(workers)]
    barrier, errors = threading.Barrier(workers), []

    def work(i):
        mine = open_store(own_store, os.environ.get("REFLECT_STORE", ""), busy_timeout=30.0)
        try:
            barrier.wait(10)
            while (job := mine.lease(f"w{i}", i, "host", 100.0, 60.0, ("reflect",),
                                     RULE.max_attempts)) is not None:
                taken[i].append(job.id)
                assert mine.settle(job, f"w{i}", 100.0, DONE)
        except Exception as e:  # surfaced below
            errors.append(e)
        finally:
            mine.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    ids = [job_id for ids in taken for job_id in ids]
    assert len(ids) == len(set(ids)) == n
    assert store.job_counts() == {"done": n}
