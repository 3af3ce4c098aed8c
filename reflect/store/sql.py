"""``SQLStore``: every query the service makes, written once over a backend's primitives
(``reflect.store.base``). ``SQLiteStore`` and ``PostgresStore`` are its two backends."""

from __future__ import annotations

from reflect.store.baselines import BaselineQueries
from reflect.store.credit import CreditQueries
from reflect.store.failures import FailureQueries
from reflect.store.jobs import JobQueries
from reflect.store.lessons import LessonQueries
from reflect.store.progress import ProgressQueries
from reflect.store.runs import RunQueries
from reflect.store.upkeep import UpkeepQueries
from reflect.store.vectors import VectorQueries


class SQLStore(FailureQueries, RunQueries, UpkeepQueries, VectorQueries, BaselineQueries,
               CreditQueries, JobQueries, LessonQueries, ProgressQueries):
    pass
