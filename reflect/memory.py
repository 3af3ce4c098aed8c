"""``Memory``: the library API that the CLI and Python agents share."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from reflect import config
from reflect.capture import Parsed, bounded, parse, synthesize
from reflect.fingerprint import fingerprint
from reflect.heuristics import heuristic_lesson
from reflect.records import ErrorEntry, Recall, RecallItem
from reflect.render import RECENT_HEADER, fit, recent_item_text
from reflect.store import SQLiteStore, new_id, prepare_home
from reflect.worker import HEARTBEAT_STALE, Worker, start_detached, start_thread

PENDING_FILE = "pending.jsonl"  # captures that could not reach the store, replayed later
RECENT_WINDOW = 200  # failures scanned for the recent section: bounds recall on long runs
MAX_RECENT_ITEMS = 8
DEFAULT_MAX_TOKENS = 400
HEURISTIC_CONFIDENCE = 0.5


class Memory:
    def __init__(
        self,
        home: str | os.PathLike | None = None,
        *,
        run: str | None = None,
        scrub_patterns: tuple[str, ...] = (),
        model: str | None = None,
        reflect: bool = False,
        busy_timeout: float = 5.0,
        close_timeout: float = 2.0,
        clock: Callable[[], float] = time.time,
    ):
        """``model`` (else ``REFLECT_MODEL``) names the litellm model that writes lessons;
        ``reflect=True`` runs the worker that calls it in a daemon thread of this process."""
        self.home = Path(home) if home is not None else config.default_home()
        self.enabled = config.enabled()
        self.run = run or config.default_run()
        self.clock = clock
        self.busy_timeout = busy_timeout
        self.close_timeout = close_timeout
        self.scrubber = config.scrubber(self.home, scrub_patterns)
        self.model = config.model_settings(model) if self.enabled else None
        self._store: SQLiteStore | None = None
        self._worker = None
        if reflect and self.model is not None:
            self._worker = start_thread(self.home, self.model, clock)

    # The store opens on first use, so a Memory can always be constructed;
    # a store that cannot be opened degrades capture and recall, never raises.
    @property
    def store(self) -> SQLiteStore:
        if self._store is None:
            self._store = SQLiteStore(self.home, self.busy_timeout)
        return self._store

    def close(self) -> None:
        """Close the store; a worker thread gets ``close_timeout`` seconds to finish its
        job, never more (an unfinished job is retried by the next worker)."""
        if self._worker is not None:
            thread, stop = self._worker
            stop.set()
            thread.join(self.close_timeout)
            self._worker = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- capture ---------------------------------------------------------------

    def capture(
        self,
        run: str | None = None,
        iteration: int | None = None,
        goal: str = "",
        phase: str = "",
        action: str = "",
        exit_code: int | None = None,
        error_text: str | None = None,
        crash: dict | None = None,
        exc: BaseException | None = None,
    ) -> ErrorEntry | None:
        """Record a failed iteration; None only when failure memory is switched off."""
        if not self.enabled:
            return None
        try:
            parsed = parse(
                phase=phase, exit_code=exit_code, error_text=error_text, crash=crash, exc=exc
            )
        except Exception as e:  # a parser bug must not cost the agent its failure record
            config.warn(f"could not parse the error ({e!r}); recorded from phase and exit code")
            parsed = Parsed("synthesized", synthesize(phase, exit_code), phase, exit_code)
        failure, lesson = self._entry_rows(run or self.run, iteration, goal, action, parsed)
        try:
            self._replay_pending()
            stored, lesson_row = self.store.add_failure(
                failure, lesson, reflect=self.model is not None
            )
        except (sqlite3.Error, OSError) as e:
            path = self._keep_pending(failure, lesson)
            config.warn(f"store {self.home} not writable ({e}); failure kept in {path}")
            return _entry({**failure, "seq": 0, "lesson_id": lesson["id"]}, lesson)
        return _entry(stored, lesson_row)

    def _entry_rows(
        self, run: str, iteration: int | None, goal: str, action: str, parsed: Parsed
    ) -> tuple[dict, dict]:
        """Scrub every field, fingerprint the scrubbed error and write its heuristic lesson."""
        redactions = 0

        def scrub(text: str) -> str:
            nonlocal redactions
            clean, n = self.scrubber.scrub(bounded(text))
            redactions += n
            return clean

        error = parsed.error
        fields = {
            "goal": scrub(goal),
            "phase": scrub(parsed.phase),
            "action": scrub(action),
            "error_type": scrub(error.error_type),
            "message": scrub(error.message),
            "signature": scrub(error.signature),
            "friction": scrub(parsed.friction),
        }
        frames = tuple(f for f in fields["signature"].split(" > ") if f)
        if parsed.harness_fingerprint:  # the harness already knows which failures are one
            frames = (scrub(parsed.harness_fingerprint),)
        fp = fingerprint(fields["error_type"], fields["message"], frames)
        hint = heuristic_lesson(
            fields["error_type"], fields["message"], fields["action"], fields["phase"],
            parsed.exit_code,
        )
        now = self.clock()
        lesson = {
            "id": new_id("L"),
            "fingerprint": fp,
            "trigger": hint.trigger,
            "guidance": hint.guidance,
            "category": hint.category,
            "severity": hint.severity,
            "kind": "heuristic",
            "confidence": HEURISTIC_CONFIDENCE,
            "created": now,
        }
        failure = {
            "id": new_id("F"),
            "run": scrub(run),
            "iteration": iteration,
            "ts": now,
            **fields,
            "exit_code": parsed.exit_code,
            "fingerprint": fp,
            "source": parsed.source,
            "redactions": redactions,
            "category": hint.category,
            "severity": hint.severity,
        }
        return failure, lesson

    def _keep_pending(self, failure: dict, lesson: dict) -> Path:
        line = json.dumps({"failure": failure, "lesson": lesson}) + "\n"
        for path in (self.home / PENDING_FILE, self._spare_pending()):
            try:
                prepare_home(path.parent)
                with open(path, "a", encoding="utf-8") as f:
                    f.write(line)
                return path
            except OSError:
                continue
        raise OSError(f"cannot write {PENDING_FILE} beside {self.home} nor in the temp directory")

    def _replay_pending(self) -> None:
        """Move captures kept while the store was unwritable into it, once."""
        for path in (self.home / PENDING_FILE, self._spare_pending()):
            if not path.exists():
                continue
            claimed = path.with_name(f"{path.name}.{os.getpid()}")
            try:
                os.rename(path, claimed)  # atomic: only one process replays a file
            except OSError:
                continue
            for line in claimed.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                try:
                    self.store.add_failure(record["failure"], record["lesson"])
                except sqlite3.IntegrityError:  # already replayed
                    pass
            claimed.unlink()

    def _spare_pending(self) -> Path:
        """Where captures go when even the store directory cannot be written: one file
        per store, so they are replayed into the store they were meant for."""
        key = hashlib.sha256(str(self.home.resolve()).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"reflect-{os.getuid()}" / f"pending-{key}.jsonl"

    # -- recall ----------------------------------------------------------------

    def recall(
        self,
        run: str | None = None,
        goal: str = "",
        phase: str = "",
        iteration: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        sections: tuple[str, ...] = ("recent", "lessons"),
    ) -> Recall:
        """The block for the next prompt: this run's recent failures, one item per
        fingerprint, newest first. ``sections`` limits what is searched."""
        if not self.enabled or "recent" not in sections:
            return Recall()
        try:
            rows = self.store.recent_failures(run or self.run, iteration, RECENT_WINDOW)
            groups: dict[str, list[dict]] = {}
            for row in rows:  # newest first, so each group's first row is its latest
                groups.setdefault(row["fingerprint"], []).append(row)
            latest = [group[0] for group in groups.values()][:MAX_RECENT_ITEMS]
            lessons = self.store.active_lessons([f["fingerprint"] for f in latest])
        except (sqlite3.Error, OSError) as e:
            config.warn(f"store {self.home} not readable ({e}); no failures recalled")
            return Recall()
        items = []
        for rank, f in enumerate(latest):
            group = groups[f["fingerprint"]]
            lesson = lessons.get(f["fingerprint"])
            items.append(RecallItem(
                section="recent",
                id=lesson["id"] if lesson else f["lesson_id"],
                text=recent_item_text(f, len(group), lesson),
                fingerprint=f["fingerprint"],
                source_failure_ids=[g["id"] for g in group],
                score=round(1 / (1 + rank), 3),
            ))
        return fit(RECENT_HEADER, items, max_tokens)

    # -- background work ---------------------------------------------------------

    def ensure_worker(self) -> bool:
        """For shell harnesses: start a detached worker when jobs are due and no live
        worker holds the queue (``REFLECT_WORKER=off`` disables it). True if started."""
        if not self.enabled or not config.worker_allowed() or self.model is None:
            return False
        if not self.store.claim_worker_start(self.clock(), HEARTBEAT_STALE):
            return False
        start_detached(self.home, self.model)
        return True

    def run_worker(self, once: bool = False, idle_exit: float | None = None) -> int:
        """Run jobs in this process: those due now with ``once``, else until idle."""
        worker = Worker(self.home, self.model, clock=self.clock)
        try:
            if once:
                return worker.run_once()
            worker.run(threading.Event(), idle_exit)
            return 0
        finally:
            worker.close()

    def status(self) -> dict:
        now = self.clock()
        cost, calls = self.store.spent_today(now)
        return {
            "model": self.model.model if self.model else None,
            "jobs": self.store.job_counts(),
            "failed_jobs": self.store.failed_jobs(),
            "spend_today_usd": round(cost, 6),
            "calls_today": calls,
            "max_cost_usd": self.model.max_cost_usd if self.model else None,
            "workers_alive": self.store.live_workers(now, HEARTBEAT_STALE),
        }

    # -- outcome and inspection --------------------------------------------------

    def outcome(
        self, run: str | None = None, iteration: int | None = None, success: bool = True,
        action: str = "",
    ) -> list[str]:
        """Report how an iteration ended. On success the run's open failures get
        ``action`` as their resolution; returns the ids of the failures resolved."""
        run = run or self.run
        if not self.enabled or not success:
            return []
        if not self.store.has_run(run):
            config.warn(f"run {run!r} has no captured failures; nothing to resolve")
            return []
        if iteration is None:
            iteration = self.store.next_iteration(run)
        resolution, _ = self.scrubber.scrub(bounded(action) or "a later iteration succeeded")
        # With a model, the worker revises the lessons of what this fixed.
        return self.store.resolve_open(run, iteration, resolution, self.clock(),
                                       reflect=self.model is not None)

    def failures(self, run: str | None = None, limit: int = 20) -> list[ErrorEntry]:
        rows = self.store.failures(run, limit)
        lessons = self.store.active_lessons([r["fingerprint"] for r in rows])
        return [_entry(r, lessons.get(r["fingerprint"])) for r in rows]

    def failure(self, failure_id: str) -> ErrorEntry | None:
        row = self.store.failure(failure_id)
        if row is None:
            return None
        return _entry(row, self.store.active_lessons([row["fingerprint"]]).get(row["fingerprint"]))

    def stats(self, run: str | None = None) -> dict:
        by_type = self.store.count_by("error_type", run)
        return {
            "failures": sum(n for _, n in by_type),
            "by_category": dict(self.store.count_by("category", run)),
            "by_error_type": dict(by_type),
            "most_common_error": by_type[0][0] if by_type else None,
            "by_run": dict(self.store.count_by("run", run)),
        }

    def clear(self, run: str | None = None) -> int:
        """Delete one run's failures, or all of them with ``run=None``."""
        return self.store.clear(run)


def _entry(row: dict, lesson: dict | None) -> ErrorEntry:
    return ErrorEntry(
        failure_id=row["id"],
        fingerprint=row["fingerprint"],
        run=row["run"],
        iteration=row["iteration"] if row["iteration"] is not None else 0,
        seq=row["seq"],
        ts=row["ts"],
        error_type=row["error_type"],
        message=row["message"],
        signature=row["signature"],
        phase=row["phase"],
        goal=row["goal"],
        action=row["action"],
        exit_code=row["exit_code"],
        source=row["source"],
        redactions=row["redactions"],
        category=row["category"],
        severity=row["severity"],
        lesson_id=lesson["id"] if lesson else row["lesson_id"],
        friction=row["friction"],
        resolution=row.get("resolution", ""),
        hint=lesson["guidance"] if lesson else "",
    )
