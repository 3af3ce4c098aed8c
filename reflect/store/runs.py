"""The store's queries about runs: their goals, which causes each failed with, what
succeeded between a failure and its rerun, exits that were not failures. Shared by
both backends (a mixin of ``SQLStore``); searching goals by their words is each
backend's own."""

from __future__ import annotations

from reflect.base.records import COUNTED_BELOW, FailureRow, LessonRow, new_id
from reflect.base.text import clip, text_key
from reflect.store.base import Backend, Row, Tx, failure_row, insert, lesson_row, marks

FOLLOW_RUNS = 50  # earlier runs per cause looked at for what followed it
MAX_GOAL_CHARS = 2000  # goals are issue texts; their start says what they are about


class RunQueries(Backend):
    # -- runs and their goals --------------------------------------------------------

    @staticmethod
    def _register_run(tx: Tx, run: str, goal: str, scope: str, now: float,
                      member: str) -> None:
        goal = clip(goal, MAX_GOAL_CHARS)  # as recall bounds it: the vector's key matches
        tx.execute(
            "INSERT INTO runs (run, goal, goal_key, scope, created, member)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (run, goal, text_key(goal), scope, now, member))

    def register_run(self, run: str, goal: str, scope: str, now: float,
                     wait: float | None = None, member: str = "") -> None:
        """A run is known from its first recall or capture on, with the goal it had then
        and the member it is by."""
        if self._row("SELECT 1 FROM runs WHERE run = ?", (run,)) is None:
            with self.write(wait) as tx:
                self._register_run(tx, run, goal, scope, now, member)

    def several_members(self, scope: str) -> bool:
        """Whether runs of ``scope`` (or global) are by two members or more (runs of no
        member, stored before members were, are of none)."""
        one = self._value("SELECT member FROM runs WHERE scope IN (?, 'global')"
                          " AND member != '' LIMIT 1", (scope,))
        return one is not None and self._row(
            "SELECT 1 FROM runs WHERE scope IN (?, 'global') AND member NOT IN ('', ?)"
            " LIMIT 1", (scope, one)) is not None

    def earlier_runs(self, run: str, scope: str) -> int:
        """Runs in ``scope`` (or global) other than ``run``: the base rates' denominator."""
        total = int(self._value(  # counted on the index, then this run taken out
            "SELECT COUNT(*) FROM runs WHERE scope IN (?, 'global')", (scope,)))
        this = self._row("SELECT 1 FROM runs WHERE run = ? AND scope IN (?, 'global')",
                         (run, scope))
        return total - (this is not None)

    def run_goal_vectors(self, model: str, since: int = -1) -> list[tuple[str, bytes]]:
        """Each run's goal vector from ``model``, of the runs whose vector changed after
        change ``since`` (all of them by default)."""
        return [(r[0], bytes(r[1])) for r in self._rows(
            """SELECT r.run, q.vector FROM runs r JOIN query_vectors q ON q.key = r.goal_key
               WHERE r.vector_change > ? AND q.model = ? AND q.vector IS NOT NULL
               ORDER BY r.vector_change""", (since, model))]

    def run_vectors_state(self) -> tuple[int, int]:
        """(removals, latest change) of run-goal vectors, kept by triggers: a local index
        made at the same removals needs only the changes after its own latest."""
        state = {r[0]: r[1] for r in self._rows(
            "SELECT key, value FROM meta WHERE key IN ('run_vector_removals', 'run_vectors')")}
        return int(state.get("run_vector_removals", 0)), int(state.get("run_vectors", 0))

    def run_vector_dim(self, model: str) -> int | None:
        size = self._value(
            """SELECT length(q.vector) FROM runs r JOIN query_vectors q
               ON q.key = r.goal_key WHERE q.model = ? AND q.vector IS NOT NULL LIMIT 1""",
            (model,))
        return None if size is None else int(size) // 4

    # -- causes and families by run ------------------------------------------------------

    def run_families(self, runs: list[str]) -> dict[str, set[str]]:
        """The families of causes each of ``runs`` failed with."""
        found: dict[str, set[str]] = {r: set() for r in runs}
        if runs:
            for run, family in self._rows(
                    f"SELECT DISTINCT run, family FROM failures WHERE run IN ({marks(runs)})",
                    runs):
                found[run].add(family)
        return found

    def _latest_runs(self, run: str, scope: str, limit: int,
                     per_member: int | None = None) -> dict[str, str]:
        """The latest ``limit`` runs in ``scope`` (or global) other than ``run``, each with
        its member; with ``per_member``, no more than that many of any one member."""
        if per_member is None:
            return {r[0]: r[1] for r in self._rows(
                "SELECT run, member FROM runs WHERE run != ? AND scope IN (?, 'global')"
                " ORDER BY seq DESC LIMIT ?", (run, scope, limit))}
        return {r[0]: r[1] for r in self._rows(
            """SELECT run, member FROM (SELECT run, member, seq, ROW_NUMBER() OVER
               (PARTITION BY member ORDER BY seq DESC) AS nth FROM runs
               WHERE run != ? AND scope IN (?, 'global')) AS r
               WHERE nth <= ? ORDER BY seq DESC LIMIT ?""", (run, scope, per_member, limit))}

    def recent_families(self, run: str, scope: str, limit: int, per_member: int | None = None
                        ) -> tuple[int, dict[str, int], dict[str, int]]:
        """The latest ``limit`` runs in ``scope`` (or global) other than ``run`` (with
        ``per_member``, no more than that many of one member): how many there are, in how
        many of them each family failed, and of how many members those runs are."""
        latest = self._latest_runs(run, scope, limit, per_member)
        counts: dict[str, int] = {}
        members: dict[str, set[str]] = {}
        for other, families in self.run_families(list(latest)).items():
            for f in families:
                counts[f] = counts.get(f, 0) + 1
                if latest[other]:
                    members.setdefault(f, set()).add(latest[other])
        return len(latest), counts, {f: len(m) for f, m in members.items()}

    def recent_commands(self, run: str, scope: str, limit: int
                        ) -> tuple[int, set[tuple[str, str, str]]]:
        """The latest ``limit`` runs in ``scope`` (or global) other than ``run``: how many
        there are, and the (run, action, family) of each of their failures."""
        latest = list(self._latest_runs(run, scope, limit))
        if not latest:
            return 0, set()
        return len(latest), {(r[0], r[1], r[2]) for r in self._rows(
            f"SELECT DISTINCT run, action, family FROM failures WHERE run IN ({marks(latest)})",
            latest)}

    def families_after(self, families: set[str], run: str) -> dict[str, set[str]]:
        """Earlier runs that failed with one of ``families`` (the latest ``FOLLOW_RUNS`` for
        each), each with the families it failed with after its first such failure."""
        if not families:
            return {}
        wanted = list(families)
        firsts = self._rows(
            f"""SELECT run, MIN(seq) FROM failures WHERE family IN ({marks(wanted)})
                AND run != ? GROUP BY run ORDER BY MAX(seq) DESC LIMIT ?""",
            [*wanted, run, FOLLOW_RUNS * len(wanted)])
        after: dict[str, set[str]] = {}
        for other, first in firsts:
            after[other] = {r[0] for r in self._rows(
                "SELECT DISTINCT family FROM failures WHERE run = ? AND seq > ?",
                (other, first))}
        return after

    def family_runs(self, families: list[str]) -> dict[str, int]:
        """Runs each family failed in (kept when old failures are pruned)."""
        return self._counted("families", "family", families)

    def _counted(self, table: str, key: str, keys: list[str]) -> dict[str, int]:
        if not keys:
            return {}
        return {r[0]: int(r[1]) for r in self._rows(
            f"SELECT {key}, runs FROM {table} WHERE {key} IN ({marks(keys)})", keys)}

    def widespread_families(self, limit: int) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT family FROM families ORDER BY runs DESC, last_seen DESC LIMIT ?",
            (limit,))]

    def family_lessons(self, families: list[str], run: str, scope: str
                       ) -> dict[str, tuple[LessonRow, FailureRow]]:
        """For each family, its latest failure in another run that has an active lesson in
        ``scope`` (or global), as (lesson, failure)."""
        found = {}
        for f in families:
            row = self._row(
                """SELECT f.seq FROM failures f JOIN lessons l ON l.fingerprint = f.fingerprint
                   WHERE f.family = ? AND f.run != ? AND l.status = 'active'
                   AND l.scope IN (?, 'global') ORDER BY f.seq DESC LIMIT 1""",
                (f, run, scope))
            if row is None:
                continue
            failure = self._row("SELECT * FROM failures WHERE seq = ?", (row[0],))
            if failure is None:
                continue  # removed since the row above was read
            lesson = self._row(
                "SELECT * FROM lessons WHERE fingerprint = ? AND status = 'active'"
                " ORDER BY seq DESC LIMIT 1", (failure["fingerprint"],))
            if lesson is not None:
                found[f] = (lesson_row(lesson), failure_row(failure))
        return found

    def cause_failure_ids(self, cause: str, per: int = 5) -> list[str]:
        """The latest failures of a cause: a popular lesson's provenance."""
        return [r[0] for r in self._rows(
            "SELECT id FROM failures WHERE cause = ? ORDER BY seq DESC LIMIT ?", (cause, per))]

    def family_failure_ids(self, family: str, scope: str, per: int = 5) -> list[str]:
        """The latest failures of a family in runs of ``scope`` (or global): a predicted
        lesson's provenance, never another project's failures."""
        return [r[0] for r in self._rows(
            "SELECT f.id FROM failures f JOIN runs r ON r.run = f.run WHERE f.family = ?"
            " AND r.scope IN (?, 'global') ORDER BY f.seq DESC LIMIT ?",
            (family, scope, per))]

    def family_record(self, family: str, scope: str, limit: int) -> list[Row]:
        """The latest ``limit`` failures of a family in runs of ``scope`` (or global), newest
        first, with their kind (``category``) and what their runs did about them: a house
        rule's fix and its count."""
        return [dict(r) for r in self._rows(
            "SELECT f.id, f.run, f.cause, f.category, f.error_type, f.message, f.action,"
            " f.resolution, r.member FROM failures f JOIN runs r ON r.run = f.run"
            " WHERE f.family = ? AND r.scope IN (?, 'global') ORDER BY f.seq DESC LIMIT ?",
            (family, scope, limit))]

    def taught_and_imported_lessons(self, scope: str) -> list[LessonRow]:
        """Active taught and imported lessons in ``scope`` (or global)."""
        return [lesson_row(r) for r in self._rows(
            "SELECT * FROM lessons WHERE origin != 'here' AND status = 'active'"
            " AND scope IN (?, 'global') ORDER BY seq", (scope,))]

    # -- within a run ----------------------------------------------------------------------

    def shown_then_failed(self, run: str, fingerprints: list[str]) -> dict[str, int]:
        """For each fingerprint, how often in ``run`` it failed right after recall had
        shown it: the hint was read and did not prevent the failure."""
        if not fingerprints:
            return {}
        return {r[0]: int(r[1]) for r in self._rows(
            f"""SELECT f.fingerprint, COUNT(*) FROM failures f
                WHERE f.run = ? AND f.fingerprint IN ({marks(fingerprints)})
                AND EXISTS (SELECT 1 FROM injections i WHERE i.run = f.run
                            AND i.iteration = f.iteration AND i.fingerprint = f.fingerprint)
                GROUP BY f.fingerprint""", [run, *fingerprints])}

    def open_failures(self, run: str, iteration: int) -> list[FailureRow]:
        return [failure_row(r) for r in self._rows(
            "SELECT * FROM failures WHERE run = ? AND iteration < ? AND resolution = ''"
            " ORDER BY seq", (run, iteration))]

    def successes_between(self, run: str, after: int, before: int) -> list[str]:
        """The actions that succeeded in ``run`` between two iterations, in order."""
        return [r[0] for r in self._rows(
            "SELECT action FROM successes WHERE run = ? AND iteration > ? AND iteration < ?"
            " ORDER BY iteration, seq", (run, after, before))]

    # -- exits that were not failures ---------------------------------------------------

    def add_benign(self, row: Row, goal: str, scope: str, member: str = "") -> Row:
        """Keep an exit that answered a question; returns the stored row (a step stored
        before is not stored again)."""
        with self.write() as tx:
            self._lock(tx, "run:" + row["run"])
            known = self._stored_step(tx, "benign", row.get("step"))
            if known is not None:
                return known
            if row["iteration"] is None:
                row["iteration"] = self._next_iteration(tx, row["run"])
            self._register_run(tx, row["run"], goal, scope, row["ts"], member)
            row = {"id": new_id("F"), **row}
            insert(tx, "benign", row)
        return row

    def stored_steps(self, run: str) -> set[str]:
        """The keys of the run's steps stored with one: failures, benign exits, successes."""
        return {r[0] for r in self._rows(
            "SELECT step FROM failures WHERE run = ? AND step IS NOT NULL UNION"
            " SELECT step FROM benign WHERE run = ? AND step IS NOT NULL UNION"
            " SELECT step FROM successes WHERE run = ? AND step IS NOT NULL", (run,) * 3)}

    def unkeyed_steps(self, run: str) -> tuple[int, int]:
        """How many failed steps (failures, benign exits) and successes the run holds
        without a key: recorded before steps had one, or by a caller that named none."""
        failed, succeeded = (sum(int(self._value(
            f"SELECT COUNT(*) FROM {table} WHERE run = ? AND step IS NULL", (run,)))
            for table in tables) for tables in (("failures", "benign"), ("successes",)))
        return failed, succeeded

    def benign_exits(self, run: str | None, limit: int) -> list[Row]:
        where, args = ("WHERE run = ?", [run]) if run is not None else ("", [])
        return [dict(r) for r in self._rows(
            f"SELECT * FROM benign {where} ORDER BY seq DESC LIMIT ?", [*args, limit])]

    def benign_count(self, run: str | None) -> int:
        where, args = ("WHERE run = ?", [run]) if run is not None else ("", [])
        return int(self._value(f"SELECT COUNT(*) FROM benign {where}", args))

    @staticmethod
    def _stored_step(tx: Tx, table: str, step: str | None) -> Row | None:
        """The row of ``table`` that holds the step, if one does. Called under the run's
        lock, which the step's key includes: no other writer stores it between this and
        the insert (the unique index stands behind that)."""
        if not step:
            return None
        found = tx.execute(f"SELECT * FROM {table} WHERE step = ?", (step,)).fetchone()
        return None if found is None else dict(found)

    @staticmethod
    def _next_iteration(tx: Tx, run: str) -> int:
        return _after(tx.execute(_LAST_ITERATION, _counted(run)).fetchone()[0])

    def next_iteration(self, run: str) -> int:
        return _after(self._value(_LAST_ITERATION, _counted(run)))


_LAST_ITERATION = (
    "SELECT MAX(i) FROM (SELECT MAX(iteration) AS i FROM failures WHERE run = ? AND iteration < ?"
    " UNION ALL SELECT MAX(iteration) FROM benign WHERE run = ? AND iteration < ?) AS last")


def _counted(run: str) -> tuple[str, int, str, int]:
    return run, COUNTED_BELOW, run, COUNTED_BELOW


def _after(last: int | None) -> int:
    return (last or 0) + 1

