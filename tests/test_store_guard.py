"""A store written by a newer version is refused with what to do; the store's files are
private even inside a home that is not."""

import sqlite3

from conftest import run_cli

from reflect import Memory
from reflect.store import DB_NAME
from reflect.store.sqlite_migrations import MIGRATIONS


def test_a_newer_schema_is_refused_naming_its_version(own_store, caplog):
    Memory().capture(run="r", exit_code=1)
    conn = sqlite3.connect(own_store / DB_NAME)
    newer = len(MIGRATIONS) + 1
    conn.execute("INSERT INTO migrations VALUES (?, 'from_the_future', 0)", (newer,))
    conn.commit()
    with Memory() as mem:
        entry = mem.capture(run="r", exit_code=1, error_text="ValueError: kept")
    assert entry is not None and f"version {newer}" in caplog.text
    assert (own_store / "pending.jsonl").exists()  # kept aside, not lost
    out = run_cli("status")
    assert out.returncode == 1 and f"version {newer}".encode() in out.stderr
    # The distribution's name: `reflect` on the package index is another project.
    assert b"upgrade reflect (pip install -U reflect-memory)" in out.stderr


def test_the_database_is_created_private_inside_an_open_home(own_store):
    own_store.mkdir(mode=0o755)
    own_store.chmod(0o755)
    Memory().capture(run="r", exit_code=1)
    for name in (DB_NAME, f"{DB_NAME}-wal"):
        assert (own_store / name).stat().st_mode & 0o777 == 0o600, name
