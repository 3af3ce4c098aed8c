"""The store's queries for the evaluation's baseline blocks (``reflect.eval._baselines``).
Shared by both backends (a mixin of ``SQLStore``)."""

from __future__ import annotations

from reflect.base.records import FailureRow, LessonRow
from reflect.store.base import Backend, failure_row, lesson_row, marks


class BaselineQueries(Backend):
    def popular_lessons(self, run: str, scope: str, exclude: set[str], limit: int
                        ) -> list[tuple[LessonRow, FailureRow, int]]:
        """For each of the causes that failed in the most distinct runs other than ``run``
        (ties: more failures, then the latest), most first: the active lesson in ``scope``
        (or global) of its latest failure, that failure, and the number of runs. Causes
        whose latest failure has no such lesson are passed over; ``exclude``: causes to
        leave out."""
        skip = f"AND cause NOT IN ({marks(list(exclude))})" if exclude else ""
        causes = self._rows(
            f"""SELECT COUNT(DISTINCT run) AS earlier_runs, COUNT(*) AS earlier_failures,
                       MAX(seq) AS latest
                FROM failures WHERE run != ? {skip} GROUP BY cause
                ORDER BY earlier_runs DESC, earlier_failures DESC, latest DESC""",
            [run, *exclude])
        found = []
        for cause in causes:
            (failure,) = [failure_row(r) for r in self._rows("SELECT * FROM failures WHERE seq = ?",
                                                      (cause["latest"],))]
            lesson = self._row(
                "SELECT * FROM lessons WHERE fingerprint = ? AND status = 'active'"
                " AND scope IN (?, 'global')", (failure["fingerprint"], scope))
            if lesson is not None:
                found.append((lesson_row(lesson), failure, int(cause["earlier_runs"])))
            if len(found) == limit:
                break
        return found
