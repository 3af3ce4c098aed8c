"""Upkeep: confidence decays without use; weak lessons, old history and the oldest
failures past the store's bound are let go, and the file gives back the space.

Run by ``reflect consolidate`` and by the worker once a day. Pinned and taught
lessons are never removed; every removal is recorded (id, reason, time, never
the text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reflect.base.config import DEFAULT_MAX_FAILURES
from reflect.base.records import LessonRow
from reflect.store.protocol import UpkeepStore

if TYPE_CHECKING:
    from reflect.base.answers import Consolidation

DAY = 86400.0
GRACE_DAYS = 14.0  # a new lesson gets this long to prove itself
MIN_CONFIDENCE = 0.2  # below this (after decay) a lesson is removed
RETAIN_DAYS = 180.0  # failures, injections and cached query texts older than this go


@dataclass(frozen=True)
class Upkeep:
    """The rule of upkeep: ``half_life_days`` without use halve a lesson's confidence;
    ``max_failures``, the newest failures kept (and as many rows of the other raw history:
    injections, benign exits, steps that worked), None for no bound; raw history older
    than ``retain_days`` goes."""

    half_life_days: float = 90.0
    max_failures: int | None = DEFAULT_MAX_FAILURES
    retain_days: float = RETAIN_DAYS

    def __post_init__(self) -> None:
        if not 0 < self.half_life_days < float("inf"):
            raise ValueError(f"half-life {self.half_life_days} days: use a number above 0")


def effective_confidence(lesson: LessonRow, now: float, half_life_days: float) -> float:
    """Confidence halves for every half-life the lesson goes unused."""
    idle = max(0.0, now - max(lesson["last_used"], lesson["updated"])) / DAY
    decay: float = 0.5 ** (idle / half_life_days)
    return lesson["confidence"] * decay


def consolidate(store: UpkeepStore, now: float, rule: Upkeep) -> Consolidation:
    """Lessons and the per-cause counts stay whatever history goes. The space freed is
    given back to the file system."""
    weak = [r for r in store.aging_lessons(now - GRACE_DAYS * DAY)
            if effective_confidence(r, now, rule.half_life_days) < MIN_CONFIDENCE]
    failures, injections = store.prune(weak, now, now - rule.retain_days * DAY,
                                       rule.max_failures)
    store.purge()
    from reflect.base.answers import Consolidation  # an answer's types: not on capture's path

    return Consolidation([r["id"] for r in weak], failures, injections, store.reclaim())


def due(store: UpkeepStore, now: float) -> bool:
    last = store.consolidated_at()
    return last is None or last < now - DAY
