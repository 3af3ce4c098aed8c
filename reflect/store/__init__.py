"""The store: one ``Store`` protocol, two backends (SQLite embedded by default,
PostgreSQL for teams, chosen by ``REFLECT_STORE``). All SQL lives in this package."""

from __future__ import annotations

import os
from pathlib import Path

from reflect.store.base import Rejected, Row, StoreUnavailable
from reflect.store.health import CannotRepair, Finding, Health
from reflect.store.protocol import Store
from reflect.store.sqlite import DB_NAME, SQLiteStore, prepare_home
from reflect.store.vectors import error_query

__all__ = ["DB_NAME", "CannotRepair", "Finding", "Health", "Rejected", "Row", "SQLiteStore",
           "Store", "StoreUnavailable", "backend", "error_query", "open_store", "prepare_home",
           "store_url"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def store_url(url: str | None = None) -> str:
    """The shared store's URL: ``url``, else ``REFLECT_STORE``; "" for the SQLite file."""
    return (url if url is not None else os.environ.get("REFLECT_STORE", "")).strip()


def backend(url: str) -> type[Store]:
    """The backend of a store's URL (``store_url``'s): PostgreSQL for a postgresql:// URL,
    the SQLite file for ""."""
    if url.startswith(POSTGRES_SCHEMES):
        try:  # imported here: a SQLite user never loads psycopg
            from reflect.store.postgres import PostgresStore
        except ImportError as e:
            raise StoreUnavailable(
                f"REFLECT_STORE names a PostgreSQL store but psycopg is not installed ({e}):"
                " pip install 'reflect-memory[postgres]'") from e
        return PostgresStore
    if url:
        raise StoreUnavailable(
            f"REFLECT_STORE={url.split('://')[0]}://… is not a store this reflect knows: use"
            " postgresql://user@host/database, or unset it for the SQLite file in REFLECT_HOME")
    return SQLiteStore


def open_store(home: Path, url: str | None = None, busy_timeout: float = 5.0) -> Store:
    """The store: PostgreSQL when ``url`` (else ``REFLECT_STORE``) is a postgresql:// URL,
    else the SQLite file in ``home``. ``home`` holds what stays on this machine either way
    (index files, captures kept aside)."""
    url = store_url(url)
    if backend(url) is SQLiteStore:  # else psycopg is there: backend said so
        return SQLiteStore(home, busy_timeout)
    from reflect.store.postgres import PostgresStore

    return PostgresStore(url, home, busy_timeout)
