"""The Store protocol is the boundary: it names every public method of both backends, with
the signatures they implement, and domain modules reach the store only through it."""

import inspect
import re
from pathlib import Path

import pytest

from reflect.store import SQLiteStore
from reflect.store.protocol import Store

REPO = Path(__file__).resolve().parents[1]
INTERNAL = {"SKIP_LOCKED", "write"}  # for the shared queries, not for domain modules


def public(cls) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and n not in INTERNAL}


def declared(protocol) -> set[str]:
    """What ``Store`` declares, through every role protocol it is made of."""
    return {n for cls in protocol.__mro__ if cls.__module__ == protocol.__module__
            for n in cls.__dict__ if not n.startswith("_")}


def backends():
    pytest.importorskip("psycopg")
    from reflect.store.postgres import PostgresStore

    return [SQLiteStore, PostgresStore]


def test_the_protocol_names_every_public_method_of_both_backends():
    names = declared(Store) | {"home"}
    for backend in backends():
        assert public(backend) | {"home"} == names, backend.__name__


@pytest.mark.parametrize("name", sorted(declared(Store)))
def test_each_backend_implements_the_protocols_signature(name):
    wanted = inspect.signature(getattr(Store, name))
    for backend in backends():
        assert inspect.signature(getattr(backend, name)) == wanted, backend.__name__


SQL = (r"\bimport sqlite3\b", r"\bimport psycopg", r"\.conn\b", r"\bSELECT\b.+\bFROM\b",
       r"\bINSERT INTO\b", r"\bUPDATE \w+ SET\b")
# A bench that cannot use the store's API says why in one line of its own.
OWN_SQL = re.compile(r"^\s*# Own SQL: \S.{20,}$", re.M)


def sql_in(path: Path) -> list[str]:
    text = path.read_text()
    return [f"{path.relative_to(REPO)}: {pattern}" for pattern in SQL if re.search(pattern, text)]


def test_no_domain_module_sees_a_connection_or_sql():
    leaks = []
    for path in (REPO / "reflect").rglob("*.py"):
        if "store" in path.relative_to(REPO / "reflect").parts[:1]:
            continue
        leaks += sql_in(path)
    assert leaks == []


def test_a_bench_uses_the_stores_api_or_says_why_it_cannot():
    leaks = [leak for path in sorted((REPO / "bench").rglob("*.py"))
             if not OWN_SQL.search(path.read_text()) for leak in sql_in(path)]
    assert leaks == []


def test_the_store_derives_nothing():
    """Fingerprint, cause, family and scope are derived in capture, before the store; a
    shipped migration carries a frozen copy of the rule it needs (store/frozen_cause.py)."""
    rules = re.compile(r"^\s*(?:from reflect\.capture\.(?:fingerprint|gitconfig|scope|heuristics"
                       r"|scrub\w*|extract) import|from reflect\.config import [^\n]*repo_root)",
                       re.M)
    found = [str(p.relative_to(REPO)) for p in sorted((REPO / "reflect" / "store").glob("*.py"))
             if rules.search(p.read_text())]
    assert found == []
