"""The store: one ``Store`` protocol, two backends (SQLite embedded by default,
PostgreSQL for teams, chosen by ``REFLECT_STORE``). All SQL lives in this package."""

from __future__ import annotations

from pathlib import Path

from reflect.store._vectors import error_query
from reflect.store.base import Rejected, Row, StoreUnavailable, redacted
from reflect.store.health import CannotRepair, Finding, Health
from reflect.store.protocol import Store
from reflect.store.sqlite import DB_NAME, SQLiteStore, prepare_home

__all__ = ["DB_NAME", "CannotRepair", "Finding", "Health", "Rejected", "Row", "SQLiteStore",
           "Store", "StoreUnavailable", "backend", "error_query", "open_store", "prepare_home"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def backend(url: str) -> type[Store]:
    """The backend of a store's URL (``RunContext.store_url``): PostgreSQL for a
    postgresql:// URL, the SQLite file for ""."""
    if url.startswith(POSTGRES_SCHEMES):
        try:  # imported here: a SQLite user never loads psycopg
            from reflect.store.postgres import PostgresStore
        except ImportError as e:
            raise StoreUnavailable(
                f"the store {redacted(url)} is PostgreSQL but psycopg is not installed ({e}):"
                " pip install 'reflect-memory[postgres]'") from e
        return PostgresStore
    if url:
        raise StoreUnavailable(
            f"REFLECT_STORE={url.split('://')[0]}://… is not a store this reflect knows: use"
            " postgresql://user@host/database, or unset it for the SQLite file in REFLECT_HOME")
    return SQLiteStore


def open_store(home: Path, url: str = "", busy_timeout: float = 5.0) -> Store:
    """The store: PostgreSQL when ``url`` is a postgresql:// URL, else the SQLite file in
    ``home``. ``home`` holds what stays on this machine either way (index files, captures
    kept aside)."""
    if backend(url) is SQLiteStore:  # else psycopg is there: backend said so
        return SQLiteStore(home, busy_timeout)
    from reflect.store.postgres import PostgresStore

    return PostgresStore(url, home, busy_timeout)
