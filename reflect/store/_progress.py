"""The store's queries for ``reflect progress``: runs in the order they began, every
failure's fingerprint, what was injected in each run. Shared by both backends (a mixin of
``SQLStore``); what counts as a repeat is ``reflect.api.repeat_rates``'s."""

from __future__ import annotations

from reflect.store.base import Backend


class ProgressQueries(Backend):
    def runs_by_first_activity(self) -> list[tuple[str, float]]:
        """Every run with its first failure or injection, earliest first (a run that only
        shows up in the injection log failed nowhere, and counts too)."""
        return [(r[0], r[1]) for r in self._rows(
            "SELECT run, MIN(ts) FROM (SELECT run, ts FROM failures"
            " UNION ALL SELECT run, ts FROM injections) AS activity"
            " GROUP BY run ORDER BY MIN(ts), run")]

    def failure_fingerprints(self) -> list[tuple[str, str]]:
        """Each failure's run and fingerprint, in the order they were captured."""
        return [(r[0], r[1]) for r in self._rows(
            "SELECT run, fingerprint FROM failures ORDER BY seq")]

    def injected_by_run(self) -> dict[str, tuple[int, int]]:
        """Per run: the distinct lessons injected and the tokens of its blocks (every row of
        one recall carries the block's size: each recall counted once)."""
        lessons = {r[0]: int(r[1]) for r in self._rows(
            "SELECT run, COUNT(DISTINCT lesson_id) FROM injections GROUP BY run")}
        tokens = {r[0]: int(r[1]) for r in self._rows(
            "SELECT run, SUM(tokens) FROM (SELECT run, iteration, MAX(tokens) AS tokens"
            " FROM injections GROUP BY run, iteration) AS recalls GROUP BY run")}
        return {run: (n, tokens[run]) for run, n in lessons.items()}
