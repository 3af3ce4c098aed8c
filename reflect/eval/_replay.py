"""Replay a trace through a fresh store, recalling before every iteration as a harness would.

Before each record the block is recalled from what a harness knows then: the
run, its goal and phase and the iteration number (the store holds the run's
history). The record's own error is never used for recall, nor its action unless
``actions`` is set: then the block is the one a client that tells the command about to
run (a PreToolUse hook) would get. Then a failure is captured and a success reported as
the outcome. Modes:

- ``on``: recall with every section (this run's failures and, where the
  store has them, lessons from earlier runs);
- ``recency``: recall with ``sections=("recent",)`` only;
- ``off``: no recall; the injection is recorded empty;
- ``last3``, ``popular``: baselines built from the same store (``baselines.py``):
  the run's last three failures only; the recent section plus the lessons of
  the causes seen in the most earlier runs, regardless of the goal.

The trace itself does not change with the mode: the agent's failures are the
recorded ones. So a replay measures what memory would have put in front of
the agent (coverage, noise, tokens, latency), not whether the agent would
then have avoided the repeat; a live A/B (``ab.py``) measures that.

The store's clock is the trace's ``ts``, held back from going backwards (runs
of a batch overlap in time but replay one after another); a record without
``ts`` is one second after the record before it.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from reflect.api.memory import DEFAULT_MAX_TOKENS, Memory, port
from reflect.api.settings import Settings
from reflect.base.choices import REPLAY_MODES
from reflect.base.records import Recall
from reflect.capture.details import foreign
from reflect.capture.gitconfig import project_scope
from reflect.eval._baselines import BASELINES
from reflect.eval._matched import matched
from reflect.eval._metrics import summarize
from reflect.eval._signature import group, signature
from reflect.eval._trace import TraceRecord, write_json, write_jsonl
from reflect.recall.predict import Predictor

ITERATIONS_FILE = "iterations.jsonl"
SUMMARY_FILE = "summary.json"


class ReplayError(RuntimeError):
    """A replay that cannot start; the message says how to fix it."""


class Injector:
    """Recall for one mode and keep the provenance of what was injected.

    ``signatures`` maps each captured failure id to the evaluation's own
    signature of its error, so an injected item can be traced back to the
    failures it came from without trusting the store's fingerprints.
    """

    def __init__(self, mem: Memory, mode: str, max_tokens: int = DEFAULT_MAX_TOKENS):
        if mode not in REPLAY_MODES:
            raise ReplayError(f"unknown mode {mode!r}; choose one of {', '.join(REPLAY_MODES)}")
        if not mem.enabled:
            raise ReplayError("failure memory is switched off (REFLECT_FAILURE_MEMORY=0); "
                              "unset it to evaluate")
        self.mem, self.mode, self.max_tokens = mem, mode, max_tokens
        self.signatures: dict[str, str | None] = {}

    def recall(self, run: str, goal: str, phase: str, iteration: int, action: str = ""
               ) -> tuple[Recall, dict[str, Any]]:
        """The block before an iteration, and its log row (items with provenance)."""
        if self.mode == "off":
            return Recall(), {"tokens": 0, "items": [], "recall_ms": None}
        sections = {"sections": ("recent",)} if self.mode == "recency" else {}
        start = time.perf_counter()
        if self.mode in BASELINES:
            rec = BASELINES[self.mode](self.mem, run=run, goal=goal, phase=phase,
                                       iteration=iteration, max_tokens=self.max_tokens)
        else:
            rec = self.mem.recall(run=run, goal=goal, phase=phase, iteration=iteration,
                                  max_tokens=self.max_tokens, action=action, **sections)
        elapsed = (time.perf_counter() - start) * 1000
        items = [
            {
                "section": item.section,
                "id": item.id,
                "score": item.score,
                "fingerprint": item.fingerprint,
                "source_failure_ids": list(item.source_failure_ids),
                "signatures": sorted({
                    s for f in item.source_failure_ids if (s := self.signatures.get(f))
                }),
                "groups": sorted({
                    g for f in item.source_failure_ids if (g := group(self.signatures.get(f)))
                }),
                "text": item.text,
                "foreign": sorted(foreign(item.text, [
                    f for i in item.source_failure_ids if (f := port(self.mem).store.failure(i))])),
            }
            for item in rec.items
        ]
        return rec, {"tokens": rec.tokens, "items": items, "recall_ms": round(elapsed, 3)}

    def report(self, run: str, iteration: int, goal: str, phase: str, action: str,
               exit_code: int | None, error_text: str, success: bool) -> dict[str, Any]:
        """Capture a failure or report a success; returns the row's outcome fields."""
        if success:
            # every success, as the mini-swe-agent integration reports them: a step before
            # the run's first failure may have made the module a later one misses
            self.mem.outcome(run=run, iteration=iteration, success=True, action=action)
            return {"signature": None, "group": None, "failure_id": None, "capture_ms": None}
        start = time.perf_counter()
        entry = self.mem.capture(run=run, iteration=iteration, goal=goal, phase=phase,
                                 action=action, exit_code=exit_code,
                                 error_text=error_text or None)
        elapsed = (time.perf_counter() - start) * 1000
        sig = signature(error_text)
        if entry is None:
            raise ReplayError("capture recorded nothing; is REFLECT_FAILURE_MEMORY=0 set?")
        self.signatures[entry.failure_id] = sig
        return {"signature": sig, "group": group(sig), "failure_id": entry.failure_id,
                "capture_ms": round(elapsed, 3)}

    def verify(self) -> None:
        """Fail loudly when the store kept fewer failures than were captured: capture
        degrades instead of raising, and recall from such a store would understate
        every figure."""
        stats = self.mem.stats()
        stored = stats.failures + stats.benign
        if stored != len(self.signatures):
            raise ReplayError(f"the store at {self.mem.home} holds {stored} of the "
                              f"{len(self.signatures)} failures captured (see the warnings "
                              "above); the figures would be wrong, so none are reported")


def replay(
    records: Sequence[TraceRecord],
    mode: str = "on",
    out: str | Path | None = None,
    *,
    store: str | Path | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    seed: int = 0,
    trace: str | None = None,
    embeddings: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    predictor: Predictor | None = None,
    observe: Callable[[Memory, TraceRecord], None] | None = None,
    scope_by_project: bool = False,
    actions: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Replay ``records`` in order; returns the summary (also written under ``out``).

    ``store`` keeps the store in that directory, which must not exist yet;
    by default it lives in a temporary directory removed afterwards.
    ``embeddings`` is handed to ``Memory`` (None: its default, ``REFLECT_EMBEDDINGS``),
    and so is ``predictor`` (None: the product's default). ``scope_by_project`` gives
    each record's ``project`` a scope of its own, as a team store scoped by project has
    it (lessons of one project are not recalled in another). ``observe`` is called with the
    memory and the record after each recall, before the record is captured (a bench reads
    the predictor's estimates there). ``actions`` tells each recall the record's action,
    the command about to run. ``settings``: the memory's, whose clock, credit and
    predictor the replay sets (a bench's tuned rules; a test's fake store).
    """
    if mode not in REPLAY_MODES:
        raise ReplayError(f"unknown mode {mode!r}; choose one of {', '.join(REPLAY_MODES)}")
    with contextlib.ExitStack() as stack:
        if store is None:
            home = Path(stack.enter_context(tempfile.TemporaryDirectory(
                prefix="reflect-replay-"))) / "store"
        elif Path(store).exists():
            raise ReplayError(f"store {store} already exists; a replay needs a fresh store: "
                              "remove it or choose another directory")
        else:
            home = Path(store)
        now = [0.0]
        started = time.perf_counter()
        # The recorded agent never saw the blocks: crediting outcomes to the lessons would
        # mark every lesson that foresaw a failure as one that failed to prevent it. A
        # replay starts from its own empty SQLite store, even where REFLECT_STORE names a
        # shared one.
        with Memory(home=home, store_url="", embeddings=embeddings, settings=replace(
                settings or Settings(), clock=lambda: now[0], credit=False,
                predictor=predictor)) as mem:
            mem.scope = "global"  # not the working directory's: a replay is of its trace
            rows = _rows(records, Injector(mem, mode, max_tokens), now, progress, observe,
                         scope_by_project, actions)
        wall = time.perf_counter() - started
    summary = {"mode": mode, "trace": trace, "records": len(records),
               "scope_by_project": scope_by_project, "actions": actions,
               "embeddings": embeddings, "wall_seconds": round(wall, 3),
               "blocks": blocks(rows), "matched": matched(rows), **summarize(rows, seed=seed)}
    if out is not None:
        out = Path(out)
        write_jsonl(out / ITERATIONS_FILE, rows)
        write_json(out / SUMMARY_FILE, summary)
    return summary


def _rows(records: Sequence[TraceRecord], injector: Injector, now: list[float],
          progress: Callable[[int, int], None] | None,
          observe: Callable[[Memory, TraceRecord], None] | None,
          scope_by_project: bool, actions: bool) -> list[dict[str, Any]]:
    """Each record recalled for, then captured or reported, on the store's clock ``now``."""
    mem, rows = injector.mem, []
    for index, r in enumerate(records):
        now[0] = max(r.ts, now[0]) if r.ts is not None else now[0] + 1.0
        if scope_by_project:
            mem.scope = project_scope(r.project) if r.project else "global"
        _, injected = injector.recall(r.run, r.goal, r.phase, r.iteration,
                                      r.action if actions else "")
        if observe is not None:
            observe(mem, r)
        outcome = injector.report(r.run, r.iteration, r.goal, r.phase, r.action,
                                  r.exit_code, r.error_text, r.success)
        rows.append({"index": index, "run": r.run, "project": r.project,
                     "iteration": r.iteration, "success": r.success, **outcome, **injected})
        if progress is not None:
            progress(index + 1, len(records))
    injector.verify()
    return rows


def blocks(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Items per injected block: all items and lesson-section items, mean over every
    iteration, mean over non-empty blocks, and the maximum."""
    out: dict[str, Any] = {"nonempty": sum(bool(r["items"]) for r in rows)}
    for name, keep in (("items", lambda i: True),
                       ("lesson_items", lambda i: i["section"] != "recent")):
        counts = [sum(map(keep, r["items"])) for r in rows]
        shown = [c for c, r in zip(counts, rows, strict=True) if r["items"]]
        out[name] = {"mean": round(sum(counts) / len(counts), 3) if counts else None,
                     "mean_nonempty": round(sum(shown) / len(shown), 3) if shown else None,
                     "max": max(counts, default=0)}
    return out
