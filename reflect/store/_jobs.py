"""The store's queries about the job queue, the circuit breaker, the spend ledger and the
workers' heartbeats: the state that workers on any number of machines share. Shared by
both backends (a mixin of ``SQLStore``); the rules (attempts, backoff: the worker's
``reflection.queue``; the breaker's threshold and the caps: ``limits.Limits``) come in as
values.

Each method a worker calls is one short transaction. Exclusivity: a job is leased by an
UPDATE whose SELECT skips rows another transaction is taking (``SKIP_LOCKED``), and every
later write about the job holds only while ``lease_owner`` is still the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from reflect.base.limits import Limits, day_of
from reflect.base.records import Job, Verdict
from reflect.store._lessons import LessonQueries
from reflect.store.base import Row, Tx, marks

if TYPE_CHECKING:
    from reflect.base.answers import FailedJob

STARTING = 10.0  # seconds a just-started worker gets to register before another is started
FIXES_READ = 50  # a cause's latest fixes a reflection prompt is told, counted by their runs
_SPENT = "SELECT COALESCE(SUM(cost_usd), 0), COALESCE(SUM(calls), 0) FROM spend WHERE day = ?"
_LIVE = "SELECT COUNT(*) FROM workers WHERE heartbeat > ?"


class JobQueries(LessonQueries):  # a finished reflection job writes its lesson
    # -- queueing ----------------------------------------------------------------

    def _enqueue(self, tx: Tx, kind: str, target: str, run: str, now: float) -> bool:
        """Queue a job unless the same one is already queued."""
        # The same lock as a requeue's (``_settle``): on PostgreSQL a job put back while
        # this insert is in flight would otherwise break the one-queued-job index.
        self._lock(tx, f"job:{kind}:{target}")
        return tx.execute(
            "INSERT INTO jobs (kind, target, run, due, created, updated)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (kind, target, run, now, now, now),
        ).rowcount == 1

    # -- a worker's leases -------------------------------------------------------

    def lease(self, owner: str, pid: int, host: str, now: float, seconds: float,
              kinds: tuple[str, ...], max_attempts: int) -> Job | None:
        """Take the next due job of ``kinds`` (or one whose lease ran out) for ``seconds``,
        and write the worker's heartbeat. Two workers never take the same job."""
        with self.write() as tx:
            self._heartbeat(tx, owner, pid, host, now)
            # A job whose worker died on every attempt would otherwise be retaken forever.
            tx.execute(
                "UPDATE jobs SET state = 'failed', lease_owner = '', updated = ?,"
                " reason = 'its worker stopped during each of ' || attempts || ' attempts'"
                " WHERE state = 'leased' AND lease_until < ? AND attempts >= ?",
                (now, now, max_attempts),
            )
            row = tx.execute(
                f"""UPDATE jobs SET state = 'leased', lease_owner = ?, lease_until = ?,
                           attempts = attempts + 1, updated = ?
                    WHERE id = (SELECT id FROM jobs WHERE kind IN ({marks(kinds)}) AND (
                                  (state = 'queued' AND due <= ?)
                                  OR (state = 'leased' AND lease_until < ?))
                                ORDER BY due, id LIMIT 1{self.SKIP_LOCKED})
                    RETURNING id, kind, target, run, attempts""",
                (owner, now + seconds, now, *kinds, now, now),
            ).fetchone()
        if row is None:
            return None
        return Job(int(row["id"]), row["kind"], row["target"], row["run"],
                   int(row["attempts"]))

    def renew_lease(self, job: Job, owner: str, now: float, until: float) -> bool:
        """Hold ``job`` until ``until`` while its work goes on, and write the worker's
        heartbeat; False once the lease is lost (it ran out and another worker took it)."""
        with self.write() as tx:
            tx.execute("UPDATE workers SET heartbeat = ? WHERE id = ?", (now, owner))
            return tx.execute(
                "UPDATE jobs SET lease_until = ? WHERE id = ? AND state = 'leased'"
                " AND lease_owner = ?", (until, job.id, owner)).rowcount == 1

    def settle(self, job: Job, owner: str, now: float, verdict: Verdict) -> bool:
        """Do what ``verdict`` says to a job we hold. False when our lease ran out and
        another worker took it: then the caller must not write its result."""
        with self.write() as tx:
            return self._settle(tx, job, owner, now, verdict)

    def _settle(self, tx: Tx, job: Job, owner: str, now: float, verdict: Verdict) -> bool:
        ours = "WHERE id = ? AND state = 'leased' AND lease_owner = ?"
        if verdict.state != "queued":
            return tx.execute(
                f"UPDATE jobs SET state = ?, reason = ?, updated = ?, lease_owner = '' {ours}",
                (verdict.state, verdict.reason, now, job.id, owner)).rowcount == 1
        self._lock(tx, f"job:{job.kind}:{job.target}")
        # Work for the same target that arrived while we held the job was queued as a
        # second job; the same work, so it folds into ours as we requeue (only one may
        # be queued).
        tx.execute(
            "DELETE FROM jobs WHERE kind = ? AND target = ? AND state = 'queued' AND id != ?"
            " AND EXISTS (SELECT 1 FROM jobs WHERE id = ? AND state = 'leased'"
            " AND lease_owner = ?)",
            (job.kind, job.target, job.id, job.id, owner),
        )
        return tx.execute(
            "UPDATE jobs SET state = 'queued', due = ?, reason = ?, attempts = attempts - ?,"
            f" updated = ?, lease_owner = '' {ours}",
            (verdict.due, verdict.reason, 0 if verdict.attempt else 1, now, job.id, owner),
        ).rowcount == 1

    # -- model calls: breaker and spend ------------------------------------------

    def gate_job(self, job: Job, owner: str, now: float, limits: Limits) -> bool:
        """Before a model call for ``job``: True to make it; else the job is put back or
        skipped as ``limits.verdict`` says, in the same transaction."""
        with self.write() as tx:
            open_until = self._breaker_open_until(tx, limits, now)
            spent, _ = tx.execute(_SPENT, (day_of(now),)).fetchone()
            calls = tx.execute("SELECT COALESCE(SUM(calls), 0) FROM spend WHERE run = ?",
                               (job.run,)).fetchone()[0]
            verdict = limits.verdict(open_until, float(spent), int(calls), now)
            if verdict is not None:
                self._settle(tx, job, owner, now, verdict)
        return verdict is None

    def settle_call(self, job: Job, owner: str, now: float, limits: Limits,
                    cost_usd: float | None, provider_ok: bool | None, verdict: Verdict,
                    lesson: Row | None = None) -> bool:
        """After a model call for ``job``, in one transaction: count it in the day's spend,
        tell the breaker how the provider did (True: it answered; False: a failure worth
        retrying; None: neither, e.g. a bad key), do what ``verdict`` says to the job and,
        while it is still ours, store the model's ``lesson`` for its fingerprint. False
        when the job was no longer ours."""
        with self.write() as tx:
            tx.execute(
                """INSERT INTO spend (day, run, calls, cost_usd) VALUES (?, ?, 1, ?)
                   ON CONFLICT (day, run) DO UPDATE SET calls = spend.calls + 1,
                       cost_usd = spend.cost_usd + excluded.cost_usd""",
                (day_of(now), job.run, cost_usd or 0.0),
            )
            if provider_ok is not None:
                self._breaker_record(tx, limits, provider_ok, now)
            held = self._settle(tx, job, owner, now, verdict)
            if held and lesson is not None:
                self._add_model_lesson(tx, job.target, lesson, now)
        return held

    def _breaker_open_until(self, tx: Tx, limits: Limits, now: float) -> float | None:
        """When the provider may be called again, or None to call it now. Once a cool-down
        is over, the first caller takes the one trial call: the others keep waiting."""
        trial = tx.execute(
            "UPDATE breaker SET open_until = ? WHERE provider = ? AND failures >= ?"
            " AND open_until <= ? RETURNING provider",
            (now + limits.breaker_cooldown, limits.provider, limits.breaker_threshold, now),
        ).fetchone()
        if trial is not None:
            return None
        row = tx.execute("SELECT failures, open_until FROM breaker WHERE provider = ?",
                         (limits.provider,)).fetchone()
        if row is None or row[0] < limits.breaker_threshold:
            return None
        return float(row[1])

    def _breaker_record(self, tx: Tx, limits: Limits, ok: bool, now: float) -> None:
        """A success closes the breaker; enough failures in a row open it for a cool-down.
        After the cool-down one call is let through: if it fails, the breaker reopens."""
        if ok:
            tx.execute("DELETE FROM breaker WHERE provider = ?", (limits.provider,))
            return
        tx.execute(
            """INSERT INTO breaker (provider, failures, open_until) VALUES (?, 1, 0)
               ON CONFLICT (provider) DO UPDATE SET failures = breaker.failures + 1""",
            (limits.provider,),
        )
        tx.execute(
            "UPDATE breaker SET open_until = ? WHERE provider = ? AND failures >= ?",
            (now + limits.breaker_cooldown, limits.provider, limits.breaker_threshold),
        )

    # -- what a reflection job's prompt sees ---------------------------------------

    def reflection_context(self, fingerprint: str, earlier: int, checked: int) -> Row | None:
        """What a reflection prompt sees, read together: the fingerprint's latest failure,
        the ``earlier`` latest other failures of its run before it with their lessons'
        guidance, its ``checked`` latest failures (what a lesson must hold for), its
        active lesson ({} if none) and what got its latest runs past it (``fixes``: run and
        fix, newest first). None when no failure of it is stored any more."""
        with self.write() as tx:
            failure = tx.execute(
                "SELECT * FROM failures WHERE fingerprint = ? ORDER BY seq DESC LIMIT 1",
                (fingerprint,)).fetchone()
            if failure is None:
                return None
            before = tx.execute(
                """SELECT f.error_type, f.message, l.guidance FROM failures f
                   JOIN (SELECT fingerprint, MAX(seq) AS seq FROM failures
                         WHERE run = ? AND seq < ? AND fingerprint != ?
                         GROUP BY fingerprint) latest ON latest.seq = f.seq
                   JOIN lessons l ON l.fingerprint = f.fingerprint AND l.status = 'active'
                   ORDER BY f.seq DESC LIMIT ?""",
                (failure["run"], failure["seq"], fingerprint, earlier)).fetchall()
            failures = tx.execute(
                "SELECT * FROM failures WHERE fingerprint = ? ORDER BY seq DESC LIMIT ?",
                (fingerprint, checked)).fetchall()
            fixes = tx.execute(
                "SELECT run, resolution FROM failures WHERE fingerprint = ? AND resolution != ''"
                " ORDER BY seq DESC LIMIT ?", (fingerprint, FIXES_READ)).fetchall()
            return {
                "failure": dict(failure),
                "failures": [dict(r) for r in failures],
                "earlier": [dict(r) for r in before],
                "lesson": self._active_lesson(tx, fingerprint) or {},
                "fixes": [(r[0], r[1]) for r in fixes],
            }

    # -- workers -------------------------------------------------------------------

    def _heartbeat(self, tx: Tx, owner: str, pid: int, host: str, now: float) -> None:
        tx.execute(
            """INSERT INTO workers (id, pid, host, started, heartbeat) VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (id) DO UPDATE SET heartbeat = excluded.heartbeat""",
            (owner, pid, host, now, now),
        )

    def retire(self, owner: str) -> None:
        """A worker stops: it no longer counts as alive."""
        with self.write() as tx:
            tx.execute("DELETE FROM workers WHERE id = ?", (owner,))

    def claim_worker_start(self, now: float, stale_after: float) -> bool:
        """True when jobs are due, no live worker holds the queue and no other process
        started one a moment ago: the caller then starts one."""
        with self.write() as tx:
            self._lock(tx, "worker_started")
            due = tx.execute(
                "SELECT 1 FROM jobs WHERE (state = 'queued' AND due <= ?)"
                " OR (state = 'leased' AND lease_until < ?) LIMIT 1",
                (now, now),
            ).fetchone()
            if due is None or tx.execute(_LIVE, (now - stale_after,)).fetchone()[0]:
                return False
            last = tx.execute("SELECT value FROM meta WHERE key = 'worker_started'").fetchone()
            if last is not None and float(last[0]) > now - STARTING:
                return False
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('worker_started', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(now),)
            )
            return True

    # -- the queue, as the CLI and status see it -------------------------------------

    def live_workers(self, now: float, stale_after: float) -> int:
        return int(self._value(_LIVE, (now - stale_after,), 0))

    def spent_today(self, now: float) -> tuple[float, int]:
        """The day's spend on model calls, in USD, and how many calls it counts."""
        row = self._row(_SPENT, (day_of(now),))
        assert row is not None  # an aggregate always has its row
        return float(row[0]), int(row[1])

    def job_counts(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self._rows(
            "SELECT state, COUNT(*) FROM jobs GROUP BY state")}

    def failed_jobs(self, limit: int = 10) -> list[FailedJob]:
        return [cast("FailedJob", dict(r)) for r in self._rows(
            "SELECT id, kind, target, run, state, attempts, reason, updated FROM jobs"
            " WHERE state IN ('failed', 'skipped') ORDER BY updated DESC LIMIT ?", (limit,))]
