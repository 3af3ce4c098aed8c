"""``Memory``: the library API that the CLI and Python agents share."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from reflect import config
from reflect.capture import Parsed, bounded, parse, synthesize
from reflect.fingerprint import fingerprint
from reflect.heuristics import heuristic_lesson
from reflect.records import ErrorEntry, Recall, RecallItem
from reflect.render import RECENT_HEADER, fit, recent_item_text
from reflect.scrub import Scrubber, repo_from_git_config
from reflect.store import SQLiteStore, new_id, prepare_home

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
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.time,
    ):
        self.home = Path(home) if home is not None else config.default_home()
        self.enabled = config.enabled()
        self.run = run or config.default_run()
        self.clock = clock
        self.busy_timeout = busy_timeout
        patterns = (*scrub_patterns, *config.read_patterns(self.home))
        self.scrubber = Scrubber(patterns, repo=repo_from_git_config(Path.cwd()))
        self._store: SQLiteStore | None = None

    # The store opens on first use, so a Memory can always be constructed;
    # a store that cannot be opened degrades capture and recall, never raises.
    @property
    def store(self) -> SQLiteStore:
        if self._store is None:
            self._store = SQLiteStore(self.home, self.busy_timeout)
        return self._store

    def close(self) -> None:
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
            stored, lesson_row = self.store.add_failure(failure, lesson)
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
    ) -> Recall:
        """This run's recent failures, one item per fingerprint, newest first."""
        if not self.enabled:
            return Recall()
        try:
            rows = self.store.recent_failures(run or self.run, iteration, RECENT_WINDOW)
            groups: dict[str, list[dict]] = {}
            for row in rows:  # newest first, so each group's first row is its latest
                groups.setdefault(row["fingerprint"], []).append(row)
            latest = [group[0] for group in groups.values()][:MAX_RECENT_ITEMS]
            lessons = self.store.lessons([f["lesson_id"] for f in latest])
        except (sqlite3.Error, OSError) as e:
            config.warn(f"store {self.home} not readable ({e}); no failures recalled")
            return Recall()
        items = []
        for rank, f in enumerate(latest):
            group = groups[f["fingerprint"]]
            items.append(RecallItem(
                section="recent",
                id=f["lesson_id"],
                text=recent_item_text(f, len(group), lessons.get(f["lesson_id"])),
                fingerprint=f["fingerprint"],
                source_failure_ids=[g["id"] for g in group],
                score=round(1 / (1 + rank), 3),
            ))
        return fit(RECENT_HEADER, items, max_tokens)

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
        return self.store.resolve_open(run, iteration, resolution, self.clock())

    def failures(self, run: str | None = None, limit: int = 20) -> list[ErrorEntry]:
        rows = self.store.failures(run, limit)
        lessons = self.store.lessons([r["lesson_id"] for r in rows])
        return [_entry(r, lessons.get(r["lesson_id"])) for r in rows]

    def failure(self, failure_id: str) -> ErrorEntry | None:
        row = self.store.failure(failure_id)
        if row is None:
            return None
        return _entry(row, self.store.lessons([row["lesson_id"]]).get(row["lesson_id"]))

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
        lesson_id=row["lesson_id"],
        friction=row["friction"],
        resolution=row.get("resolution", ""),
        hint=lesson["guidance"] if lesson else "",
    )
