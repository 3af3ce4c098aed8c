"""reflect: failure memory for autonomous coding agents.

The public API is what this module exports: ``Memory``, the ``Settings`` it takes with the
rules a setting may hold (``Predictor``, ``Holdout``, ``Retries``), and the records and answers its
methods hand out.
Evaluation is ``reflect.eval``'s. Every other module is internal (docs/design.md, "Layout")."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a hook ~2 ms to import
if TYPE_CHECKING:
    from reflect.answers import Consolidation, Injection, LessonDetail, Progress, Stats, Status
    from reflect.exchange import ImportReport
    from reflect.learn import LearnReport
    from reflect.memory import Memory
    from reflect.recall.holdout import Effect, Holdout
    from reflect.recall.predict import Predictor
    from reflect.records import ErrorEntry, Lesson, Recall, RecallItem
    from reflect.reflection.queue import Retries
    from reflect.settings import Settings
    from reflect.store.health import Finding

__all__ = ["Consolidation", "Effect", "ErrorEntry", "Finding", "Holdout", "ImportReport",
           "Injection", "LearnReport", "Lesson", "LessonDetail", "Memory", "Predictor",
           "Progress", "Recall", "RecallItem", "Retries", "Settings", "Stats", "Status"]
__version__ = "0.1.0"

# Where each name lives: loaded on first use, so a command (a hook) that needs none of the
# library starts fast.
_HOMES = {
    "Memory": "reflect.memory", "Settings": "reflect.settings",
    "ErrorEntry": "reflect.records", "Lesson": "reflect.records",
    "Recall": "reflect.records", "RecallItem": "reflect.records",
    "Predictor": "reflect.recall.predict", "Holdout": "reflect.recall.holdout",
    "Effect": "reflect.recall.holdout", "Retries": "reflect.reflection.queue",
    "Finding": "reflect.store.health",
    "ImportReport": "reflect.exchange", "LearnReport": "reflect.learn",
    "Status": "reflect.answers", "Stats": "reflect.answers", "Injection": "reflect.answers",
    "LessonDetail": "reflect.answers", "Consolidation": "reflect.answers",
    "Progress": "reflect.answers",
}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'reflect' has no attribute {name!r}")
    # __import__, as an import statement does (importlib.import_module would hide the
    # module from `python -X importtime`, by which the hot path is checked).
    found: object = getattr(__import__(_HOMES[name], fromlist=[name]), name)
    return found
