"""The rules of the job queue, the circuit breaker and the spend ledger.

The state they govern lives in the store (``reflect/store/_jobs.py``), never in one
process: any number of workers, on any number of machines, lease from one table, see
one breaker and add to one day's spend. This module says what happens to a job; the
store applies it in one transaction.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from reflect.base.records import Job, Verdict

HEARTBEAT_STALE = 30.0  # a worker silent this long is taken for dead
POLL = 1.0  # seconds between a worker's looks at an empty queue, and at a running job's lease


@dataclass(frozen=True)
class Retries:
    """The rule of retries. A job is tried ``max_attempts`` times; after a retryable
    failure it waits a backoff that doubles from ``backoff_base`` seconds up to
    ``backoff_cap``, scaled by a factor drawn from 1 ± ``jitter`` (workers that failed
    together do not retry together), or the provider's Retry-After, up to
    ``retry_after_cap``. ``breaker_threshold`` retryable failures in a row open a
    provider's circuit breaker for ``breaker_cooldown`` seconds."""

    max_attempts: int = 5
    backoff_base: float = 2.0
    backoff_cap: float = 600.0
    retry_after_cap: float = 3600.0
    jitter: float = 0.5
    breaker_threshold: int = 5
    breaker_cooldown: float = 120.0

    def retry(self, job: Job, now: float, reason: str,
              retry_after: float | None = None) -> Verdict:
        """After a retryable failure: again after the backoff (or the provider's
        Retry-After); after the last attempt the job fails with its reason."""
        if job.attempts >= self.max_attempts:
            return Verdict("failed", f"{reason} (after {job.attempts} attempts)")
        delay = min(self.backoff_cap, self.backoff_base * 2 ** (job.attempts - 1))
        delay *= random.uniform(1 - self.jitter, 1 + self.jitter)
        if retry_after is not None:  # a far-future Retry-After date must not park a job for days
            delay = max(delay, min(retry_after, self.retry_after_cap))
        return Verdict("queued", reason, now + delay)
