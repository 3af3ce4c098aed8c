"""What every backend gives the shared queries: rows, transactions, one error.

The queries (mixins of ``SQLStore`` in reflect/store/: failures.py, runs.py, jobs.py,
lessons.py…) are written once, in the SQL both SQLite and PostgreSQL speak: ``?`` and ``:name``
placeholders, ``INSERT … ON CONFLICT``, ``RETURNING``, ``GREATEST``/``LEAST``. A backend
supplies the primitives below and the few statements that differ (keyword search,
locking); domain modules call the store's methods and never see a connection.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import urlsplit

from reflect.base.config import DISTRIBUTION

if TYPE_CHECKING:
    from reflect.base.records import FailureRow, LessonRow

# One row of the store as the domain modules see it: column name -> value.
Row = dict[str, Any]
Args = Sequence[Any] | Mapping[str, Any]


class StoreUnavailable(Exception):
    """The store cannot be read or written now (locked, unreachable, full, damaged):
    capture keeps the failure aside and recall answers from what it has."""


class NewerSchema(StoreUnavailable):
    """The store was written by a newer reflect: this one would misread it. ``store``
    names it, ``elsewhere`` says how to use another one instead."""

    def __init__(self, version: int, known: int, *, store: str = "the store",
                 extra: str = "", elsewhere: str = "point REFLECT_HOME at another store"):
        super().__init__(
            f"{store} has schema version {version}, newer than this reflect knows ({known});"
            f" upgrade reflect (pip install -U {DISTRIBUTION}){extra}, or {elsewhere}")


class Rejected(ValueError):
    """The store refused one record (a duplicate id, a value out of range); the store
    itself is fine."""


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Tx(Protocol):
    """A write transaction: statements run in it commit together or not at all. Rows it
    returns are indexable by position and by column name."""

    def execute(self, sql: str, args: Args = ..., /) -> Cursor: ...


class Backend:
    """The primitives a backend implements; the shared queries use nothing else."""

    # Appended to the SELECT that picks a job to lease: workers on other connections
    # pass over a row one of them is taking (SQLite has one writer, so needs nothing).
    SKIP_LOCKED = ""
    # The directory on this machine for what stays local whatever the backend: the vector
    # index files and the captures kept aside.
    home: Path

    def write(self, wait: float | None = None) -> AbstractContextManager[Tx]:
        """One write transaction; ``wait``: seconds to wait for the store, instead of the
        usual timeout, before raising StoreUnavailable."""
        raise NotImplementedError

    def _rows(self, sql: str, args: Args = ()) -> list[Any]:
        """Every row of one read, outside any transaction."""
        raise NotImplementedError

    def _row(self, sql: str, args: Args = ()) -> Any | None:
        rows = self._rows(sql, args)
        return rows[0] if rows else None

    def _value(self, sql: str, args: Args = (), default: Any = None) -> Any:
        """The first column of the first row, or ``default``."""
        row = self._row(sql, args)
        return default if row is None or row[0] is None else row[0]

    def _lock(self, tx: Tx, key: str) -> None:
        """Serialize the transactions that read, then write, what ``key`` names (a
        fingerprint's lessons, a run's iterations). SQLite: every write already is."""

    def close(self) -> None:
        raise NotImplementedError


def protected(alias: str = "") -> str:
    """The SQL test of a lesson that only a person lets go: pinned, or taught. Neither
    upkeep nor clear removes one; it is shown whatever its confidence."""
    at = f"{alias}." if alias else ""
    return f"({at}pinned = 1 OR {at}kind = 'taught')"


def marks(values: Sequence[Any]) -> str:
    """Placeholders for an ``IN (…)`` of ``values``."""
    return ", ".join("?" * len(values))


def failure_row(row: Any) -> FailureRow:
    """A row read from the failures table, typed as what it is."""
    return cast("FailureRow", dict(row))


def lesson_row(row: Any) -> LessonRow:
    """A row read from the lessons table, typed as what it is."""
    return cast("LessonRow", dict(row))


def insert(tx: Tx, table: str, row: Mapping[str, Any], returning: str = "") -> Cursor:
    """Insert ``row`` (column -> value) into ``table``."""
    sql = (f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + c for c in row)})"
           + (f" RETURNING {returning}" if returning else ""))
    return tx.execute(sql, row)


def put_meta(tx: Tx, key: str, value: str) -> None:
    """Set one value of the ``meta`` table (its values are text: store ``str(x)``)."""
    tx.execute("INSERT INTO meta (key, value) VALUES (?, ?)"
               " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))


def redacted(url: str) -> str:
    """The store's URL to show a person: no password, no options."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    where = f"{parts.username}@{host}" if parts.username else host
    try:
        port: int | str | None = parts.port
    except ValueError:  # no port number: shown as written, and libpq says why it fails
        port = parts.netloc.rpartition(":")[2]
    if port:
        where += f":{port}"
    return f"{parts.scheme}://{where}{parts.path}"
