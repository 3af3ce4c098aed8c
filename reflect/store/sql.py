"""``SQLStore``: every query the service makes, written once over a backend's primitives
(``reflect.store.base``). ``SQLiteStore`` and ``PostgresStore`` are its two backends."""

from __future__ import annotations

from reflect.store.baselines import BaselineQueries
from reflect.store.failures import FailureQueries
from reflect.store.progress import ProgressQueries
from reflect.store.upkeep import UpkeepQueries
from reflect.store.vectors import VectorQueries


# FailureQueries brings the queries a capture uses in its transaction: runs, credit, jobs
# and (through jobs) lessons.
class SQLStore(FailureQueries, UpkeepQueries, VectorQueries, BaselineQueries, ProgressQueries):
    pass
