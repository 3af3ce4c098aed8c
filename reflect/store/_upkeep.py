"""The store's queries for upkeep: the lessons it may let go, and deleting them with old
history. Shared by both backends (a mixin of ``SQLStore``); giving the space back and
measuring the store are each backend's own. The rules (which lessons are weak, how old
is old, how many failures to keep) are upkeep's, passed in as values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reflect.base.records import LessonRow
from reflect.store._credit import recount_holdout
from reflect.store.base import Backend, Tx, lesson_row, protected, put_meta

if TYPE_CHECKING:
    from reflect.base.answers import Footprint


class UpkeepQueries(Backend):
    def aging_lessons(self, created_before: float) -> list[LessonRow]:
        """Lessons upkeep may let go: neither pinned nor taught, created before
        ``created_before`` (their grace is over)."""
        return [lesson_row(r) for r in self._rows(
            "SELECT id, fingerprint, confidence, last_used, updated FROM lessons"
            f" WHERE NOT {protected()} AND created < ?", (created_before,))]

    def prune(self, weak: list[LessonRow], now: float, cutoff: float,
              keep: int | None) -> tuple[int, int]:
        """Delete the ``weak`` lessons (each removal recorded, never its text), the
        history older than ``cutoff`` and, with ``keep``, the raw history but its ``keep``
        newest rows of each kind (failures, injections, benign exits, steps that worked,
        cached error texts); lessons and the per-cause counts stay whatever goes. Returns
        the failures and the injections deleted; ``purge`` then clears the indexes."""
        with self.write() as tx:
            for r in weak:
                tx.execute("DELETE FROM lessons WHERE id = ?", (r["id"],))
                tx.execute(
                    "INSERT INTO removals (lesson_id, fingerprint, reason, ts)"
                    " VALUES (?, ?, 'low confidence', ?)", (r["id"], r["fingerprint"], now))
            failures = tx.execute("DELETE FROM failures WHERE ts < ?", (cutoff,)).rowcount
            injections = tx.execute("DELETE FROM injections WHERE ts < ?", (cutoff,)).rowcount
            tx.execute("DELETE FROM eligible WHERE ts < ?", (cutoff,))
            if keep is not None:  # the oldest first
                failures += _keep_newest(tx, "failures", "seq", keep)
                injections += _keep_newest(tx, "injections", "id", keep)
                _keep_newest(tx, "eligible", "id", keep)
                _keep_newest(tx, "benign", "seq", keep)
                _keep_newest(tx, "successes", "seq", keep)
                # The goals of the runs kept are what similar runs are found by.
                _keep_newest(tx, "query_vectors", "created", keep,
                             "key NOT IN (SELECT goal_key FROM runs)")
            recount_holdout(tx)
            tx.execute("DELETE FROM jobs WHERE state IN ('done', 'failed', 'skipped')"
                       " AND updated < ?", (cutoff,))
            tx.execute("DELETE FROM query_vectors WHERE created < ?", (cutoff,))
            put_meta(tx, "consolidated", str(now))
        return failures, injections

    def consolidated_at(self) -> float | None:
        """When upkeep last ran, if ever."""
        value = self._value("SELECT value FROM meta WHERE key = 'consolidated'")
        return None if value is None else float(value)

    # -- each backend's own -----------------------------------------------------------

    def reclaim(self) -> int:
        """Give the space of deleted rows back to the file system; the bytes freed."""
        raise NotImplementedError

    def footprint(self) -> Footprint:
        """Where the store is ("path"), its size on disk ("bytes") and how many failures it
        holds ("failures")."""
        raise NotImplementedError


def _keep_newest(tx: Tx, table: str, order: str, keep: int, among: str = "") -> int:
    """Delete the rows of ``table`` (those that match ``among``) but the ``keep`` newest."""
    where = f"{among} AND " if among else ""
    return tx.execute(
        f"DELETE FROM {table} WHERE {where}{order} <= (SELECT {order} FROM {table}"
        f" {'WHERE ' + among if among else ''} ORDER BY {order} DESC LIMIT 1 OFFSET ?)",
        (keep,)).rowcount
