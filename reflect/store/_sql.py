"""``SQLStore``: every query the service makes, written once over a backend's primitives
(``reflect.store.base``). ``SQLiteStore`` and ``PostgresStore`` are its two backends."""

from __future__ import annotations

from reflect.store._baselines import BaselineQueries
from reflect.store._failures import FailureQueries
from reflect.store._progress import ProgressQueries
from reflect.store._upkeep import UpkeepQueries
from reflect.store._vectors import VectorQueries


# FailureQueries brings the queries a capture uses in its transaction: runs, credit, jobs
# and (through jobs) lessons.
class SQLStore(FailureQueries, UpkeepQueries, VectorQueries, BaselineQueries, ProgressQueries):
    pass
