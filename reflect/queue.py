"""The durable job queue, the circuit breaker and the spend ledger, all in the store.

State that several processes share lives here, never in one process: two
workers lease from one table, see one breaker and add to one day's spend.
"""

from __future__ import annotations

import random
import sqlite3
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


def enqueue(conn: sqlite3.Connection, kind: str, target: str, run: str, now: float) -> bool:
    """Queue a job unless the same one is already pending; call inside a write transaction."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO jobs (kind, target, run, due, created, updated)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (kind, target, run, now, now, now),
    )
    return cursor.rowcount == 1


def lease(conn: sqlite3.Connection, owner: str, now: float, seconds: float,
          kinds: tuple[str, ...]) -> Job | None:
    """Take the next due job (or one whose lease ran out) for ``seconds``; inside a write
    transaction, so two workers never take the same job."""
    # A job whose worker died on every attempt would otherwise be retaken forever.
    conn.execute(
        "UPDATE jobs SET state = 'failed', lease_owner = '', updated = ?,"
        " reason = 'its worker stopped during each of ' || attempts || ' attempts'"
        " WHERE state = 'leased' AND lease_until < ? AND attempts >= ?",
        (now, now, MAX_ATTEMPTS),
    )
    marks = ", ".join("?" * len(kinds))
    row = conn.execute(
        f"""UPDATE jobs SET state = 'leased', lease_owner = ?, lease_until = ?,
                   attempts = attempts + 1, updated = ?
            WHERE id = (SELECT id FROM jobs WHERE kind IN ({marks}) AND (
                          (state = 'queued' AND due <= ?) OR (state = 'leased' AND lease_until < ?))
                        ORDER BY due, id LIMIT 1)
            RETURNING id, kind, target, run, attempts""",
        (owner, now + seconds, now, *kinds, now, now),
    ).fetchone()
    return Job(*row) if row else None


def finish(conn: sqlite3.Connection, job: Job, owner: str, now: float, state: str = "done",
           reason: str = "") -> bool:
    """End a job we still hold. False when our lease ran out and another worker took it:
    then the caller must not write its result."""
    cursor = conn.execute(
        "UPDATE jobs SET state = ?, reason = ?, updated = ?, lease_owner = ''"
        " WHERE id = ? AND state = 'leased' AND lease_owner = ?",
        (state, reason, now, job.id, owner),
    )
    return cursor.rowcount == 1


def retry_later(conn: sqlite3.Connection, job: Job, owner: str, now: float, reason: str,
                retry_after: float | None = None) -> str:
    """Requeue after a retryable failure with exponential backoff and jitter (or the
    provider's Retry-After); after the last attempt the job fails with its reason."""
    if job.attempts >= MAX_ATTEMPTS:
        finish(conn, job, owner, now, "failed", f"{reason} (after {job.attempts} attempts)")
        return "failed"
    delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (job.attempts - 1)) * random.uniform(0.5, 1.5)
    if retry_after is not None:  # a far-future Retry-After date must not park a job for days
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP))
    _drop_queued_twin(conn, job, owner)
    conn.execute(
        "UPDATE jobs SET state = 'queued', due = ?, reason = ?, updated = ?, lease_owner = ''"
        " WHERE id = ? AND lease_owner = ?",
        (now + delay, reason, now, job.id, owner),
    )
    return "queued"


def postpone(conn: sqlite3.Connection, job: Job, owner: str, until: float, reason: str,
             now: float) -> None:
    """Put a job back untouched (breaker open, spend cap): it does not use up an attempt."""
    _drop_queued_twin(conn, job, owner)
    conn.execute(
        "UPDATE jobs SET state = 'queued', due = ?, reason = ?, attempts = attempts - 1,"
        " updated = ?, lease_owner = '' WHERE id = ? AND lease_owner = ?",
        (until, reason, now, job.id, owner),
    )


def _drop_queued_twin(conn: sqlite3.Connection, job: Job, owner: str) -> None:
    """Work for the same target that arrived while we held the job was queued as a second
    job; the same work, so it folds into ours as we requeue (only one may be queued)."""
    conn.execute(
        "DELETE FROM jobs WHERE kind = ? AND target = ? AND state = 'queued' AND id != ?"
        " AND EXISTS (SELECT 1 FROM jobs WHERE id = ? AND state = 'leased' AND lease_owner = ?)",
        (job.kind, job.target, job.id, job.id, owner),
    )


# -- circuit breaker -----------------------------------------------------------


def breaker_open_until(conn: sqlite3.Connection, provider: str, now: float) -> float | None:
    """When the provider may be called again, or None to call it now. Once a cool-down
    is over, the first caller takes the one trial call: the others keep waiting."""
    row = conn.execute(
        "SELECT failures, open_until FROM breaker WHERE provider = ?", (provider,)
    ).fetchone()
    if row is None or row[0] < BREAKER_THRESHOLD:
        return None
    if row[1] > now:
        return row[1]
    conn.execute("UPDATE breaker SET open_until = ? WHERE provider = ?",
                 (now + BREAKER_COOLDOWN, provider))
    return None


def breaker_record(conn: sqlite3.Connection, provider: str, ok: bool, now: float) -> None:
    """A success closes the breaker; enough failures in a row open it for a cool-down.
    After the cool-down one call is let through: if it fails, the breaker reopens."""
    if ok:
        conn.execute("DELETE FROM breaker WHERE provider = ?", (provider,))
        return
    conn.execute(
        """INSERT INTO breaker (provider, failures, open_until) VALUES (?, 1, 0)
           ON CONFLICT (provider) DO UPDATE SET failures = failures + 1""",
        (provider,),
    )
    conn.execute(
        "UPDATE breaker SET open_until = ? WHERE provider = ? AND failures >= ?",
        (now + BREAKER_COOLDOWN, provider, BREAKER_THRESHOLD),
    )


# -- spend ---------------------------------------------------------------------


def day_of(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


def next_day(now: float) -> float:
    start = datetime.strptime(day_of(now), "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
    return start + 86400


def record_spend(conn: sqlite3.Connection, run: str, cost: float | None, now: float) -> None:
    conn.execute(
        """INSERT INTO spend (day, run, calls, cost_usd) VALUES (?, ?, 1, ?)
           ON CONFLICT (day, run) DO UPDATE SET calls = calls + 1,
                                                cost_usd = cost_usd + excluded.cost_usd""",
        (day_of(now), run, cost or 0.0),
    )


def spent_today(conn: sqlite3.Connection, now: float) -> tuple[float, int]:
    cost, calls = conn.execute(
        "SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(calls), 0) FROM spend WHERE day = ?",
        (day_of(now),),
    ).fetchone()
    return cost, calls


def run_calls(conn: sqlite3.Connection, run: str) -> int:
    return conn.execute(
        "SELECT COALESCE(SUM(calls), 0) FROM spend WHERE run = ?", (run,)
    ).fetchone()[0]


# -- workers -------------------------------------------------------------------


def heartbeat(conn: sqlite3.Connection, worker: str, pid: int, host: str, now: float) -> None:
    conn.execute(
        """INSERT INTO workers (id, pid, host, started, heartbeat) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (id) DO UPDATE SET heartbeat = excluded.heartbeat""",
        (worker, pid, host, now, now),
    )


def retire(conn: sqlite3.Connection, worker: str) -> None:
    conn.execute("DELETE FROM workers WHERE id = ?", (worker,))


def live_workers(conn: sqlite3.Connection, now: float, stale_after: float) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM workers WHERE heartbeat > ?", (now - stale_after,)
    ).fetchone()[0]


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())


def failed_jobs(conn: sqlite3.Connection, limit: int = 10) -> list[dict]:
    rows = conn.execute(
        "SELECT id, kind, target, run, state, attempts, reason, updated FROM jobs"
        " WHERE state IN ('failed', 'skipped') ORDER BY updated DESC LIMIT ?",
        (limit,),
    )
    return [dict(row) for row in rows]

