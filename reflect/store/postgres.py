"""The shared store: one PostgreSQL database for a team's agents, selected by
``REFLECT_STORE=postgresql://…`` (psycopg 3 and psycopg-pool: the ``postgres`` extra).

Every query is the shared one (``reflect.store._sql``), its placeholders translated; what
PostgreSQL says its own way is here: keyword search on ``tsvector`` ranked by BM25 as
FTS5 ranks it, advisory locks for read-then-write transactions, ``FOR UPDATE SKIP
LOCKED`` for the queue's leases. What stays on this machine lives in ``home``: the
vector index files (synced from the store) and the captures kept aside while the
database cannot be reached.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg.abc import PQGen
from psycopg.adapt import Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import RowMaker
from psycopg_pool import ConnectionPool, PoolTimeout

from reflect.base.digest import blake2b
from reflect.base.records import LessonRow
from reflect.store._sql import SQLStore
from reflect.store.base import Args, Cursor, Rejected, StoreUnavailable, lesson_row, marks, redacted
from reflect.store.health import CannotRepair, Finding, Health, disk
from reflect.store.postgres_migrations import MIGRATIONS, migrate
from reflect.store.sqlite import usable_home
from reflect.store.sqlite_migrations import schema_names

if TYPE_CHECKING:
    from reflect.base.answers import Footprint

POOL_SIZE = 4  # connections one process keeps: its threads (a worker, recall's log) share them
# Seconds. A server that accepts connections and never answers (hung, or a network that
# drops packets after the handshake) must cost a step what a held SQLite lock costs: a
# bounded wait, then the capture kept aside. Every wait derives from the process's
# busy timeout (``wait`` below); a sound server answers long before.
LEAST_WAIT = 2.0  # libpq's least connect_timeout: psycopg raises a smaller one to it
UPKEEP_TIMEOUT = 60.0  # a migration or a VACUUM: upkeep, never a step's
REPLY_MARGIN = 1.0  # the client waits this past the server's own statement_timeout
K1, B = 1.2, 0.75  # BM25's parameters, FTS5's defaults
# The tables: SQLite's, but for its keyword search (FTS5's tables), and PostgreSQL's own.
SQLITE_OWN = ("lessons_fts", "lessons_vocab", "runs_fts", "runs_vocab", "sqlite_sequence")
OWN_TABLES = frozenset({"lesson_words", "run_words", "runs_vocab"})

# The pool reports a failed reconnection through logging; with no handler configured
# Python would print it on stderr. The store raises StoreUnavailable instead.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


# -- the shared dialect, as psycopg takes it -------------------------------------------

_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|--[^\n]*|::|\?|:[A-Za-z_]\w*|%""")


@lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """``?`` -> ``%s``, ``:name`` -> ``%(name)s``, outside quoted strings and comments; a
    literal ``%`` -> ``%%`` everywhere (psycopg reads one even inside quotes)."""
    def token(m: re.Match[str]) -> str:
        t = m.group()
        if t == "?":
            return "%s"
        if t == "%" or t[0] in "'\"-":
            return t.replace("%", "%%")
        if t.startswith(":") and t != "::":
            return f"%({t[1:]})s"
        return t
    return _TOKEN.sub(token, sql)


class PgRow:
    """A row as sqlite3.Row gives it: by position, by column name, ``dict(row)``."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: Mapping[str, int]):
        self._values = tuple(values)
        self._index = index

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, PgRow) else other)

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"PgRow({dict(zip(self._index, self._values, strict=True))!r})"


@lru_cache(maxsize=1024)
def _index(names: tuple[str, ...]) -> Mapping[str, int]:
    return {name: i for i, name in reversed(list(enumerate(names)))}  # the first of a name


def _rows_by_name(cursor: Any) -> RowMaker[PgRow]:
    index = _index(tuple(c.name for c in cursor.description or ()))
    return lambda values: PgRow(values, index)


class _Number(Loader):
    """``numeric`` (a SUM of integers, an AVG) as SQLite gives it: an int when whole."""

    def load(self, data: Any) -> int | float:
        text = bytes(data).decode()
        try:
            return int(text)
        except ValueError:
            return float(text)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))  # 0 would mean no timeout at all


_T = TypeVar("_T")


class _Bounded(psycopg.Connection[Any]):
    """A connection that waits for the server's reply ``reply_timeout`` seconds at most.
    PostgreSQL's statement_timeout is the server's own: a server that stopped answering
    never applies it, and psycopg would wait forever. A reply that does not come closes
    the connection (it is mid-statement: never reused) and says so."""

    statement_timeout = reply_timeout = LEAST_WAIT  # until ``bound`` sets the store's

    def bound(self, statement_timeout: float) -> None:
        """The server cancels a statement after ``statement_timeout``; the client gives up
        on its reply a margin later."""
        self.execute(f"SET statement_timeout = {_ms(statement_timeout)}")
        self.statement_timeout = statement_timeout
        self.reply_timeout = statement_timeout + REPLY_MARGIN

    @contextmanager
    def upkeep(self) -> Iterator[None]:
        """Statements that may run long on a sound server (a migration, a VACUUM)."""
        before = self.statement_timeout
        self.bound(UPKEEP_TIMEOUT)
        try:
            yield
        finally:
            if not self.closed:
                self.bound(before)

    def wait(self, gen: PQGen[_T], interval: float = 0.1, timeout: float | None = None) -> _T:
        bound = self.reply_timeout if timeout is None else timeout
        try:
            return super().wait(gen, interval, bound)
        except psycopg.errors._WaitTimeout:  # what Connection.wait raises on its timeout
            self.close()
            raise psycopg.OperationalError(
                f"the server did not answer within {bound:g} s") from None


class _Tx:
    """A transaction on one pooled connection, speaking the shared dialect."""

    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn

    def execute(self, sql: str, args: Args = ()) -> Cursor:
        return self.conn.execute(translate(sql), args)


def _key(text: str) -> int:
    """A lock's key: 64 bits of the text's hash, as PostgreSQL's signed bigint."""
    return int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "big",
                          signed=True)


class PostgresStore(SQLStore):
    SKIP_LOCKED = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, home: Path, busy_timeout: float = 5.0):
        """``url``: the database (libpq's URI, options included); ``home``: the local
        directory for what stays on this machine."""
        usable_home(home)
        self.home = home
        self.url = url
        self.where = redacted(url)
        self.busy_timeout = busy_timeout
        # A connection within ``wait``; a statement within its lock wait and ``wait``
        # more (the server cancels it); a reply within that and a margin (the client
        # gives up). A step (busy timeout 0.25 s) waits 2, 2.25 and 3.25 s at most.
        wait = max(LEAST_WAIT, busy_timeout)
        self.statement_timeout = busy_timeout + wait
        given = conninfo_to_dict(url)
        extra: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in given:
            extra["connect_timeout"] = round(wait)
        if "application_name" not in given:
            extra["application_name"] = "reflect"
        # One connection of our own first: it fails at once, with the reason, when the
        # server cannot be reached (the pool would retry until its timeout, saying
        # nothing). The pool connects meanwhile; the schema is checked on this one.
        with self._translated():
            first = _Bounded.connect(url, **extra)
        try:
            self.pool = ConnectionPool(
                url, connection_class=_Bounded,
                kwargs={**extra, "row_factory": _rows_by_name}, min_size=1,
                max_size=POOL_SIZE, configure=self._configure, timeout=busy_timeout,
                name="reflect", open=False)
            self.pool.open(wait=False)
            with self._translated():
                first.bound(self.statement_timeout)
                migrate(first, self.where)
        except BaseException:
            self.close()
            raise
        finally:
            first.close()

    def close(self) -> None:
        if hasattr(self, "pool"):  # its threads may be connecting to a silent server
            self.pool.close(timeout=REPLY_MARGIN)

    # -- what ``reflect doctor`` asks: the database, and the disk of this machine --------

    @classmethod
    def health(cls, home: Path, url: str = "") -> Health:
        """Can the database be reached and read, are its tables all there; the disk of
        what stays on this machine."""
        try:
            store = cls(url, home)
            try:
                missing = sorted(tables() - set(store._tables()))
                size = store.footprint() if not missing else None
            finally:
                store.close()
        except StoreUnavailable as e:
            return Health((Finding("store", False, str(e)), *disk(home)), writable=False)
        if size is None:
            return Health((Finding("store", False, (
                f"{redacted(url)}: its schema {len(MIGRATIONS)} lacks {', '.join(missing)}"
                " (dropped by hand, or a foreign tool): restore them from a backup, or point"
                " REFLECT_STORE at a new database; captures are kept aside meanwhile")),
                *disk(home)), writable=False)
        return Health((Finding("store", True, f"{size['path']}: reachable, schema up to date"),
                       *disk(home)), writable=True, bytes=size["bytes"],
                      failures=size["failures"])

    @classmethod
    def repair(cls, home: Path, now: float, url: str = "") -> list[str]:
        """A shared database is never moved nor rebuilt from here: it must be reachable
        and whole, and what was kept aside is then replayed into it (by the doctor)."""
        health = cls.health(home, url)
        if not health.writable:
            raise CannotRepair(f"nothing repaired: {health.findings[0].text}")
        return []

    # -- the primitives ------------------------------------------------------------------

    def _configure(self, conn: _Bounded) -> None:
        """A new pooled connection: numbers as SQLite reads them, and the timeouts."""
        conn.adapters.register_loader("numeric", _Number)
        conn.bound(self.statement_timeout)
        conn.execute(f"SET lock_timeout = {_ms(self.busy_timeout)}")

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """psycopg's errors as the store's: the store unavailable, or one record refused."""
        try:
            yield
        except PoolTimeout as e:
            raise StoreUnavailable(
                f"no connection to the PostgreSQL store {self.where} within"
                f" {self.busy_timeout:g} s: is the server running, and does it accept"
                " more connections?") from e
        except (psycopg.IntegrityError, psycopg.DataError) as e:
            raise Rejected(str(e)) from e
        except psycopg.Error as e:
            if e.sqlstate is None or e.sqlstate[:2] in ("08", "57"):  # the connection
                raise StoreUnavailable(
                    f"cannot reach the PostgreSQL store {self.where} ({_first_line(e)}):"
                    " is the server running? Check REFLECT_STORE; captures are kept aside"
                    " meanwhile") from e
            raise StoreUnavailable(f"the PostgreSQL store {self.where}: {e}") from e

    @contextmanager
    def write(self, wait: float | None = None) -> Iterator[_Tx]:
        """One transaction on a pooled connection; ``wait`` (else the busy timeout)
        bounds both the wait for a connection and the wait for any lock."""
        wait = self.busy_timeout if wait is None else wait
        with (self._translated(), self.pool.connection(timeout=wait) as conn,
              conn.transaction()):
            if wait != self.busy_timeout:
                conn.execute(f"SET LOCAL lock_timeout = {_ms(wait)}")
            yield _Tx(conn)

    def _rows(self, sql: str, args: Args = ()) -> list[Any]:
        with self._translated(), self.pool.connection() as conn:
            return conn.execute(translate(sql), args).fetchall()

    def _lock(self, tx: Any, key: str) -> None:
        tx.execute("SELECT pg_advisory_xact_lock(?)", (_key(key),))

    # -- what PostgreSQL does its own way -------------------------------------------------

    def runs_by_words(self, terms: list[str], run: str, scope: str, k: int
                      ) -> list[tuple[str, float]]:
        """The ``k`` runs whose goals best match ``terms`` (BM25 as FTS5 computes it,
        higher is better)."""
        if not terms:
            return []
        return [(r[0], float(r[1])) for r in self._rows(
            f"""WITH stats AS (SELECT COUNT(*) AS n, GREATEST(AVG(tokens), 1) AS avgdl
                               FROM run_words),
                     {_BM25_TERMS.format(vocab="runs_vocab", marks=marks(terms))}
                SELECT r.run, SUM(t.idf * h.tf * {K1 + 1}
                                  / (h.tf + {K1} * ({1 - B} + {B} * h.tokens / s.avgdl)))
                FROM (SELECT w.seq, w.tokens, u.lexeme, cardinality(u.positions) AS tf
                      FROM run_words w, unnest(w.words) AS u
                      WHERE w.words @@ CAST(? AS tsquery)) AS h
                JOIN terms t ON t.term = h.lexeme JOIN runs r ON r.seq = h.seq
                CROSS JOIN stats s
                WHERE r.run != ? AND r.scope IN (?, 'global')
                GROUP BY r.run, r.seq ORDER BY 2 DESC, r.seq LIMIT ?""",
            [*terms, _any_of(terms), run, scope, k])]

    def goal_term_runs(self, terms: list[str]) -> dict[str, int]:
        """How many run goals hold each term."""
        if not terms:
            return {}
        return {r[0]: int(r[1]) for r in self._rows(
            f"SELECT term, doc FROM runs_vocab WHERE term IN ({marks(terms)})", terms)}

    def lessons_by_words(self, terms: list[str], limit: int) -> list[LessonRow]:
        """The ``limit`` lessons whose texts hold all of ``terms`` (each a phrase of its
        words: "auth_user" is "auth" then "user"), best first by BM25 over the lesson's
        words (FTS5 ranks each of its three columns apart: close, not equal)."""
        if not terms:
            return []
        return [lesson_row(r) for r in self._rows(
            f"""WITH phrases AS (
                    SELECT words, CAST(array_to_string(ARRAY(
                        SELECT '''' || w || '''' FROM unnest(words) AS w), ' <-> ')
                        AS tsquery) AS q
                    FROM (SELECT reflect_words(t) AS words
                          FROM unnest(CAST(? AS TEXT[])) AS t) AS given
                    WHERE cardinality(words) > 0),
                stats AS (SELECT COUNT(*) AS n, GREATEST(AVG(tokens), 1) AS avgdl
                          FROM lesson_words),
                weights AS (
                    SELECT p.words, GREATEST(ln((s.n - d.n + 0.5) / (d.n + 0.5)), 1e-6) AS idf
                    FROM phrases p CROSS JOIN stats s CROSS JOIN LATERAL (
                        SELECT COUNT(*) AS n FROM lesson_words WHERE words @@ p.q) AS d),
                hits AS (
                    SELECT seq, words, tokens FROM lesson_words WHERE words @@ (
                        SELECT CAST(string_agg('(' || CAST(q AS TEXT) || ')', ' & ')
                                    AS tsquery) FROM phrases)),
                scores AS (
                    SELECT h.seq, SUM(w.idf * f.tf * {K1 + 1}
                                      / (f.tf + {K1} * ({1 - B} + {B} * h.tokens / s.avgdl)))
                           AS score
                    FROM hits h CROSS JOIN stats s CROSS JOIN weights w
                    CROSS JOIN LATERAL (
                        SELECT MIN(cardinality(u.positions)) AS tf FROM unnest(h.words) AS u
                        WHERE u.lexeme = ANY (w.words)) AS f
                    GROUP BY h.seq)
                SELECT l.* FROM scores s JOIN lessons l ON l.seq = s.seq
                ORDER BY s.score DESC, l.seq LIMIT ?""", (terms, limit))]

    def purge(self) -> None:
        """After a deletion: vacuum the tables that held the deleted text, so neither
        their indexes nor their pages' free space point to it any more, and drop the
        index files (rebuilt from the store on next use). PostgreSQL may keep the bytes
        in its write-ahead log until it recycles it: a server setting, not ours."""
        self._vacuum("lessons", "lesson_words", "lesson_vectors", "failures", "runs",
                     "run_words", "query_vectors", "injections")
        for pattern in ("runs-*.idx", "vectors-*.idx"):  # vectors-: older versions' files
            for path in self.home.glob(pattern):
                path.unlink(missing_ok=True)

    def reclaim(self) -> int:
        """Vacuum every table; the bytes the database shrank by (PostgreSQL gives back
        only empty pages at a table's end: the rest is reused for new rows)."""
        before = self._bytes()
        self._vacuum(*self._tables())
        return before - self._bytes()

    def footprint(self) -> Footprint:
        """The database (its URL without password), its tables' size and how many failures
        it holds."""
        failures = int(self._value("SELECT COUNT(*) FROM failures"))
        return {"path": self.where, "bytes": self._bytes(), "failures": failures}

    def _tables(self) -> list[str]:
        return [r[0] for r in self._rows(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " ORDER BY tablename")]

    def _bytes(self) -> int:
        return int(self._value(
            "SELECT SUM(pg_total_relation_size(CAST(quote_ident(tablename) AS regclass)))"
            " FROM pg_tables WHERE schemaname = current_schema()", (), 0))

    def _vacuum(self, *tables: str) -> None:
        with self._translated(), self.pool.connection() as conn:  # outside a transaction
            assert isinstance(conn, _Bounded)
            with conn.upkeep():
                conn.execute(f"VACUUM {', '.join(tables)}")


# The query's terms with their inverse document frequency, as FTS5 computes it (a term in
# more than half the documents counts for almost nothing, never less).
_BM25_TERMS = """terms AS (
    SELECT v.term, GREATEST(ln((s.n - v.doc + 0.5) / (v.doc + 0.5)), 1e-6) AS idf
    FROM {vocab} v CROSS JOIN stats s WHERE v.term IN ({marks}))"""


def tables() -> frozenset[str]:
    """The tables a database at the current schema holds."""
    return frozenset(t for t in schema_names(("table",))
                     if not t.startswith(SQLITE_OWN)) | OWN_TABLES


def _any_of(terms: list[str]) -> str:
    """A tsquery matching any of ``terms``, each quoted as one lexeme."""
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
