"""The rules of the job queue, the circuit breaker and the spend ledger.

The state they govern lives in the store (``reflect/store/jobs.py``), never in one
process: any number of workers, on any number of machines, lease from one table, see
one breaker and add to one day's spend. This module says what happens to a job; the
store applies it in one transaction.
"""

from __future__ import annotations

import random

from reflect.records import Job, Verdict

MAX_ATTEMPTS = 5
BACKOFF_BASE = 2.0  # seconds; doubles with each attempt, with jitter
BACKOFF_CAP = 600.0
RETRY_AFTER_CAP = 3600.0
BREAKER_THRESHOLD = 5  # consecutive retryable failures that open the breaker
BREAKER_COOLDOWN = 120.0
HEARTBEAT_STALE = 30.0  # a worker silent this long is taken for dead


def retry(job: Job, now: float, reason: str, retry_after: float | None = None) -> Verdict:
    """After a retryable failure: again after an exponential backoff with jitter (or the
    provider's Retry-After); after the last attempt the job fails with its reason."""
    if job.attempts >= MAX_ATTEMPTS:
        return Verdict("failed", f"{reason} (after {job.attempts} attempts)")
    delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (job.attempts - 1)) * random.uniform(0.5, 1.5)
    if retry_after is not None:  # a far-future Retry-After date must not park a job for days
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP))
    return Verdict("queued", reason, now + delay)
