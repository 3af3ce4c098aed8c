"""The store: one ``Store`` protocol, two backends (SQLite embedded by default,
PostgreSQL for teams, chosen by ``REFLECT_STORE``). All SQL lives in this package."""

from __future__ import annotations

from reflect.store.base import Rejected, Row, StoreUnavailable
from reflect.store.failures import error_query
from reflect.store.sqlite import DB_NAME, SQLiteStore, prepare_home

__all__ = ["DB_NAME", "Rejected", "Row", "SQLiteStore", "StoreUnavailable", "error_query",
           "prepare_home"]
