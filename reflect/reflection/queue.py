"""The rules of the job queue, the circuit breaker and the spend ledger.

The state they govern lives in the store (``reflect/store/jobs.py``), never in one
process: any number of workers, on any number of machines, lease from one table, see
one breaker and add to one day's spend. This module says what happens to a job; the
store applies it in one transaction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime

MAX_ATTEMPTS = 5
BACKOFF_BASE = 2.0  # seconds; doubles with each attempt, with jitter
BACKOFF_CAP = 600.0
RETRY_AFTER_CAP = 3600.0
BREAKER_THRESHOLD = 5  # consecutive retryable failures that open the breaker
BREAKER_COOLDOWN = 120.0
HEARTBEAT_STALE = 30.0  # a worker silent this long is taken for dead


@dataclass
class Job:
    id: int
    kind: str
    target: str
    run: str
    attempts: int


@dataclass(frozen=True)
class Verdict:
    """What becomes of a leased job: it ends ``done``, ``failed`` or ``skipped`` with its
    reason, or is ``queued`` again at ``due``; ``attempt=False`` puts it back untouched
    (the try did not use up an attempt)."""

    state: str
    reason: str = ""
    due: float = 0.0
    attempt: bool = True


DONE = Verdict("done")


def retry(job: Job, now: float, reason: str, retry_after: float | None = None) -> Verdict:
    """After a retryable failure: again after an exponential backoff with jitter (or the
    provider's Retry-After); after the last attempt the job fails with its reason."""
    if job.attempts >= MAX_ATTEMPTS:
        return Verdict("failed", f"{reason} (after {job.attempts} attempts)")
    delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (job.attempts - 1)) * random.uniform(0.5, 1.5)
    if retry_after is not None:  # a far-future Retry-After date must not park a job for days
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP))
    return Verdict("queued", reason, now + delay)


def postpone(until: float, reason: str) -> Verdict:
    """Put a job back untouched until ``until`` (breaker open, spend cap)."""
    return Verdict("queued", reason, until, attempt=False)


@dataclass(frozen=True)
class Limits:
    """What a model call must pass before it is made, shared by every worker through the
    store: its provider's circuit breaker (``breaker_threshold`` retryable failures in a
    row open it for ``breaker_cooldown`` seconds), the day's spend, the run's calls."""

    provider: str
    max_cost_usd: float | None
    max_calls_per_run: int
    breaker_threshold: int
    breaker_cooldown: float

    def verdict(self, open_until: float | None, spent_usd: float, run_calls: int,
                now: float) -> Verdict | None:
        """None: make the call; else what becomes of the job. ``open_until``: when the
        breaker lets a call through again (None: now)."""
        if open_until is not None:
            return postpone(open_until, f"{self.provider} circuit open")
        if self.max_cost_usd is not None and spent_usd >= self.max_cost_usd:
            return postpone(next_day(now), f"daily spend cap ${self.max_cost_usd:.2f} reached")
        if run_calls >= self.max_calls_per_run:
            return Verdict("skipped",
                           f"run reached its cap of {self.max_calls_per_run} model calls")
        return None


# -- spend is counted per UTC day ----------------------------------------------------


def day_of(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


def next_day(now: float) -> float:
    start = datetime.strptime(day_of(now), "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    return start + 86400
