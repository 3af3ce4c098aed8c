"""The store's queries about lessons: reading them, a person's controls, and every path
that adds one (the worker's model lessons, imports, ``teach``) or brings one back
(``release``). Shared by both backends (a mixin of ``SQLStore``); searching lessons by
their words is each backend's own.

The rules are ``reflect.base.supersession`` (may a lesson supersede another, does it merge into
it) and ``reflect.base.confidence`` (confidence); this module applies them, each in one place:
``_replace`` and ``_supersede`` for supersession, ``_merge`` for merging,
``_add_outcomes`` for confidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from reflect.base.confidence import confidence
from reflect.base.records import LessonRow, RankedLessonRow, new_lesson
from reflect.base.supersession import may_supersede, merges, same_meaning
from reflect.store._vectors import drop_failure_texts
from reflect.store.base import Backend, Row, Tx, insert, lesson_row, marks, protected

if TYPE_CHECKING:
    from reflect.base.answers import LessonVersion, Provenance, SourceFailure

# Exports list the best first; ties broken so the same store always gives the same text.
_BEST_FIRST = "l.confidence DESC, l.evidence DESC, runs DESC, l.id"


class LessonQueries(Backend):
    # -- reading -------------------------------------------------------------------

    def lesson(self, lesson_id: str) -> LessonRow | None:
        row = self._row("SELECT * FROM lessons WHERE id = ?", (lesson_id,))
        return lesson_row(row) if row else None

    def lessons_elsewhere(self, scope: str) -> int:
        """Active lessons of other projects than ``scope``'s: what a recall there never
        shows (global lessons are every scope's)."""
        return int(self._value("SELECT COUNT(*) FROM lessons WHERE status = 'active'"
                               " AND scope NOT IN (?, 'global')", (scope,), 0))

    def lessons(self, status: str | None, min_losses: int, limit: int) -> list[LessonRow]:
        """Lessons newest first (of ``status``, else all); with ``min_losses`` only those
        that failed to prevent their failure at least that often, worst first."""
        where: list[str] = []
        args: list[Any] = []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        order = "seq DESC"
        if min_losses:
            where.append("losses >= ?")
            args.append(min_losses)
            order = "losses DESC, seq DESC"
        sql = "SELECT * FROM lessons" + (f" WHERE {' AND '.join(where)}" if where else "")
        rows = self._rows(f"{sql} ORDER BY {order} LIMIT ?", [*args, limit])
        return [lesson_row(r) for r in rows]

    def lesson_provenance(self, lesson_id: str, fingerprint: str,
                          failures: int) -> Provenance:
        """Where a lesson comes from: its fingerprint's latest ``failures``, the outcomes of
        its injections (outcome -> count) and the other lessons of its fingerprint."""
        return {
            "failures": [cast("SourceFailure", dict(r)) for r in self._rows(
                "SELECT id, run, iteration, error_type, message FROM failures"
                " WHERE fingerprint = ? ORDER BY seq DESC LIMIT ?", (fingerprint, failures))],
            "outcomes": {r[0]: int(r[1]) for r in self._rows(
                "SELECT outcome, COUNT(*) FROM injections WHERE lesson_id = ?"
                " GROUP BY outcome", (lesson_id,))},
            "history": [cast("LessonVersion", dict(r)) for r in self._rows(
                "SELECT id, kind, status, guidance FROM lessons"
                " WHERE fingerprint = ? AND id != ? ORDER BY seq", (fingerprint, lesson_id))],
        }

    def confident_lessons(self, min_confidence: float,
                          also: list[str] | None = None) -> list[RankedLessonRow]:
        """The active lessons with confidence >= ``min_confidence``, every pinned or taught
        one and those of ``also`` (ids), best first; each with the runs its cause failed in
        here."""
        ids = also or []
        named = f" OR l.id IN ({marks(ids)})" if ids else ""
        return [cast("RankedLessonRow", dict(r)) for r in self._rows(
            "SELECT l.*, COALESCE(c.runs, 0) AS runs FROM lessons l"
            " LEFT JOIN fingerprints f ON f.fingerprint = l.fingerprint"
            " LEFT JOIN causes c ON c.cause = f.cause"
            " WHERE l.status = 'active'"
            f" AND (l.confidence >= ? OR {protected('l')}{named})"
            f" ORDER BY {_BEST_FIRST}", (min_confidence, *ids))]

    @staticmethod
    def _active_lesson(tx: Tx, fingerprint: str) -> LessonRow | None:
        row = tx.execute(
            "SELECT * FROM lessons WHERE fingerprint = ? AND status = 'active'"
            " ORDER BY seq DESC LIMIT 1", (fingerprint,)).fetchone()
        return lesson_row(row) if row else None

    # -- the one way each: supersede, merge, judge ------------------------------------

    def _replace(self, tx: Tx, current: LessonRow | None, lesson: LessonRow, now: float,
                 by_person: bool = False) -> bool:
        """Insert ``lesson`` active in place of ``current``, its fingerprint's active
        lesson, if ``may_supersede`` lets it; False (nothing written) when ``current``
        stands."""
        if current is not None and not may_supersede(current, lesson["kind"], by_person):
            return False
        insert(tx, "lessons", {**lesson, "status": "active"})
        if current is not None:
            self._supersede(tx, current["id"], lesson["id"], now)
        return True

    @staticmethod
    def _supersede(tx: Tx, old_id: str, new_id_: str, now: float) -> None:
        """``new_id_`` stands where ``old_id`` stood, which stays in history; callers have
        asked ``may_supersede``."""
        tx.execute("UPDATE lessons SET status = 'superseded', superseded_by = ?, updated = ?"
                   " WHERE id = ?", (new_id_, now, old_id))

    @staticmethod
    def _merge(tx: Tx, lesson_id: str, evidence: int, confidence: float, prior: float,
               now: float) -> None:
        """A lesson that says what ``lesson_id`` says adds its evidence; confidence and prior
        are the higher ones (the prior too: credit recomputes confidence from it)."""
        tx.execute(
            "UPDATE lessons SET evidence = evidence + ?, confidence = GREATEST(confidence, ?),"
            " prior = GREATEST(prior, ?), updated = ? WHERE id = ?",
            (evidence, confidence, prior, now, lesson_id))

    @staticmethod
    def _add_outcomes(tx: Tx, lesson_id: str, wins: float, losses: int,
                      now: float | None = None) -> None:
        """Count outcomes for a lesson and judge it again (``credit.confidence``);
        ``now``: a person's verdict, which updates it."""
        row = tx.execute(
            "UPDATE lessons SET wins = wins + ?, losses = losses + ?,"
            " updated = COALESCE(?, updated) WHERE id = ? RETURNING wins, losses, prior",
            (wins, losses, now, lesson_id)).fetchone()
        if row is not None:  # a recent item's hint may name a lesson deleted since
            tx.execute("UPDATE lessons SET confidence = ? WHERE id = ?",
                       (confidence(row[0], row[1], row[2]), lesson_id))

    # -- lessons added --------------------------------------------------------------

    def add_model_lesson(self, fingerprint: str, lesson: Row, now: float) -> str:
        with self.write() as tx:
            return self._add_model_lesson(tx, fingerprint, lesson, now)

    def _add_model_lesson(self, tx: Tx, fingerprint: str, lesson: Row, now: float) -> str:
        """Store a reviewed model lesson for ``fingerprint``; returns the id that now holds
        it (a pinned or taught lesson stands, and the model's is not kept).

        ``lesson`` has trigger, guidance, category, confidence, quarantine, model,
        prompt_tokens, completion_tokens, cost_usd.
        """
        self._lock(tx, "lessons:" + fingerprint)
        current = self._active_lesson(tx, fingerprint)
        quarantined = bool(lesson["quarantine"])
        if not quarantined and current is not None and merges(current, "model",
                                                               lesson["guidance"]):
            self._merge(tx, current["id"], 1, lesson["confidence"], lesson["confidence"], now)
            return str(current["id"])
        row = new_lesson(
            fingerprint=fingerprint, kind="model", trigger=lesson["trigger"],
            guidance=lesson["guidance"], category=lesson["category"],
            confidence=lesson["confidence"], prior=lesson["confidence"],
            quarantine=lesson["quarantine"], now=now,
            # The lesson it replaces says how severe, where learnt, what error, what worked.
            severity=current["severity"] if current else "medium",
            scope=current["scope"] if current else "global",
            error_text=current["error_text"] if current else "",
            resolution=current["resolution"] if current else "")
        row["model"], row["cost_usd"] = lesson["model"], lesson["cost_usd"]  # what it cost
        row["prompt_tokens"] = lesson["prompt_tokens"]
        row["completion_tokens"] = lesson["completion_tokens"]
        if quarantined:
            insert(tx, "lessons", {**row, "status": "quarantined"})
            return str(row["id"])
        if not self._replace(tx, current, row, now):
            assert current is not None  # only a lesson that stands refuses
            return str(current["id"])
        # It also replaces any other lesson with the same trigger that says something
        # else: the newer word on one situation wins.
        for other in tx.execute(
            "SELECT id, kind, pinned, guidance FROM lessons WHERE status = 'active'"
            " AND id != ? AND lower(trigger) = lower(?)", (row["id"], row["trigger"]),
        ).fetchall():
            if not same_meaning(other["guidance"], row["guidance"]) and may_supersede(
                    other, "model"):
                self._supersede(tx, other["id"], row["id"], now)
        return str(row["id"])

    def import_lessons(self, lessons: list[LessonRow], now: float) -> list[str]:
        """Add validated lessons from another store, in one transaction; for each, what
        became of it: "imported", "merged", "skipped" or "quarantined"."""
        with self.write() as tx:
            return [self._import_lesson(tx, lesson, now) for lesson in lessons]

    def _import_lesson(self, tx: Tx, lesson: LessonRow, now: float) -> str:
        fingerprint = lesson["fingerprint"]
        self._lock(tx, "lessons:" + fingerprint)
        row = lesson
        if lesson["quarantine"]:  # reviewed as a model's lesson is: kept out of recall
            insert(tx, "lessons", {**row, "status": "quarantined"})
            return "quarantined"
        quarantined = tx.execute(
            "SELECT guidance FROM lessons WHERE fingerprint = ? AND status = 'quarantined'",
            (fingerprint,)).fetchall()
        if any(same_meaning(r[0], lesson["guidance"]) for r in quarantined):
            return "skipped"  # a file does not bring back what was quarantined here
        current = self._active_lesson(tx, fingerprint)
        if current is not None and merges(current, lesson["kind"], lesson["guidance"]):
            self._merge(tx, current["id"], lesson["evidence"], lesson["confidence"],
                        lesson["prior"], now)
            return "merged"
        return "imported" if self._replace(tx, current, row, now) else "skipped"

    def add_taught_lesson(self, lesson: LessonRow, now: float) -> LessonRow | None:
        """A person's lesson, in place of the active one of its fingerprint (its trigger);
        quarantined (``lesson["quarantine"]``) it replaces nothing. Returns the pinned
        lesson that stands in its way, if any (then nothing is written)."""
        with self.write() as tx:
            if lesson["quarantine"]:
                insert(tx, "lessons", {**lesson, "status": "quarantined"})
                return None
            self._lock(tx, "lessons:" + lesson["fingerprint"])
            current = self._active_lesson(tx, lesson["fingerprint"])
            return None if self._replace(tx, current, lesson, now, by_person=True) else current

    # -- a person's controls ---------------------------------------------------------

    def set_pinned(self, lesson_id: str, pinned: bool, now: float) -> None:
        with self.write() as tx:
            tx.execute("UPDATE lessons SET pinned = ?, updated = ? WHERE id = ?",
                       (int(pinned), now, lesson_id))

    def add_outcomes(self, lesson_id: str, wins: float, losses: int, now: float) -> None:
        """A person's verdict, counted as outcomes."""
        with self.write() as tx:
            self._add_outcomes(tx, lesson_id, wins, losses, now)

    def quarantine_lesson(self, lesson_id: str, why: str, now: float) -> None:
        """Out of recall with the reason; the lesson it had replaced, if it was the active
        one, stands again."""
        with self.write() as tx:
            was = tx.execute("SELECT status FROM lessons WHERE id = ?", (lesson_id,)).fetchone()
            tx.execute("UPDATE lessons SET status = 'quarantined', quarantine = ?, updated = ?"
                       " WHERE id = ?", (why, now, lesson_id))
            if was is not None and was[0] == "active":
                tx.execute(
                    "UPDATE lessons SET status = 'active', superseded_by = '', updated = ?"
                    " WHERE seq = (SELECT MAX(seq) FROM lessons WHERE superseded_by = ?)",
                    (now, lesson_id))

    def release_lesson(self, lesson: LessonRow, now: float) -> LessonRow | None:
        """Back into recall, in place of whatever stands for its fingerprint meanwhile;
        returns the pinned lesson that stands in its way, if any (then nothing changes)."""
        with self.write() as tx:
            self._lock(tx, "lessons:" + lesson["fingerprint"])
            current = self._active_lesson(tx, lesson["fingerprint"])
            if current is not None and current["id"] != lesson["id"]:
                if not may_supersede(current, lesson["kind"], by_person=True):
                    return current
                self._supersede(tx, current["id"], lesson["id"], now)
            tx.execute("UPDATE lessons SET status = 'active', quarantine = '', updated = ?"
                       " WHERE id = ?", (now, lesson["id"]))
        return None

    def forget_lesson(self, lesson_id: str, fingerprint: str, reason: str, now: float) -> None:
        """Delete a lesson everywhere it lives (the keyword index and vectors go with its
        row, and the vectors of its failures' texts, which it was made of: the failures
        stay, as history), record the removal (never the text) and ``purge``."""
        with self.write() as tx:
            tx.execute("DELETE FROM lessons WHERE id = ?", (lesson_id,))
            drop_failure_texts(tx, "fingerprint = ?", (fingerprint,))
            tx.execute("INSERT INTO removals (lesson_id, fingerprint, reason, ts)"
                       " VALUES (?, ?, ?, ?)", (lesson_id, fingerprint, reason, now))
        self.purge()

    # -- each backend's own -----------------------------------------------------------

    def lessons_by_words(self, terms: list[str], limit: int) -> list[LessonRow]:
        """The ``limit`` lessons whose texts best match all of ``terms``, best first."""
        raise NotImplementedError

    def purge(self) -> None:
        """After a deletion: leave no deleted text in the store's indexes and logs."""
        raise NotImplementedError
