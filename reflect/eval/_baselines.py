"""Baseline blocks for the replay, built from the same store the replay fills.

Each baseline returns a ``Recall`` whose items carry provenance
(``source_failure_ids``) exactly as the product's items do, so the replay
logs them and the metrics grade them with the same code. Like
``Memory.recall`` they log what they injected (the injection log and credit),
so the store evolves as it would under a harness showing that block. Tokens
are ``reflect.render.estimate_tokens`` over the block text (``fit`` keeps the
block within the same ``max_tokens``).

- ``last3``: the run's last three failures before this iteration, newest
  first, one item each (not grouped by fingerprint), written like the recent
  section's items (with the fingerprint's lesson id and hint); each item's
  provenance is that one failure. Nothing from earlier runs, so by
  construction it never covers a cross-run repeat.
- ``popular``: the product's recent section, then, in place of the lessons
  that fit the goal, the lessons of the ``Predictor.max_items`` (6) causes that
  failed in the most distinct runs other than this one (the replay plays runs
  in order, so those are earlier runs), regardless of the goal: one lesson a
  cause, the active lesson of its latest failure. Ties go to more failures,
  then the latest failure. As in the product, run counts are by cause, the
  causes the recent section shows are left out, lessons of another project's
  scope are left out, and a lesson's provenance is its fingerprint's latest
  failures (``cause_failure_ids``). Same item budget as mode ``on``: at
  most the predictor's ``max_items`` lesson items (6 by default, a tuned one's
  when the replay is given one) plus the recent section.
"""

from __future__ import annotations

from reflect.api.memory import Memory, port
from reflect.base.choices import BASELINE_MODES
from reflect.base.records import Recall, RecallItem
from reflect.recall.block import Query, recent_item, recent_items
from reflect.recall.render import (
    LESSONS_HEADER,
    RECENT_HEADER,
    fit,
    lesson_item_text,
)

LAST_FAILURES = 3


def last3(mem: Memory, *, run: str, goal: str, phase: str, iteration: int,
          max_tokens: int) -> Recall:
    """A block of the run's last three failures only."""
    store = port(mem).store
    latest = store.recent_failures(run, iteration, LAST_FAILURES)  # newest first
    lessons = store.active_lessons([f["fingerprint"] for f in latest]) if latest else {}
    escalate_after = mem.settings.escalate_after
    items = [recent_item(f, [f["id"]], lessons.get(f["fingerprint"]), 0, rank, escalate_after)
             for rank, f in enumerate(latest)]
    return _logged(mem, run, iteration, fit([(RECENT_HEADER, items)], max_tokens))


def popular(mem: Memory, *, run: str, goal: str, phase: str, iteration: int,
            max_tokens: int) -> Recall:
    """The recent section, then the lessons of the most widespread earlier failures."""
    inside = port(mem)
    store = inside.store
    rows = store.recent_failures(run, iteration, 200)
    recent = recent_items(store, Query(run=run, iteration=iteration,
                                       escalate_after=mem.settings.escalate_after), rows)
    shown = {row["cause"] for row in rows}
    # The lesson items of the predictor in use (a tuned one's): mode ``on``'s budget.
    max_items = inside.predictor.max_items
    lessons = store.popular_lessons(run, mem.scope, shown, max_items)
    items = [
        RecallItem(
            section="lesson",
            id=lesson["id"],
            text=lesson_item_text(lesson, failure, f"in {runs} earlier runs"),
            fingerprint=lesson["fingerprint"],
            source_failure_ids=store.cause_failure_ids(failure["cause"]),
            score=float(runs),
        )
        for lesson, failure, runs in lessons
    ]
    block = fit([(RECENT_HEADER, recent), (LESSONS_HEADER, items)], max_tokens)
    return _logged(mem, run, iteration, block)


def _logged(mem: Memory, run: str, iteration: int, block: Recall) -> Recall:
    """Log the injection as ``Memory.recall`` does, so credit and escalation follow."""
    if block.items:
        port(mem).store.record_injections(run, iteration, block.items, block.tokens,
                                          mem.clock())
    return block


BASELINES = dict(zip(BASELINE_MODES, (last3, popular), strict=True))
