"""``Memory``: the library API that the CLI and Python agents share."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflect.api import controls
from reflect.api.context import RunContext
from reflect.api.settings import Settings
from reflect.base import config
from reflect.base.records import (
    COUNTED_BELOW,
    ErrorEntry,
    FailureRow,
    Lesson,
    LessonRow,
    Recall,
)
from reflect.capture import benign, numbers, own_module, resolution
from reflect.capture.entry import (
    Parsed,
    entry_rows,
    kept_outcome,
    kept_rows,
    parse,
    scrubbed,
    synthesize,
)
from reflect.capture.fingerprint import joined
from reflect.capture.review import fix_reason
from reflect.capture.scope import GLOBAL, UNCACHED, elsewhere, scope_of
from reflect.capture.tool_calls import step_key
from reflect.recall.holdout import Holdout
from reflect.reflection import consolidation, queue
from reflect.store import Rejected, Store, StoreUnavailable, pending
from reflect.store.runs import MAX_GOAL_CHARS

if TYPE_CHECKING:
    from reflect.api.exchange import ImportReport
    from reflect.api.learn import LearnReport
    from reflect.base.answers import Consolidation, Injection, LessonDetail, Progress, Stats, Status
    from reflect.capture.scrub import Scrubber
    from reflect.recall.block import Query
    from reflect.recall.holdout import Effect
    from reflect.recall.predict import Predictor
    from reflect.reflection.embedding import Vectors
    from reflect.store.health import Finding

DEFAULT_MAX_TOKENS = config.DEFAULT_MAX_TOKENS
LOG_WAIT = 0.2  # seconds recall waits to log what it injected; the block never waits
OWN_MODULE_WINDOW = 200  # the run's latest failures whose steps may have made a module
QUARANTINED_COUNTED = 1000  # `status` counts quarantined lessons up to this many


class Memory:
    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        store_url: str | None = None,
        run: str | None = None,
        model: str | None = None,
        embeddings: str | None = None,
        settings: Settings | None = None,
        context: RunContext | None = None,
    ):
        """``model`` (else ``REFLECT_MODEL``) names the litellm model that writes lessons.
        ``embeddings`` (else ``REFLECT_EMBEDDINGS``) names the embedding model; "off"
        forbids it. ``store_url`` (else ``REFLECT_STORE``) names a shared PostgreSQL
        store; "" is the SQLite file in ``home``, which holds what stays on this machine
        either way. The rest is ``settings``. ``context``: the run context a boundary made
        already (``RunContext.from_env``), instead of all these; without it, this is the
        boundary, and the process's environment is read here."""
        if context is None:
            context = RunContext.from_env(
                os.environ, home=home, store_url=store_url, run=run, model=model,
                embeddings=embeddings, settings=settings or Settings())
        self.context = context
        settings = self.settings = context.settings
        self.home, self.store_url, self.run = context.home, context.store_url, context.run
        self.enabled, self.offline = context.enabled, context.offline
        self._scrubber = context.scrubber
        self._benign_exits = benign.rules(self.home)
        self.model, self.embeddings = context.model, context.embeddings
        self._opened: Store | None = None
        # Why this Memory's last capture was kept aside (the store was locked or down):
        # the rest of that step (its worker, its block) does not wait for the store again.
        self._kept_aside: Exception | None = None
        self._dense: Vectors | None = None
        self._scope: str | None = None
        self._worker: tuple[threading.Thread, threading.Event] | None = None
        if settings.worker_thread and (self.model is not None or self.embeddings is not None):
            from reflect.reflection.worker import start_thread

            self._worker = start_thread(self.home, self.store_url, self.model,
                                        self.embeddings, self.clock, settings.upkeep,
                                        settings.retries, settings.worker_poll,
                                        settings.open_store)

    # The store opens on first use, so a Memory can always be constructed;
    # a store that cannot be opened degrades capture and recall, never raises.
    @property
    def _store(self) -> Store:
        if self._opened is None:  # REFLECT_STORE may name a shared PostgreSQL store
            self._opened = self.settings.open_store(self.home, self.store_url,
                                                   self.settings.busy_timeout)
        return self._opened

    @property
    def _vectors(self) -> Vectors:
        """Dense search for this store (numpy is imported here: capture never needs it)."""
        if self._dense is None:
            from reflect.reflection.embedding import Vectors

            self._dense = Vectors(self._store, self.embeddings, self.clock)
        return self._dense

    @property
    def scope(self) -> str:
        """The project lessons are learnt and recalled in: the repository at the working
        directory's, "global" outside one."""
        if self._scope is None:
            self._scope = scope_of(Path.cwd(), self._store)
        return self._scope

    @scope.setter
    def scope(self, scope: str) -> None:
        """For a harness that moves between projects in one process (a replay of many)."""
        self._scope = scope

    def elsewhere(self) -> str:
        """For an empty recall: the scope it looked in and how many lessons other
        repositories have in this store; "" when they have none, or it cannot be read."""
        try:
            others = self._store.lessons_elsewhere(self.scope)
        except (StoreUnavailable, OSError):
            return ""
        return elsewhere(Path.cwd(), others)

    def close(self) -> None:
        """Close the store; a worker thread gets ``close_timeout`` seconds to finish its
        job, never more (an unfinished job is retried by the next worker)."""
        if self._worker is not None:
            thread, stop = self._worker
            stop.set()
            thread.join(self.settings.close_timeout)
            self._worker = None
        if self._opened is not None:
            self._opened.close()
            self._opened = self._dense = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- capture and recall ----------------------------------------------------------

    def capture(
        self,
        run: str | None = None,
        iteration: int | None = None,
        goal: str = "",
        phase: str = "",
        action: str = "",
        exit_code: int | None = None,
        error_text: str | None = None,
        crash: dict[str, Any] | None = None,
        exc: BaseException | None = None,
        step: str | None = None,
    ) -> ErrorEntry | None:
        """Record a failed iteration; None only when failure memory is switched off.
        An exit that answered a question (``grep`` found nothing) is kept apart as
        benign: counted, never recalled. ``step`` (a client's id of the tool call) makes
        it one record whoever records it, however often: a step the run holds already is
        returned as stored."""
        if not self.enabled:
            return None
        run = self._run_id(run)  # every query below asks for the run as it is stored
        # Within what the store holds: an overflow would cost the failure its record.
        iteration = numbers.iteration(iteration)
        exit_code = numbers.bounded(exit_code, "exit code")
        if exc is None and not crash:
            program = benign.benign(action, exit_code, error_text, self._benign_exits)
            if program:
                return self._keep_benign(run, iteration, goal, phase, action,
                                         exit_code, program, step)
        try:
            parsed = parse(
                phase=phase, exit_code=exit_code, error_text=error_text, crash=crash, exc=exc
            )
        except Exception as e:  # a parser bug must not cost the agent its failure record
            config.warn(f"could not parse the error ({e!r}); recorded from phase and exit code")
            parsed = Parsed("synthesized", synthesize(phase, exit_code), phase, exit_code)
        self._kept_aside = None  # this capture tries the store again
        try:
            scope = self.scope
        except (StoreUnavailable, Rejected, OSError) as e:
            scope = _scope_aside()  # the store is unreachable: the capture is kept aside below
            self._kept_aside = e
        failure, lesson = entry_rows(parsed, run=run, iteration=iteration, goal=goal,
                                     action=action, scrubber=self._scrubber, scope=scope,
                                     now=self.clock(), own_module=self._own_module(
                                         parsed, run, iteration, action),
                                     step=step)
        try:
            if self._kept_aside is not None:  # waited once already: not a second time
                raise self._kept_aside
            pending.replay(self.home, self._store, self._replayed,
                           lambda outcome: kept_outcome(outcome, self._scrubber))
            failure, lesson = self._joined(failure, lesson)
            stored, lesson_row = self._store.add_failure(
                failure, lesson, reflect=self.model is not None,
                embed=self.embeddings is not None, credit_outcome=self.settings.credit,
                member=self.context.member)
        except (StoreUnavailable, Rejected, OSError) as e:
            self._kept_aside = e
            return self._keep_aside(failure, lesson, e)
        if lesson_row.get("status") == "quarantined" and lesson_row["id"] == lesson["id"]:
            config.warn(f"lesson {lesson_row['id']} quarantined: it {lesson_row['quarantine']};"
                        " kept for a person, never recalled (`reflect lessons list --status"
                        " quarantined`)")  # said once: when its fingerprint first gets it
        return _entry(stored, lesson_row)

    def _keep_aside(self, failure: FailureRow, lesson: LessonRow, why: Exception) -> ErrorEntry:
        """The capture the store could not take, in the pending file (replayed by the next
        capture that can write), numbered in its run as the store would number it."""
        if failure["iteration"] is None:
            failure = {**failure, "iteration": self._next_iteration_aside(failure["run"])}
        path = pending.keep(self.home, failure, lesson, reflect=self.model is not None,
                            embed=self.embeddings is not None, credit=self.settings.credit,
                            member=self.context.member)
        # One line: a PostgreSQL error goes on with the statement it stopped.
        said = str(why).splitlines()[0] if str(why) else repr(why)
        config.warn(f"store {self.home} not writable ({said}); failure kept in {path}")
        aside: FailureRow = {**failure, "seq": 0, "lesson_id": lesson["id"]}
        return _entry(aside, lesson)

    def _joined(self, failure: FailureRow, lesson: LessonRow) -> tuple[FailureRow, LessonRow]:
        """The capture under the fingerprint its cause is kept under in its scope, when it
        is one failure with it (``fingerprint.joined``: a last line and its traceback)."""
        scope = str(lesson.get("scope") or GLOBAL)
        fp = joined(failure["fingerprint"], failure["cause"],
                    self._store.cause_fingerprints(failure["cause"], scope))
        return {**failure, "fingerprint": fp}, {**lesson, "fingerprint": fp}

    def _replayed(self, failure: FailureRow,
                  lesson: LessonRow) -> tuple[FailureRow, LessonRow]:
        """A capture kept aside, as the store takes it now: made again, then joined."""
        return self._joined(*self._redo(failure, lesson))

    def _redo(self, failure: FailureRow, lesson: LessonRow) -> tuple[FailureRow, LessonRow]:
        """A capture kept aside, read back: scrubbed and reviewed as a new capture."""
        return kept_rows(failure, lesson, self._scrubber)

    def _next_iteration_aside(self, run: str) -> int:
        """The run's next number while its store cannot be written: the store's own, when
        it opened and can be read; past the run's captures kept aside either way."""
        stored = 1
        if self._opened is not None:
            with contextlib.suppress(StoreUnavailable, Rejected, OSError):
                stored = self._opened.next_iteration(run)
        aside = [f["iteration"] or 0 for f, _ in pending.kept(self.home, self._redo)
                 if f["run"] == run and (f["iteration"] or 0) < COUNTED_BELOW]
        return max([stored, *(n + 1 for n in aside)])

    def _own_module(self, parsed: Parsed, run: str, iteration: int | None,
                    action: str) -> bool:
        """Whether the module the error says is missing is the run's own: under the
        working directory, or a path this step or the run's earlier ones named."""
        name = own_module.missing_module(parsed.error.message)
        if not name:
            return False
        before = numbers.MAX_ITERATION + 1 if iteration is None else iteration
        earlier: list[str] = []  # unreachable store: the working directory still answers
        if self._kept_aside is None:  # a store that made this step wait is not asked again
            with contextlib.suppress(StoreUnavailable, Rejected, OSError):
                earlier = [*self._store.successes_between(run, -1, before),
                           *self._store.recent_actions(run, iteration, OWN_MODULE_WINDOW)]
        try:
            cwd = Path.cwd()
        except OSError:
            cwd = Path(".")
        return own_module.own_module(name, cwd, [action, *earlier])

    @property
    def clock(self) -> Callable[[], float]:
        return self.settings.clock

    @property
    def _holdout(self) -> Holdout:
        """The holdout's rule: the settings' share, or its whole rule."""
        given = self.settings.holdout
        return given if isinstance(given, Holdout) else Holdout(p=float(given))

    @property
    def _predictor(self) -> Predictor:
        """The prediction's rule: the settings', else the default, comparing a run with
        ``similar_runs`` earlier runs of like goals."""
        from reflect.recall.predict import Predictor

        return self.settings.predictor or Predictor(k=self.settings.similar_runs)

    def _only(self, run: str | None) -> str | None:
        """A listing's run as capture stored it; None: every run."""
        return None if run is None else self._run_id(run)

    def _run_id(self, run: str | None) -> str:
        """The run id as capture stores it: recall, outcome and the logs use the same."""
        return self.context.run_id(run or None)

    def _keep_benign(self, run: str, iteration: int | None, goal: str, phase: str,
                     action: str, exit_code: int | None, program: str,
                     step: str | None) -> ErrorEntry:
        """An exit that answered a question, kept apart; ``run`` as capture stores it."""
        def scrub(text: str) -> str:
            return scrubbed(self._scrubber, text)[0]

        row = {"run": run, "iteration": iteration, "ts": self.clock(),  # run: as stored
               "phase": scrub(phase), "action": scrub(action), "exit_code": exit_code,
               "program": program, "step": step_key(run, step)}
        try:
            row = self._store.add_benign(row, scrubbed(self._scrubber, goal, MAX_GOAL_CHARS)[0],
                                         self.scope, self.context.member)
        except (StoreUnavailable, Rejected, OSError) as e:  # not a failure: nothing is lost
            config.warn(f"store {self.home} not writable ({e}); benign exit not kept")
            row = {"id": "", **row, "iteration": iteration or 0}
        return benign_entry(row)

    def _query(self, run: str | None = None, goal: str = "", phase: str = "",
              iteration: int | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
              sections: tuple[str, ...] = ("recent", "lessons"), action: str = "") -> Query:
        """What a recall asks the store (``recall.block.Query``): the goal and the action
        scrubbed, the clock read; the scope is the store's, filled in by the caller that
        can read it."""
        from reflect.recall import block

        return block.Query(
            run=self._run_id(run), goal=scrubbed(self._scrubber, goal, MAX_GOAL_CHARS)[0],
            phase=phase, iteration=numbers.iteration(iteration), scope="global", now=self.clock(),
            max_tokens=max_tokens, sections=sections, embed=self.settings.embed_here,
            escalate_after=self.settings.escalate_after,
            action=self._scrubber.scrub(action)[0] if action else "")

    def recall(
        self,
        run: str | None = None,
        goal: str = "",
        phase: str = "",
        iteration: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        sections: tuple[str, ...] = ("recent", "lessons"),
        action: str = "",
    ) -> Recall:
        """The block for the next prompt: this run's recent failures (one item per root
        cause, newest first), then lessons of what this run is likely to hit, predicted
        from earlier runs. ``sections`` limits what is searched. ``action``: the command
        about to run, where the client tells it (a PreToolUse hook): what earlier runs'
        commands of its kind failed with may move the lessons (``Predictor.action``)."""
        if not self.enabled:
            return Recall()
        from reflect.recall import block

        if self.offline:  # recency only: this run's failures and hints, from SQL
            sections = tuple(s for s in sections if s == "recent")
        query = self._query(run, goal, phase, iteration, max_tokens, sections, action)
        run, goal, now, iteration = query.run, query.goal, query.now, query.iteration
        try:
            if self._kept_aside is not None:  # this step's capture found the store held
                raise self._kept_aside
            query = replace(query, scope=self.scope)
            predictor = self._predictor
            rec = block.build(self._store, self._vectors, query, predictor, self._holdout,
                              kept=pending.kept(self.home, self._redo))
            try:  # the log is best effort: it must not cost the agent its block
                self._store.register_run(run, goal, self.scope, now, wait=LOG_WAIT,
                                         member=self.context.member)
                if rec.items or rec.eligible:  # what the agent saw or was kept from
                    if iteration is None:
                        iteration = self._store.next_iteration(run)
                    self._store.record_injections(run, iteration, rec.items, rec.tokens, now,
                                                 wait=LOG_WAIT, eligible=rec.eligible)
            except (StoreUnavailable, Rejected, OSError) as e:
                config.warn(f"store {self.home}: injection log not written ({e})")
            return rec
        except (StoreUnavailable, Rejected, OSError) as e:
            rec = block.kept_block(pending.kept(self.home, self._redo), query)
            if e is not self._kept_aside:  # else the capture has said it, in one line
                config.warn(f"store {self.home} not readable ({e}); recalled "
                            + ("only the failures kept aside" if rec.items else "nothing"))
            return rec

    def learn(self, client: str, paths: Iterable[str | os.PathLike[str]] = (),
              progress: Callable[[int, int], None] | None = None) -> LearnReport:
        """Record the failures of the sessions ``client`` ("claude-code", "codex") kept on
        disk, each session a run as a live capture would have made it; with no ``paths``,
        the current project's sessions where the client keeps them. Learning a session again
        adds nothing. ``progress(done, total)`` is called after each session."""
        from reflect.api.learn import learn

        return learn(self, port(self), client, paths, progress)

    # -- background work ---------------------------------------------------------

    def ensure_worker(self) -> bool:
        """For shell harnesses: start a detached worker when jobs are due and no live
        worker holds the queue (``REFLECT_WORKER=off`` disables it). True if started."""
        if not self.enabled or not self.settings.start_worker or self._kept_aside is not None:
            return False  # kept aside: its jobs are queued when the next capture replays it
        if self.model is None and self.embeddings is None:
            return False
        if not self._store.claim_worker_start(self.clock(), queue.HEARTBEAT_STALE):
            return False
        from reflect.reflection.worker import start_detached  # a process and its pipes: rare

        start_detached(self.home, self.context.environ())
        return True

    def run_worker(self, once: bool = False, idle_exit: float | None = None) -> int:
        """Run jobs in this process: those due now with ``once``, else until idle."""
        from reflect.reflection.worker import Worker

        worker = Worker(self.home, self.store_url, self.model, self.embeddings,
                        clock=self.clock, upkeep=self.settings.upkeep,
                        retries=self.settings.retries,
                        poll=self.settings.worker_poll, open_store=self.settings.open_store)
        try:
            if once:
                return worker.run_once()
            worker.run(threading.Event(), idle_exit)
            return 0
        finally:
            worker.close()

    def status(self) -> Status:
        from reflect.base.answers import Status

        now = self.clock()
        cost, calls = self._store.spent_today(now)
        return Status(
            model=self.model.model if self.model else None,
            embeddings=self._vectors.model_name() if self.embeddings is not None else "off",
            jobs=self._store.job_counts(),
            failed_jobs=self._store.failed_jobs(),
            spend_today_usd=round(cost, 6),
            calls_today=calls,
            max_cost_usd=self.model.max_cost_usd if self.model else None,
            workers_alive=self._store.live_workers(now, queue.HEARTBEAT_STALE),
            store={**self._store.footprint(), "max_failures": self.settings.upkeep.max_failures,
                   "kept_aside": pending.waiting(self.home)[0]},
            quarantined=len(self._store.lessons("quarantined", 0, QUARANTINED_COUNTED)),
        )

    # -- outcome and inspection --------------------------------------------------

    def outcome(
        self, run: str | None = None, iteration: int | None = None, success: bool = True,
        action: str = "", step: str | None = None,
    ) -> list[str]:
        """Report how an iteration ended. On success, each open failure of the run whose
        purpose ``action`` served (``resolution.same_purpose``) gets what changed since it
        as what worked; returns the ids of the failures resolved. ``step``, as capture
        takes it: a step reported before changes nothing."""
        run, iteration = self._run_id(run), numbers.iteration(iteration)
        if not self.enabled or not success:
            return []  # a failed iteration is credited when it is captured
        quiet = not self._store.has_run(run) and not self._store.injections(run, 1)
        if iteration is None:
            iteration = self._store.next_iteration(run)
        action = scrubbed(self._scrubber, action)[0]
        now, reflect, key = self.clock(), self.model is not None, step_key(run, step)
        if quiet:  # nothing failed nor was shown: the usual success, not worth a warning,
            # but kept: a later failure of the run may miss what it made (``_own_module``)
            with contextlib.suppress(StoreUnavailable, Rejected, OSError):
                self._store.resolve(run, iteration, action, {}, now, step=key)
            return []
        found, refused = resolution.resolutions(
            self._store.open_failures(run, iteration), action,
            lambda after: self._store.successes_between(run, after, iteration), fix_reason)
        for reason in sorted(refused):
            config.warn(f"what worked in run {run} was kept out of memory: it {reason};"
                        " it is never shown or counted")
        # With a model, the worker revises the lessons of what this fixed.
        try:
            self._store.resolve(run, iteration, action, found, now, reflect=reflect,
                               credit_outcome=self.settings.credit, step=key)
        except (StoreUnavailable, Rejected, OSError) as e:
            path = pending.keep_outcome(self.home, {
                "run": run, "iteration": iteration, "action": action, "resolutions": found,
                "ts": now, "reflect": reflect, "credit": self.settings.credit, "step": key})
            config.warn(f"store {self.home} not writable ({e}); outcome kept in {path}")
        return list(found)

    def failures(self, run: str | None = None, limit: int = 20,
                 benign: bool = False) -> list[ErrorEntry]:
        """The latest failures, newest first; with ``benign`` the exits that answered a
        question too (``source == "benign"``)."""
        run = self._only(run)
        rows = self._store.failures(run, limit)
        lessons = self._store.active_lessons([r["fingerprint"] for r in rows])
        entries = [_entry(r, lessons.get(r["fingerprint"])) for r in rows]
        if benign:
            entries += [benign_entry(r) for r in self._store.benign_exits(run, limit)]
            entries.sort(key=lambda e: e.ts, reverse=True)
        return entries[:limit]

    def failure(self, failure_id: str) -> ErrorEntry | None:
        row = self._store.failure(failure_id)
        if row is None:
            return None
        return _entry(row, self._store.active_lessons([row["fingerprint"]]).get(row["fingerprint"]))

    def stats(self, run: str | None = None) -> Stats:
        from reflect.base.answers import Stats

        run = self._only(run)
        by_type = self._store.count_by("error_type", run)
        return Stats(
            failures=sum(n for _, n in by_type),
            by_category=dict(self._store.count_by("category", run)),
            by_error_type=dict(by_type),
            most_common_error=by_type[0][0] if by_type else None,
            by_run=dict(self._store.count_by("run", run)),
            benign=self._store.benign_count(run),
        )

    def injections(self, run: str | None = None, limit: int = 50) -> list[Injection]:
        """What recall put into prompts, newest first, with rank, score and outcome."""
        from reflect.base.answers import Injection

        return [Injection(**row) for row in self._store.injections(self._only(run), limit)]

    def clear(self, run: str | None = None) -> int:
        """Delete one run's failures, or all of them with ``run=None``."""
        return self._store.clear(self._only(run))

    # -- a person's controls over lessons ---------------------------------------------

    def lessons(self, status: str | None = "active", ineffective: bool = False,
                limit: int = 50) -> list[Lesson]:
        after = self.settings.escalate_after if ineffective else 0
        return controls.listing(self._store, status=status, ineffective_after=after,
                                limit=limit)

    def lesson(self, lesson_id: str) -> LessonDetail:
        """One lesson with its provenance and (``holdout``) its measured effect, if it was
        ever eligible; raises ``controls.UnknownLesson``."""
        found = self.effects([lesson_id])
        return controls.detail(self._store, lesson_id,
                               found[0].to_dict(self._holdout) if found else None)

    def effects(self, lesson_ids: list[str] | None = None) -> list[Effect]:
        """What showing each lesson changes, measured by the holdout (``holdout.Effect``
        each), the largest effect first."""
        from reflect.recall.holdout import measured

        return measured(self._store, self._holdout, lesson_ids)

    def search_lessons(self, text: str, limit: int = 20) -> list[Lesson]:
        return controls.search(self._store, text, limit)

    def pin(self, lesson_id: str, pinned: bool = True) -> None:
        controls.set_pinned(self._store, lesson_id, pinned, self.clock())

    def forget(self, lesson_id: str) -> None:
        controls.forget(self._store, lesson_id, self.clock())

    def quarantine(self, lesson_id: str, why: str) -> None:
        controls.quarantine(self._store, lesson_id, self._scrubber.scrub(why)[0], self.clock())

    def release(self, lesson_id: str) -> None:
        controls.release(self._store, lesson_id, self.clock())

    def feedback(self, lesson_id: str, good: bool) -> Lesson:
        return controls.feedback(self._store, lesson_id, good, self.clock())

    def teach(self, text: str) -> str:
        """``"when <trigger>: <guidance>"``: a pinned, confident lesson; returns its id."""
        return controls.teach(self._store, text, self.scope, self._scrubber.scrub, self.clock())

    def consolidate(self) -> Consolidation:
        return consolidation.consolidate(self._store, self.clock(), self.settings.upkeep)

    # -- sharing lessons, and whether memory helps ----------------------------------------

    def export(self, fmt: str = "markdown", min_confidence: float = 0.5) -> str:
        """The confident lessons (and every pinned or taught one, and the house rules a new
        run of this project is shown, whatever their confidence), best first: ``markdown``
        a house-rules file for people, ``jsonl`` for ``import_lessons`` in another store.
        Lessons the holdout promoted lead as house rules; those it demoted are left out."""
        from reflect.api.exchange import export_lessons
        from reflect.api.learn import house_rules

        verdicts = {e.lesson_id: e.to_dict(self._holdout) for e in self.effects() if e.verdict}
        return export_lessons(self._store, fmt, min_confidence, verdicts,
                              [item.id for item in house_rules(self, port(self))])

    def import_lessons(self, path: str | os.PathLike[str]) -> ImportReport:
        """Read a ``jsonl`` export, every line checked and scrubbed again; a bad line is
        reported by number while the rest is imported."""
        from reflect.api.exchange import import_lessons

        return import_lessons(self._store, Path(path), self._scrubber.scrub, self.clock())

    def progress(self, min_runs: int = 5) -> Progress:
        """Repeat rates run by run, early runs against recent ones once there are
        ``min_runs``; ``reflect.api.repeat_rates.render`` writes it for people."""
        from reflect.api import repeat_rates

        return repeat_rates.report(self._store, min_runs)

    # -- the store itself -------------------------------------------------------------

    def doctor(self) -> list[Finding]:
        """What is wrong with the store and how to recover: ``doctor.Finding`` each."""
        from reflect.api import doctor

        return doctor.diagnose(self.home, self.store_url, self.settings.upkeep.max_failures)

    def repair(self) -> list[str]:
        """Keep a damaged store aside, start a new one, replay what was kept aside, apply
        the size bound."""
        from reflect.api import doctor

        self.close()
        return doctor.repair(self.home, self.store_url, self.clock(),
                             self.settings.upkeep.max_failures)


class Port:
    """What ``learn`` and ``eval`` use of a ``Memory`` beyond its public methods, named in
    one place (``port(mem)``): the store it opened (a baseline builds its block from it as
    recall does), its vectors, its scrubber, a recall's query and the rules recall
    applies, and its clock set for a while (a learned session's own times). Internal: no
    other module reaches into a ``Memory``."""

    def __init__(self, mem: Memory):
        self._mem = mem

    @property
    def store(self) -> Store:
        return self._mem._store

    @property
    def vectors(self) -> Vectors:
        return self._mem._vectors

    @property
    def scrubber(self) -> Scrubber:
        return self._mem._scrubber

    @property
    def predictor(self) -> Predictor:
        return self._mem._predictor

    @property
    def holdout(self) -> Holdout:
        return self._mem._holdout

    def query(self, run: str | None = None, goal: str = "", phase: str = "",
              iteration: int | None = None, max_tokens: int = DEFAULT_MAX_TOKENS,
              sections: tuple[str, ...] = ("recent", "lessons"), action: str = "") -> Query:
        """What a recall would ask the store (``recall.block.Query``)."""
        return self._mem._query(run, goal, phase, iteration, max_tokens, sections, action)

    @contextlib.contextmanager
    def clocked(self, clock: Callable[[], float]) -> Iterator[None]:
        """The memory's clock is ``clock`` within, its own again after."""
        settings = self._mem.settings
        self._mem.settings = replace(settings, clock=clock)
        try:
            yield
        finally:
            self._mem.settings = settings


def port(mem: Memory) -> Port:
    """``mem``'s insides that ``learn`` and ``eval`` use (``Port``)."""
    return Port(mem)


def _scope_aside() -> str:
    """The project's scope while the store cannot be read: derived afresh from the git
    config (not cached), so the capture kept aside is replayed into its project's lessons."""
    try:
        return scope_of(Path.cwd(), UNCACHED)
    except OSError:  # the working directory is gone: no project to name
        return GLOBAL


def benign_entry(row: Mapping[str, Any]) -> ErrorEntry:
    """The API's record of a benign exit: no fingerprint, no lesson."""
    return ErrorEntry(
        failure_id=row["id"], fingerprint="", run=row["run"], iteration=row["iteration"],
        seq=row.get("seq", 0), ts=row["ts"], error_type="Benign",
        message=f"`{row['program']}` exit {row['exit_code']} answered a question, no error",
        signature="", phase=row["phase"], goal="", action=row["action"],
        exit_code=row["exit_code"], source="benign", redactions=0, category="benign",
        severity="low", lesson_id="")


def _entry(row: FailureRow, lesson: LessonRow | None) -> ErrorEntry:
    """The API's record of a stored failure row, with its fingerprint's current hint."""
    columns: Mapping[str, Any] = row
    same = {f.name for f in fields(ErrorEntry)} & columns.keys()
    return ErrorEntry(**{
        **{name: columns[name] for name in same},
        "failure_id": row["id"],
        "iteration": row["iteration"] if row["iteration"] is not None else 0,
        "lesson_id": lesson["id"] if lesson else row["lesson_id"],
        "hint": lesson["guidance"] if lesson else "",
    })
