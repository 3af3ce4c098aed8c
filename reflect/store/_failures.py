"""The store's queries about failures: capture, reading them back, resolving them,
clearing a run. Shared by both backends (a mixin of ``SQLStore``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from reflect.base.records import FailureRow, LessonRow, RecallItem
from reflect.base.text import clip, text_key
from reflect.store._credit import CreditQueries, recount_holdout
from reflect.store._jobs import JobQueries
from reflect.store._vectors import drop_failure_texts, error_query
from reflect.store.base import Row, Tx, failure_row, insert, lesson_row, marks, protected
from reflect.store.runs import MAX_GOAL_CHARS, RunQueries

if TYPE_CHECKING:
    from reflect.base.records import Eligible, InjectionRow

EMBED_TARGET = "pending"  # one embed job covers everything that lacks a vector


class FailureQueries(CreditQueries, JobQueries, RunQueries):
    def _newest(self, table: str, order: str, limit: int, tests: dict[str, object],
                columns: str = "*") -> list[Row]:
        """Rows of ``table``, newest first by ``order``; ``tests`` maps an SQL condition with
        one placeholder to its value, and a None value leaves the condition out."""
        given = {sql: value for sql, value in tests.items() if value is not None}
        where = f" WHERE {' AND '.join(given)}" if given else ""
        return [dict(r) for r in self._rows(
            f"SELECT {columns} FROM {table}{where} ORDER BY {order} DESC LIMIT ?",
            [*given.values(), limit])]

    # -- capture ---------------------------------------------------------------

    def add_failure(self, failure: FailureRow, lesson: LessonRow, reflect: bool = False,
                    embed: bool = False, credit_outcome: bool = True,
                    member: str = "") -> tuple[FailureRow, LessonRow]:
        """Insert a failure and link it to its fingerprint's lesson, in one transaction.

        ``failure["iteration"]`` may be None: the run's next number is taken
        inside the transaction. The lesson is only inserted when the
        fingerprint has no active lesson yet. Jobs are queued in the same
        transaction, so none can be lost: with ``reflect`` a reflection job for a
        fingerprint that has only its heuristic lesson; with ``embed`` vectors
        for the error's and the goal's texts. A new run is ``member``'s. Returns the stored
        rows: a step stored before (``failure["step"]``) is not stored again, and its rows
        are returned.
        """
        fp = failure["fingerprint"]
        with self.write() as tx:
            self._lock(tx, "run:" + failure["run"])
            known = self._stored_step(tx, "failures", failure.get("step"))
            if known is not None:
                stored = failure_row(known)
                return stored, self._linked_lesson(tx, stored)
            self._lock(tx, "lessons:" + fp)
            iteration = failure["iteration"]
            if iteration is None:
                iteration = failure["iteration"] = self._next_iteration(tx, failure["run"])
            scope = lesson.get("scope", "global")  # kept-aside records may lack it
            self._register_run(tx, failure["run"], failure["goal"], scope, failure["ts"],
                               member)
            row = self._active_lesson(tx, fp)
            if row is None and lesson.get("quarantine"):
                # A hostile heuristic lesson (capture's review): kept for a person, never
                # recalled; the failure links to it, one for the fingerprint.
                row = self._one_lesson(
                    tx, "SELECT * FROM lessons WHERE fingerprint = ? AND status ="
                    " 'quarantined' AND kind = 'heuristic' ORDER BY seq DESC", fp)
                if row is None:
                    insert(tx, "lessons", {**lesson, "status": "quarantined"})
                    row = self._one_lesson(tx, "SELECT * FROM lessons WHERE id = ?", lesson["id"])
            elif row is None:
                insert(tx, "lessons", lesson)
                row = self._active_lesson(tx, fp)
            assert row is not None  # inserted just now
            failure["lesson_id"] = row["id"]
            new_run, new_family_run = (tx.execute(
                f"SELECT 1 FROM failures WHERE {key} = ? AND run = ? LIMIT 1",
                (failure[key], failure["run"]),
            ).fetchone() is None for key in ("cause", "family"))
            stored = failure_row(insert(tx, "failures", failure, returning="*").fetchone())
            self._mark_followed(tx, failure)
            tx.execute("INSERT INTO fingerprints VALUES (?, ?) ON CONFLICT DO NOTHING",
                       (fp, failure["cause"]))
            tx.execute(
                """INSERT INTO causes VALUES (?, 1, 1, ?) ON CONFLICT (cause)
                   DO UPDATE SET runs = causes.runs + ?, failures = causes.failures + 1,
                   last_seen = ?""",
                (failure["cause"], failure["ts"], int(new_run), failure["ts"]),
            )
            tx.execute(
                """INSERT INTO families VALUES (?, 1, 1, ?) ON CONFLICT (family)
                   DO UPDATE SET runs = families.runs + ?, failures = families.failures + 1,
                   last_seen = ?""",
                (failure["family"], failure["ts"], int(new_family_run), failure["ts"]),
            )
            if credit_outcome:
                self._credit_failure(tx, failure["run"], iteration, fp)
            # A pinned lesson is never superseded: no model is asked for another.
            if reflect and row["kind"] == "heuristic" and not row["pinned"]:
                self._enqueue(tx, "reflect", fp, failure["run"], failure["ts"])
            if embed:  # the error's vector, and the goal's (by which runs are compared)
                self._queue_texts(tx, [error_query(failure), clip(failure["goal"],
                                                                  MAX_GOAL_CHARS)],
                                  failure["ts"])
        return stored, row

    def cause_fingerprints(self, cause: str, scope: str) -> list[str]:
        """The fingerprints failures of ``cause`` are kept under in ``scope``'s runs, the
        latest seen first."""
        return [r["fingerprint"] for r in self._rows(
            "SELECT f.fingerprint FROM failures f JOIN runs r ON r.run = f.run"
            " WHERE f.cause = ? AND r.scope = ? GROUP BY f.fingerprint"
            " ORDER BY MAX(f.seq) DESC", (cause, scope))]

    def _linked_lesson(self, tx: Tx, failure: FailureRow) -> LessonRow:
        """The lesson a stored failure is shown with: its fingerprint's active one, else
        the one it was linked to."""
        found = self._active_lesson(tx, failure["fingerprint"]) or self._one_lesson(
            tx, "SELECT * FROM lessons WHERE id = ?", failure["lesson_id"])
        assert found is not None  # lessons of stored failures are kept
        return found

    @staticmethod
    def _one_lesson(tx: Tx, query: str, value: str) -> LessonRow | None:
        found = tx.execute(query + " LIMIT 1", (value,)).fetchone()
        return lesson_row(found) if found else None

    def queue_texts(self, texts: list[str], now: float) -> None:
        """Ask the worker for these texts' vectors (goals, error lines)."""
        with self.write() as tx:
            self._queue_texts(tx, texts, now)

    def _queue_texts(self, tx: Tx, texts: list[str], now: float) -> None:
        added = sum(
            tx.execute(
                "INSERT INTO query_vectors (key, text, created) VALUES (?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (text_key(t), t, now),
            ).rowcount
            for t in texts
        )
        if added:
            self._enqueue(tx, "embed", EMBED_TARGET, "", now)

    def cached_scope(self, key: str) -> str | None:
        """A project's scope as capture derived it (``reflect.capture.scope``), by its key."""
        cached = self._value("SELECT value FROM meta WHERE key = ?", (key,))
        return None if cached is None else str(cached)

    def cache_scope(self, key: str, scope: str) -> None:
        with self.write() as tx:
            tx.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT DO NOTHING", (key, scope))

    # -- reading ---------------------------------------------------------------

    def recent_failures(self, run: str, before_iteration: int | None,
                        window: int) -> list[FailureRow]:
        """The run's latest ``window`` failures, newest first by sequence."""
        return [failure_row(r) for r in self._recent(run, before_iteration, window, "*")]

    def recent_causes(self, run: str, before_iteration: int | None,
                      window: int) -> list[Row]:
        """The same failures read lean, for a recall's window: id, fingerprint, family."""
        return self._recent(run, before_iteration, window, "id, fingerprint, family")

    def recent_actions(self, run: str, before_iteration: int | None, window: int) -> list[str]:
        """The actions of the same failures."""
        return [r["action"] for r in self._recent(run, before_iteration, window, "action")]

    def _recent(self, run: str, before_iteration: int | None, window: int,
                columns: str) -> list[Row]:
        return self._newest("failures", "seq", window,
                            {"run = ?": run, "iteration < ?": before_iteration}, columns)

    def failures_by_id(self, ids: list[str]) -> dict[str, FailureRow]:
        if not ids:
            return {}
        return {r["id"]: failure_row(r) for r in self._rows(
            f"SELECT * FROM failures WHERE id IN ({marks(ids)})", ids)}

    def active_lessons(self, fingerprints: list[str]) -> dict[str, LessonRow]:
        """The lesson recall shows for each fingerprint."""
        if not fingerprints:
            return {}
        rows = self._rows(
            f"SELECT * FROM lessons WHERE status = 'active'"
            f" AND fingerprint IN ({marks(fingerprints)}) ORDER BY seq",
            fingerprints,
        )
        return {r["fingerprint"]: lesson_row(r) for r in rows}

    def failure(self, failure_id: str) -> FailureRow | None:
        row = self._row("SELECT * FROM failures WHERE id = ?", (failure_id,))
        return failure_row(row) if row else None

    def failures(self, run: str | None, limit: int) -> list[FailureRow]:
        return [failure_row(r) for r in self._newest("failures", "seq", limit, {"run = ?": run})]

    def count_by(self, column: str, run: str | None) -> list[tuple[str, int]]:
        assert column in {"category", "error_type", "run", "fingerprint"}
        where, args = ("WHERE run = ?", [run]) if run is not None else ("", [])
        rows = self._rows(
            f"SELECT {column}, COUNT(*) AS n FROM failures {where} "
            f"GROUP BY {column} ORDER BY n DESC, {column}",
            args,
        )
        return [(r[0], int(r[1])) for r in rows]

    def has_run(self, run: str) -> bool:
        return self._row("SELECT 1 FROM failures WHERE run = ? LIMIT 1", (run,)) is not None

    # -- changes ---------------------------------------------------------------

    def record_injections(self, run: str, iteration: int, items: list[RecallItem], tokens: int,
                          now: float, wait: float | None = None,
                          eligible: list[Eligible] | None = None) -> None:
        """What went into the prompt for ``iteration``, and (``eligible``) every lesson of
        an earlier run recall would have shown there, with its holdout arm."""
        with self.write(wait) as tx:
            self._log_injections(tx, run, iteration, items, tokens, now)
            self._log_eligible(tx, run, iteration, eligible or [], now)

    def injections(self, run: str | None, limit: int) -> list[InjectionRow]:
        return cast("list[InjectionRow]",
                    self._newest("injections", "id", limit, {"run = ?": run}))

    def resolve(self, run: str, iteration: int, action: str, resolutions: dict[str, str],
                now: float, reflect: bool = False, credit_outcome: bool = True,
                step: str | None = None) -> None:
        """``iteration`` succeeded with ``action``: credit what was injected before it, keep
        the step (it may be what changed before a rerun), give each failure in
        ``resolutions`` (id -> what worked) its text, and with ``reflect`` queue a
        revision of each of their lessons. A step stored before changes nothing."""
        with self.write() as tx:
            self._lock(tx, "run:" + run)
            if self._stored_step(tx, "successes", step) is not None:
                return
            if credit_outcome:
                self._credit_success(tx, run, iteration)
            tx.execute("INSERT INTO successes (run, iteration, action, ts, step)"
                       " VALUES (?, ?, ?, ?, ?)", (run, iteration, action, now, step))
            for failure_id, text in resolutions.items():
                found = tx.execute(  # a failure of this run's: no other run's success is its fix
                    "UPDATE failures SET resolution = ? WHERE id = ? AND run = ?"
                    " RETURNING fingerprint", (text, failure_id, run)).fetchone()
                if found is None:
                    continue
                fingerprint = found[0]
                tx.execute(
                    "UPDATE lessons SET resolution = ?, updated = ?"
                    " WHERE fingerprint = ? AND status = 'active'",
                    (text, now, fingerprint),
                )
                if reflect:
                    self._enqueue(tx, "reflect", fingerprint, run, now)

    def clear(self, run: str | None) -> int:
        """Delete one run's failures (or everything), and the lessons learnt only from them;
        a person's taught lessons stay."""
        with self.write() as tx:
            where, args = ("WHERE run = ?", (run,)) if run is not None else ("", ())
            if run is None:
                tx.execute("DELETE FROM query_vectors")
            else:
                drop_failure_texts(tx, "run = ?", args)
            n = tx.execute(f"DELETE FROM failures {where}", args).rowcount
            for table in ("injections", "eligible", "benign", "successes", "runs"):
                tx.execute(f"DELETE FROM {table} {where}", args)
            recount_holdout(tx)
            kept = "(SELECT DISTINCT fingerprint FROM failures)"
            tx.execute(
                f"DELETE FROM lessons WHERE NOT {protected()} AND fingerprint NOT IN {kept}"
            )
            tx.execute(f"DELETE FROM jobs WHERE kind = 'reflect' AND target NOT IN {kept}")
            tx.execute("DELETE FROM fingerprints")
            tx.execute("INSERT INTO fingerprints SELECT DISTINCT fingerprint, cause"
                       " FROM failures")
            for key, table in (("cause", "causes"), ("family", "families")):
                tx.execute(f"DELETE FROM {table}")
                tx.execute(f"INSERT INTO {table} SELECT {key}, COUNT(DISTINCT run), COUNT(*),"
                           f" MAX(ts) FROM failures GROUP BY {key}")
        self.purge()
        return n
