"""The store's queries about runs: their goals, which causes each failed with, what
succeeded between a failure and its rerun, exits that were not failures. Part of
``SQLiteStore`` (a mixin), kept apart so each file stays about one thing."""

from __future__ import annotations

import sqlite3
from collections.abc import Sized
from contextlib import AbstractContextManager
from typing import Any

from reflect.numbers import MAX_ITERATION
from reflect.records import new_id
from reflect.text import clip, text_key

# One row of the store as the domain modules see it: column name -> value.
Row = dict[str, Any]

FOLLOW_RUNS = 50  # earlier runs per cause looked at for what followed it
MAX_GOAL_CHARS = 2000  # goals are issue texts; their start says what they are about


def _marks(values: Sized) -> str:
    return ", ".join("?" * len(values))


class RunQueries:
    conn: sqlite3.Connection

    def write(self, wait: float | None = None) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    # -- runs and their goals --------------------------------------------------------

    @staticmethod
    def _register_run(conn: sqlite3.Connection, run: str, goal: str, scope: str,
                      now: float) -> None:
        goal = clip(goal, MAX_GOAL_CHARS)  # as recall bounds it: the vector's key matches
        conn.execute(
            "INSERT OR IGNORE INTO runs (run, goal, goal_key, scope, created)"
            " VALUES (?, ?, ?, ?, ?)", (run, goal, text_key(goal), scope, now))

    def register_run(self, run: str, goal: str, scope: str, now: float,
                     wait: float | None = None) -> None:
        """A run is known from its first recall or capture on, with the goal it had then."""
        if self.conn.execute("SELECT 1 FROM runs WHERE run = ?", (run,)).fetchone() is None:
            with self.write(wait) as conn:
                self._register_run(conn, run, goal, scope, now)

    def earlier_runs(self, run: str, scope: str) -> int:
        """Runs in ``scope`` (or global) other than ``run``: the base rates' denominator."""
        total = int(self.conn.execute(  # counted on the index, then this run taken out
            "SELECT COUNT(*) FROM runs WHERE scope IN (?, 'global')", (scope,)).fetchone()[0])
        this = self.conn.execute("SELECT 1 FROM runs WHERE run = ? AND scope IN (?, 'global')",
                                 (run, scope)).fetchone()
        return total - (this is not None)

    def run_goal_vectors(self, model: str) -> list[tuple[str, bytes]]:
        """Each run's goal vector from ``model``, where one was computed."""
        return self.conn.execute(
            """SELECT r.run, q.vector FROM runs r JOIN query_vectors q ON q.key = r.goal_key
               WHERE q.model = ? AND q.vector IS NOT NULL ORDER BY r.seq""", (model,)
        ).fetchall()

    def run_vectors_stamp(self) -> str:
        """Changes whenever a run goal gets a vector (kept by triggers)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'run_vectors'").fetchone()
        return str(row[0]) if row else "0"

    def run_vector_dim(self, model: str) -> int | None:
        row = self.conn.execute(
            """SELECT length(q.vector) / 4 FROM runs r JOIN query_vectors q
               ON q.key = r.goal_key WHERE q.model = ? AND q.vector IS NOT NULL LIMIT 1""",
            (model,)).fetchone()
        return row[0] if row else None

    def runs_by_words(self, terms: list[str], run: str, scope: str, k: int
                      ) -> list[tuple[str, float]]:
        """The ``k`` runs whose goals best match ``terms`` (FTS5's BM25, higher is better)."""
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        return [(r[0], -r[1]) for r in self.conn.execute(
            """SELECT r.run, bm25(runs_fts) FROM runs_fts JOIN runs r ON r.seq = runs_fts.rowid
               WHERE runs_fts MATCH ? AND r.run != ? AND r.scope IN (?, 'global')
               ORDER BY bm25(runs_fts) LIMIT ?""", (match, run, scope, k))]

    def goal_term_runs(self, terms: list[str]) -> dict[str, int]:
        """How many run goals hold each term."""
        if not terms:
            return {}
        return {r[0]: r[1] for r in self.conn.execute(
            f"SELECT term, doc FROM runs_vocab WHERE term IN ({_marks(terms)})", terms)}

    # -- causes by run -------------------------------------------------------------------

    def run_causes(self, runs: list[str]) -> dict[str, set[str]]:
        """The causes each of ``runs`` failed with."""
        found: dict[str, set[str]] = {r: set() for r in runs}
        if runs:
            for run, cause in self.conn.execute(
                    f"SELECT DISTINCT run, cause FROM failures WHERE run IN ({_marks(runs)})",
                    runs):
                found[run].add(cause)
        return found

    def causes_after(self, causes: set[str], run: str) -> dict[str, set[str]]:
        """Earlier runs that failed with one of ``causes`` (the latest ``FOLLOW_RUNS`` for
        each), each with the causes it failed with after its first such failure."""
        if not causes:
            return {}
        wanted = list(causes)
        firsts = self.conn.execute(
            f"""SELECT run, MIN(seq) FROM failures WHERE cause IN ({_marks(wanted)})
                AND run != ? GROUP BY run ORDER BY MAX(seq) DESC LIMIT ?""",
            [*wanted, run, FOLLOW_RUNS * len(wanted)]).fetchall()
        after: dict[str, set[str]] = {}
        for other, first in firsts:
            after[other] = {r[0] for r in self.conn.execute(
                "SELECT DISTINCT cause FROM failures WHERE run = ? AND seq > ?", (other, first))}
        return after

    def cause_runs(self, causes: list[str]) -> dict[str, int]:
        """Runs each cause failed in (kept when old failures are pruned)."""
        if not causes:
            return {}
        return dict(self.conn.execute(
            f"SELECT cause, runs FROM causes WHERE cause IN ({_marks(causes)})", causes))

    def widespread_causes(self, limit: int) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT cause FROM causes ORDER BY runs DESC, last_seen DESC LIMIT ?", (limit,))]

    def cause_lessons(self, causes: list[str], run: str, scope: str
                      ) -> dict[str, tuple[Row, Row]]:
        """For each cause, its latest failure in another run and that failure's active
        lesson in ``scope`` (or global), as (lesson, failure)."""
        found = {}
        for c in causes:
            row = self.conn.execute(
                """SELECT f.seq FROM failures f JOIN lessons l ON l.fingerprint = f.fingerprint
                   WHERE f.cause = ? AND f.run != ? AND l.status = 'active'
                   AND l.scope IN (?, 'global') ORDER BY f.seq DESC LIMIT 1""",
                (c, run, scope)).fetchone()
            if row is None:
                continue
            failure = dict(self.conn.execute(
                "SELECT * FROM failures WHERE seq = ?", (row[0],)).fetchone())
            lesson = self.conn.execute(
                "SELECT * FROM lessons WHERE fingerprint = ? AND status = 'active'"
                " ORDER BY seq DESC LIMIT 1", (failure["fingerprint"],)).fetchone()
            found[c] = (dict(lesson), failure)
        return found

    def cause_failure_ids(self, cause: str, per: int = 5) -> list[str]:
        """The latest failures of a cause: a predicted lesson's provenance."""
        return [r[0] for r in self.conn.execute(
            "SELECT id FROM failures WHERE cause = ? ORDER BY seq DESC LIMIT ?", (cause, per))]

    def elsewhere_lessons(self, scope: str) -> list[Row]:
        """Active taught and imported lessons in ``scope`` (or global)."""
        return [dict(r) for r in self.conn.execute(
            "SELECT * FROM lessons WHERE origin != 'here' AND status = 'active'"
            " AND scope IN (?, 'global') ORDER BY seq", (scope,))]

    # -- within a run ----------------------------------------------------------------------

    def shown_then_failed(self, run: str, fingerprints: list[str]) -> dict[str, int]:
        """For each fingerprint, how often in ``run`` it failed right after recall had
        shown it: the hint was read and did not prevent the failure."""
        if not fingerprints:
            return {}
        return dict(self.conn.execute(
            f"""SELECT f.fingerprint, COUNT(*) FROM failures f
                WHERE f.run = ? AND f.fingerprint IN ({_marks(fingerprints)})
                AND EXISTS (SELECT 1 FROM injections i WHERE i.run = f.run
                            AND i.iteration = f.iteration AND i.fingerprint = f.fingerprint)
                GROUP BY f.fingerprint""", [run, *fingerprints]))

    def open_failures(self, run: str, iteration: int) -> list[Row]:
        return [dict(r) for r in self.conn.execute(
            "SELECT * FROM failures WHERE run = ? AND iteration < ? AND resolution = ''"
            " ORDER BY seq", (run, iteration))]

    def successes_between(self, run: str, after: int, before: int) -> list[str]:
        """The actions that succeeded in ``run`` between two iterations, in order."""
        return [r[0] for r in self.conn.execute(
            "SELECT action FROM successes WHERE run = ? AND iteration > ? AND iteration < ?"
            " ORDER BY iteration, seq", (run, after, before))]

    # -- exits that were not failures ---------------------------------------------------

    def add_benign(self, row: Row, goal: str, scope: str) -> Row:
        """Keep an exit that answered a question; returns the stored row."""
        with self.write() as conn:
            if row["iteration"] is None:
                row["iteration"] = self._next_iteration(conn, row["run"])
            self._register_run(conn, row["run"], goal, scope, row["ts"])
            row = {"id": new_id("F"), **row}
            conn.execute(f"INSERT INTO benign ({', '.join(row)})"
                         f" VALUES ({', '.join(':' + c for c in row)})", row)
        return row

    def benign_exits(self, run: str | None, limit: int) -> list[Row]:
        where, args = ("WHERE run = ?", [run]) if run is not None else ("", [])
        return [dict(r) for r in self.conn.execute(
            f"SELECT * FROM benign {where} ORDER BY seq DESC LIMIT ?", [*args, limit])]

    def benign_count(self, run: str | None) -> int:
        where, args = ("WHERE run = ?", [run]) if run is not None else ("", [])
        return int(self.conn.execute(f"SELECT COUNT(*) FROM benign {where}", args).fetchone()[0])

    @staticmethod
    def _next_iteration(conn: sqlite3.Connection, run: str) -> int:
        last = conn.execute(
            "SELECT MAX(i) FROM (SELECT MAX(iteration) AS i FROM failures WHERE run = ?"
            " UNION ALL SELECT MAX(iteration) FROM benign WHERE run = ?)", (run, run)
        ).fetchone()[0]
        return min(last or 0, MAX_ITERATION - 1) + 1  # a store holding a huge one stays usable

    def next_iteration(self, run: str) -> int:
        return self._next_iteration(self.conn, run)

