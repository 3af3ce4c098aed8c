"""reflect: failure memory for autonomous coding agents.

The public API is what this module exports: ``Memory``, the ``RunContext`` and ``Settings`` it
takes with the rules a setting may hold (``Predictor``, ``Holdout``, ``Retries``), the records
and answers its methods hand out, and the errors they raise (``StoreUnavailable``,
``Rejected``).
Evaluation is ``reflect.eval``'s. Every other module is internal (docs/design.md, "Layout")."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself costs a hook ~2 ms to import
if TYPE_CHECKING:
    from reflect.api.context import RunContext
    from reflect.api.exchange import ImportReport
    from reflect.api.learn import LearnReport
    from reflect.api.memory import Memory
    from reflect.api.settings import Settings
    from reflect.base.answers import Consolidation, Injection, LessonDetail, Progress, Stats, Status
    from reflect.base.records import ErrorEntry, Lesson, Recall, RecallItem
    from reflect.recall.holdout import Effect, Holdout
    from reflect.recall.predict import Predictor
    from reflect.reflection.queue import Retries
    from reflect.store.base import Rejected, StoreUnavailable
    from reflect.store.health import Finding

__all__ = ["Consolidation", "Effect", "ErrorEntry", "Finding", "Holdout", "ImportReport",
           "Injection", "LearnReport", "Lesson", "LessonDetail", "Memory", "Predictor",
           "Progress", "Recall", "RecallItem", "Rejected", "Retries", "RunContext", "Settings",
           "Stats", "Status", "StoreUnavailable"]
__version__ = "0.1.0"

# Where each name lives: loaded on first use, so a command (a hook) that needs none of the
# library starts fast.
_HOMES = {
    "Memory": "reflect.api.memory", "Settings": "reflect.api.settings",
    "RunContext": "reflect.api.context",
    "ErrorEntry": "reflect.base.records", "Lesson": "reflect.base.records",
    "Recall": "reflect.base.records", "RecallItem": "reflect.base.records",
    "Predictor": "reflect.recall.predict", "Holdout": "reflect.recall.holdout",
    "Effect": "reflect.recall.holdout", "Retries": "reflect.reflection.queue",
    "Finding": "reflect.store.health",
    "StoreUnavailable": "reflect.store.base", "Rejected": "reflect.store.base",
    "ImportReport": "reflect.api.exchange", "LearnReport": "reflect.api.learn",
    "Status": "reflect.base.answers", "Stats": "reflect.base.answers",
    "Injection": "reflect.base.answers",
    "LessonDetail": "reflect.base.answers", "Consolidation": "reflect.base.answers",
    "Progress": "reflect.base.answers",
}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'reflect' has no attribute {name!r}")
    # __import__, as an import statement does (importlib.import_module would hide the
    # module from `python -X importtime`, by which the hot path is checked).
    found: object = getattr(__import__(_HOMES[name], fromlist=[name]), name)
    return found
