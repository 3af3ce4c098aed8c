"""``SQLStore``: every query the service makes, written once over a backend's primitives
(``reflect.store.base``). ``SQLiteStore`` and ``PostgresStore`` are its two backends."""

from __future__ import annotations

from reflect.store.baselines import BaselineQueries
from reflect.store.failures import FailureQueries
from reflect.store.runs import RunQueries
from reflect.store.upkeep import UpkeepQueries
from reflect.store.vectors import VectorQueries


class SQLStore(FailureQueries, RunQueries, UpkeepQueries, VectorQueries, BaselineQueries):
    pass
