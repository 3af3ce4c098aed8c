"""The store's queries about the injection log: what recall put into which prompt, and
credit by how the iteration after it ended. Shared by both backends (a mixin of
``SQLStore``); what an outcome earns is ``reflect.base.confidence``'s rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reflect.base import confidence
from reflect.base.records import FailureRow, RecallItem
from reflect.store._lessons import LessonQueries
from reflect.store.base import Row, Tx, marks

if TYPE_CHECKING:
    from reflect.base.records import Eligible


class CreditQueries(LessonQueries):
    @staticmethod
    def _log_injections(tx: Tx, run: str, iteration: int, items: list[RecallItem],
                        tokens: int, now: float) -> None:
        """Log what went into the prompt for ``iteration`` (hints of the recent section too)."""
        for rank, i in enumerate(items, 1):
            tx.execute(
                "INSERT INTO injections (run, iteration, lesson_id, fingerprint, section, rank,"
                " score, tokens, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run, iteration, i.id, i.fingerprint, i.section, rank, i.score, tokens, now))
            tx.execute("UPDATE lessons SET injected = injected + 1, last_used = ? WHERE id = ?",
                       (now, i.id))

    @staticmethod
    def _log_eligible(tx: Tx, run: str, iteration: int, eligible: list[Eligible],
                      now: float) -> None:
        """Log each lesson recall would have shown with its arm (``recall.holdout``): once
        per run, where it first was, since a run stays in one arm for a lesson."""
        for e in eligible:  # ``hit``: its family may be in already (a late log, a replay)
            logged = tx.execute(
                "INSERT INTO eligible (run, iteration, lesson_id, family, arm, predicted, ts,"
                " hit) VALUES (?, ?, ?, ?, ?, ?, ?, CASE WHEN EXISTS (SELECT 1 FROM failures"
                " WHERE run = ? AND family = ? AND iteration >= ?) THEN 1 ELSE 0 END)"
                " ON CONFLICT (lesson_id, run) DO NOTHING RETURNING hit",
                (run, iteration, e.lesson_id, e.family, e.arm, e.predicted, now, run, e.family,
                 iteration)).fetchone()
            if logged is not None:
                tx.execute(
                    "INSERT INTO holdout_counts VALUES (?, ?, ?, 1, ?, ?, ?)"
                    " ON CONFLICT (lesson_id, arm) DO UPDATE SET"
                    " runs = holdout_counts.runs + 1, hits = holdout_counts.hits + excluded.hits,"
                    " predicted = holdout_counts.predicted + excluded.predicted,"
                    " last = excluded.last",
                    (e.lesson_id, e.arm, e.family, logged[0], e.predicted, now))

    @staticmethod
    def _mark_followed(tx: Tx, failure: FailureRow) -> None:
        """A failure of a family that a lesson was eligible for earlier in its run: the
        holdout counts it against that lesson's arm."""
        for lesson_id, arm in tx.execute(
                "UPDATE eligible SET hit = 1 WHERE run = ? AND family = ? AND iteration <= ?"
                " AND hit = 0 RETURNING lesson_id, arm",
                (failure["run"], failure["family"], failure["iteration"])).fetchall():
            tx.execute("UPDATE holdout_counts SET hits = hits + 1 WHERE lesson_id = ?"
                       " AND arm = ?", (lesson_id, arm))

    def holdout_arms(self, lesson_ids: list[str] | None = None) -> list[Row]:
        """Per lesson (of ``lesson_ids``, else every one) and arm: the runs it was eligible
        in (``runs``), those its family failed in at or after that point (``hits``), the
        predicted p then (``predicted``, their mean) and when the latest was (``last``)."""
        if lesson_ids == []:
            return []
        ids = lesson_ids or []
        where = f"WHERE lesson_id IN ({marks(ids)})" if ids else ""
        return [dict(r) for r in self._rows(
            f"SELECT lesson_id, family, arm, runs, hits, predicted / runs AS predicted, last"
            f" FROM holdout_counts {where} ORDER BY lesson_id, arm", ids)]

    def _credit_failure(self, tx: Tx, run: str, iteration: int, fingerprint: str) -> None:
        """The iteration failed with ``fingerprint``: credit what was injected before it."""
        for injection_id, lesson_id, injected in self._pending(tx, run, iteration):
            self._credit(tx, injection_id, lesson_id, confidence.for_failure(injected, fingerprint))

    def _credit_success(self, tx: Tx, run: str, iteration: int) -> None:
        pending = self._pending(tx, run, iteration)
        for injection_id, lesson_id, _ in pending:
            self._credit(tx, injection_id, lesson_id, confidence.for_success(len(pending)))

    @staticmethod
    def _pending(tx: Tx, run: str, iteration: int) -> list[Any]:
        return tx.execute(
            "SELECT id, lesson_id, fingerprint FROM injections"
            " WHERE run = ? AND iteration = ? AND outcome = ''", (run, iteration)).fetchall()

    def _credit(self, tx: Tx, injection_id: int, lesson_id: str, earned: confidence.Credit) -> None:
        outcome, wins, losses = earned
        tx.execute("UPDATE injections SET outcome = ? WHERE id = ?", (outcome, injection_id))
        self._add_outcomes(tx, lesson_id, wins, losses)


def recount_holdout(tx: Tx) -> None:
    """The holdout's counts again from its log, after rows of the log were deleted."""
    tx.execute("DELETE FROM holdout_counts")
    tx.execute("INSERT INTO holdout_counts SELECT lesson_id, arm, MAX(family), COUNT(*),"
               " SUM(hit), SUM(predicted), MAX(ts) FROM eligible GROUP BY lesson_id, arm")
