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


def test_no_domain_module_sees_a_connection_or_sql():
    leaks = []
    for path in (REPO / "reflect").rglob("*.py"):
        if "store" in path.relative_to(REPO / "reflect").parts[:1]:
            continue
        text = path.read_text()
        for pattern in (r"\bimport sqlite3\b", r"\bimport psycopg", r"\.conn\b",
                        r"\bSELECT\b.+\bFROM\b", r"\bINSERT INTO\b", r"\bUPDATE \w+ SET\b"):
            if re.search(pattern, text):
                leaks.append(f"{path.relative_to(REPO)}: {pattern}")
    assert leaks == []
