"""What a model call must pass before it is made (a provider's circuit breaker, the day's
spend, the run's calls), and the UTC day spend is counted in. A value the worker makes and
the store applies in the transaction that leases a job (``store/_jobs.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from reflect.base.records import Verdict


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
