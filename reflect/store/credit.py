"""The store's queries about the injection log: what recall put into which prompt, and
credit by how the iteration after it ended. Shared by both backends (a mixin of
``SQLStore``); what an outcome earns is ``reflect.credit``'s rule."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reflect import credit
from reflect.records import RecallItem
from reflect.store.base import Row, Tx, marks
from reflect.store.lessons import LessonQueries

if TYPE_CHECKING:
    from reflect.recall.holdout import Eligible


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
        for e in eligible:
            tx.execute(
                "INSERT INTO eligible (run, iteration, lesson_id, family, arm, predicted, ts)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (lesson_id, run) DO NOTHING",
                (run, iteration, e.lesson_id, e.family, e.arm, e.predicted, now))

    def holdout_arms(self, lesson_ids: list[str] | None = None) -> list[Row]:
        """Per lesson (of ``lesson_ids``, else every one) and arm: the runs it was eligible
        in (``runs``), those its family failed in at or after that point (``hits``) and
        the predicted p then (``predicted``, their mean), and the latest row's id
        (``last``)."""
        if lesson_ids == []:
            return []
        ids = lesson_ids or []
        where = f"WHERE e.lesson_id IN ({marks(ids)})" if ids else ""
        return [dict(r) for r in self._rows(
            f"""SELECT e.lesson_id, MAX(e.family) AS family, e.arm, COUNT(*) AS runs,
                   SUM(CASE WHEN EXISTS (SELECT 1 FROM failures f WHERE f.run = e.run
                       AND f.family = e.family AND f.iteration >= e.iteration)
                       THEN 1 ELSE 0 END) AS hits, AVG(e.predicted) AS predicted,
                   MAX(e.id) AS last
                FROM eligible e {where} GROUP BY e.lesson_id, e.arm
                ORDER BY e.lesson_id, e.arm""", ids)]

    def _credit_failure(self, tx: Tx, run: str, iteration: int, fingerprint: str) -> None:
        """The iteration failed with ``fingerprint``: credit what was injected before it."""
        for injection_id, lesson_id, injected in self._pending(tx, run, iteration):
            self._credit(tx, injection_id, lesson_id, credit.for_failure(injected, fingerprint))

    def _credit_success(self, tx: Tx, run: str, iteration: int) -> None:
        pending = self._pending(tx, run, iteration)
        for injection_id, lesson_id, _ in pending:
            self._credit(tx, injection_id, lesson_id, credit.for_success(len(pending)))

    @staticmethod
    def _pending(tx: Tx, run: str, iteration: int) -> list[Any]:
        return tx.execute(
            "SELECT id, lesson_id, fingerprint FROM injections"
            " WHERE run = ? AND iteration = ? AND outcome = ''", (run, iteration)).fetchall()

    def _credit(self, tx: Tx, injection_id: int, lesson_id: str, earned: credit.Credit) -> None:
        outcome, wins, losses = earned
        tx.execute("UPDATE injections SET outcome = ? WHERE id = ?", (outcome, injection_id))
        self._add_outcomes(tx, lesson_id, wins, losses)
