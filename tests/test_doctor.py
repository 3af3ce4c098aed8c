"""A damaged, foreign or full store is said so, with what to do; ``reflect doctor
--repair`` keeps the damaged file, starts a new store and takes in what was kept aside."""

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

from reflect import Memory
from reflect.store import DB_NAME
from reflect.store.sqlite_migrations import MIGRATIONS

GARBAGE = b"<html>this is not a database</html>\n" * 100


def stored_messages(home) -> list[str]:
    conn = sqlite3.connect(home / DB_NAME)
    try:
        return [m for (m,) in conn.execute("SELECT message FROM failures ORDER BY seq")]
    finally:
        conn.close()


def capture(message: str):
    out = run_cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-",
                  stdin=f"ValueError: {message}".encode())
    assert out.returncode == 0, out.stderr
    return out


def test_a_foreign_file_is_said_so_and_repaired_keeping_it_aside(own_store):
    capture("before")
    (own_store / DB_NAME).write_bytes(GARBAGE)  # overwritten by something else
    for name in (f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
        (own_store / name).unlink(missing_ok=True)
    out = capture("while damaged")
    assert b"doctor --repair" in out.stderr
    capture("still damaged")

    status = run_cli("status")
    assert status.returncode == 1
    assert b"not a SQLite database" in status.stderr and b"reflect doctor --repair" in status.stderr

    doctor = run_cli("doctor")
    assert doctor.returncode == 1, doctor.stdout
    assert b"store: PROBLEM" in doctor.stdout and b"not a SQLite database" in doctor.stdout
    assert b"2 capture(s) wait" in doctor.stdout

    repair = run_cli("doctor", "--repair")
    assert repair.returncode == 0, repair.stdout + repair.stderr
    assert b"replayed 2 kept-aside capture(s)" in repair.stdout
    [aside] = [p for p in own_store.iterdir() if p.name.startswith(f"{DB_NAME}.damaged-")]
    assert re.fullmatch(rf"{re.escape(DB_NAME)}\.damaged-\d{{8}}T\d{{6}}Z", aside.name)
    assert aside.read_bytes() == GARBAGE  # kept, untouched, for a person
    assert stored_messages(own_store) == ["while damaged", "still damaged"]
    assert not [p for p in own_store.iterdir() if p.name.startswith("pending")]

    assert run_cli("doctor").returncode == 0
    assert run_cli("status").returncode == 0
    capture("after")
    assert stored_messages(own_store)[-1] == "after"


def test_a_damaged_sqlite_file_is_found_by_its_check_and_kept_with_its_wal(own_store):
    with Memory() as mem:
        for i in range(300):
            mem.capture(run="r", exit_code=1, error_text=f"KeyError: 'k{i}'\n" + "x" * 500)
    db = own_store / DB_NAME
    size = db.stat().st_size
    with open(db, "r+b") as f:  # the header stays: only pages in the middle are hit
        f.seek(size // 2)
        f.write(os.urandom(16384))
    out = run_cli("doctor")
    assert out.returncode == 1 and b"damaged" in out.stdout, out.stdout
    repair = run_cli("doctor", "--repair", "--format", "json")
    assert repair.returncode == 0, repair.stderr
    [aside] = [p for p in own_store.iterdir()
               if p.name.startswith(f"{DB_NAME}.damaged-") and not p.name.endswith("-wal")]
    assert aside.stat().st_size == size and aside.stat().st_mode & 0o777 == 0o600
    assert run_cli("doctor").returncode == 0


def test_repair_leaves_a_newer_schema_alone(own_store):
    Memory().capture(run="r", exit_code=1)
    conn = sqlite3.connect(own_store / DB_NAME)
    conn.execute("INSERT INTO migrations VALUES (?, 'from_the_future', 0)",
                 (len(MIGRATIONS) + 1,))
    conn.commit()
    conn.close()
    out = run_cli("doctor", "--repair")
    assert out.returncode == 1 and b"upgrade reflect" in out.stderr, out.stderr
    assert [p.name for p in own_store.iterdir() if "damaged" in p.name] == []


def test_a_sound_store_needs_nothing(own_store):
    assert run_cli("doctor").returncode == 0  # none yet
    capture("one")
    out = run_cli("doctor", "--repair")
    assert out.returncode == 0 and b"nothing to repair" in out.stdout
    assert b"1 failure(s) of at most 20,000" in out.stdout
    assert b"store: " in run_cli("status").stdout


# The disk fills up under a real process: a 1 MB tmpfs in a private mount namespace.
FULL_DISK = textwrap.dedent("""
    import os, subprocess, sys
    disk, spare = sys.argv[1], sys.argv[2]
    env = {**os.environ, "REFLECT_HOME": os.path.join(disk, "store"), "TMPDIR": spare}
    def cli(*args, stdin=b""):
        out = subprocess.run([sys.executable, "-m", "reflect", *args], input=stdin,
                             capture_output=True, env=env, timeout=60)
        print(f"== {args[0]} {out.returncode}")
        print(out.stderr.decode())
        print(out.stdout.decode())
    cli("capture", "--run", "r", "--exit-code", "1")
    with open(os.path.join(disk, "fill"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError:
            pass
    cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-",
        stdin=b"ValueError: while full")
    cli("status")
    cli("doctor")
    os.remove(os.path.join(disk, "fill"))
    cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-",
        stdin=b"ValueError: space again")
    cli("failures", "list")
""")


def test_a_full_disk_is_said_so(tmp_path):
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs unshare (a private mount namespace) for a small tmpfs")
    disk, spare = tmp_path / "disk", tmp_path / "spare"
    disk.mkdir()
    spare.mkdir()
    mount = f"mount -t tmpfs -o size=1m tmpfs {disk}"
    out = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f'{mount} && exec {sys.executable} -c "$0" {disk} {spare}',
         FULL_DISK], capture_output=True, timeout=300)
    text = out.stdout.decode()
    assert out.returncode == 0, out.stderr.decode()
    capture_full, status, doctor = text.split("== ")[2:5]
    assert "the disk is full" in capture_full and "kept in" in capture_full
    assert status.startswith("status 1") and "the disk is full" in status
    assert "free some space" in status and "disk I/O error" not in status
    assert doctor.startswith("doctor 1") and "the disk is full" in doctor
    assert "while full" in text.split("== failures")[1]  # kept aside, then replayed
    assert "space again" in text.split("== failures")[1]


@pytest.mark.parametrize("command", [("lessons", "list"), ("injections",), ("failures", "list")])
@pytest.mark.parametrize("limit", ["100000000000000000000", "1e20"])
def test_huge_limits_list_everything(command, limit):
    capture("listed")
    out = run_cli(*command, "--limit", limit)
    assert out.returncode == 0, out.stderr


BOTH = pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)],
    indirect=True)


def doctor_says(*args: str) -> tuple[int, str]:
    out = run_cli("doctor", *args)
    return out.returncode, (out.stdout + out.stderr).decode()


@BOTH
def test_a_store_past_its_bound_is_said_so_and_the_repair_applies_it(own_store, monkeypatch):
    monkeypatch.setenv("REFLECT_MAX_FAILURES", "50")
    with Memory(run="r") as mem:
        for i in range(120):
            mem.capture(iteration=i, exit_code=1, error_text=f"KeyError: 'k{i}'")
    code, said = doctor_says()
    assert code == 1 and "size: PROBLEM" in said, said
    assert "120 failure(s), past the bound of 50" in said and "of at most" not in said
    code, said = doctor_says("--repair")
    assert code == 0 and "dropped the 70 oldest failure(s) past the bound of 50" in said, said
    assert "50 failure(s) of at most 50" in said
    with Memory(run="r") as mem:
        assert [f.message for f in mem.failures(run="r", limit=100)][-1] == "'k70'"


def drop_table(home, table: str) -> None:
    url = os.environ.get("REFLECT_STORE")
    if not url:
        conn = sqlite3.connect(home / DB_NAME)
        conn.execute(f"DROP TABLE {table}")
        conn.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {table} CASCADE")


@BOTH
def test_a_dropped_table_is_said_so_not_sound(own_store):
    capture("before")
    drop_table(own_store, "injections")
    code, said = doctor_says()
    assert code == 1 and "store: PROBLEM" in said and "lacks injections" in said, said
    assert "sound" not in said


def test_a_store_missing_a_table_is_kept_aside_and_started_anew(own_store):
    capture("before")
    drop_table(own_store, "injections")
    capture("while incomplete")
    code, said = doctor_says("--repair")
    assert code == 0, said
    assert "kept the damaged store as" in said and "replayed 1 kept-aside capture(s)" in said
    assert stored_messages(own_store) == ["while incomplete"]
    assert doctor_says()[0] == 0


def test_a_newer_schema_is_said_with_its_version(own_store):
    capture("one")
    conn = sqlite3.connect(own_store / DB_NAME)
    conn.execute("INSERT INTO migrations VALUES (42, 'from_the_future', 0)")
    conn.commit()
    conn.close()
    capture("kept aside")
    code, said = doctor_says()
    assert code == 1 and "schema version 42, newer" in said, said
    assert "size:" not in said  # a store this reflect cannot read is not counted
    assert "1 capture(s) wait for the store; none is lost" in said


def test_an_empty_store_file_is_said_to_be_a_lost_store(own_store):
    capture("one")
    db = own_store / DB_NAME
    for path in (db, own_store / f"{DB_NAME}-wal", own_store / f"{DB_NAME}-shm"):
        path.unlink(missing_ok=True)
    db.write_bytes(b"")  # truncated: the history is gone
    code, said = doctor_says()
    assert code == 1 and "store: PROBLEM" in said and "empty (0 bytes)" in said, said
    os.utime(db, (1e9, 1e9))  # not a store being created this instant
    out = capture("after")
    assert b"is empty (0 bytes)" in out.stderr and b"a new store starts in it" in out.stderr
    assert stored_messages(own_store) == ["after"]


def left_wal(db) -> bytes:
    """The write-ahead log a writer killed mid-run leaves: copied while it is open."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("PRAGMA user_version = 1")  # a page written to the log
    conn.commit()
    wal = (db.parent / f"{DB_NAME}-wal").read_bytes()
    conn.close()
    return wal


def test_an_emptied_store_beside_its_log_is_a_lost_store_and_the_look_keeps_the_log(own_store):
    capture("one")
    db, log = own_store / DB_NAME, own_store / f"{DB_NAME}-wal"
    wal = left_wal(db)
    db.write_bytes(b"")
    log.write_bytes(wal)
    code, said = doctor_says()
    assert code == 1 and "store: PROBLEM" in said and "empty (0 bytes)" in said, said
    assert log.read_bytes() == wal  # looking changed nothing
    repair = run_cli("doctor", "--repair")
    assert repair.returncode == 0, repair.stdout + repair.stderr
    [aside] = [p for p in own_store.iterdir()
               if p.name.startswith(f"{DB_NAME}.damaged-") and not p.name.endswith("-wal")]
    assert Path(f"{aside}-wal").read_bytes() == wal


def test_a_log_of_garbage_is_said_and_kept_aside_and_the_store_kept(own_store):
    capture("one")
    log = own_store / f"{DB_NAME}-wal"
    garbage = b"\x00not a log " * 8000
    log.write_bytes(garbage)
    code, said = doctor_says()
    assert code == 1 and "store: PROBLEM" in said and "not a write-ahead log" in said, said
    assert log.read_bytes() == garbage  # looking changed nothing
    repair = run_cli("doctor", "--repair")
    assert repair.returncode == 0, repair.stdout + repair.stderr
    [aside] = [p for p in own_store.iterdir() if p.name.startswith(f"{DB_NAME}-wal.damaged-")]
    assert aside.read_bytes() == garbage  # kept for a person
    assert stored_messages(own_store) == ["one"]  # the store itself was sound
    assert doctor_says()[0] == 0


def test_each_finding_is_said_once(own_store):
    capture("before")
    (own_store / DB_NAME).write_bytes(GARBAGE)
    for name in (f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
        (own_store / name).unlink(missing_ok=True)
    capture("while damaged")
    code, said = doctor_says()
    assert code == 1 and said.count("doctor --repair") == 1, said
    assert said.count("PROBLEM") == 1


def test_a_store_sqlite_cannot_read_names_its_path_and_the_fix_once(own_store):
    """Its schema page damaged: SQLite raises on reading it, and the store's error (the
    path, what to do) is not said again inside the finding that says them."""
    capture("before")
    db = own_store / DB_NAME
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with open(db, "r+b") as f:  # the header stays; the first page's b-tree is garbage
        f.seek(100)
        f.write(b"\xff" * 400)
    code, said = doctor_says()
    assert code == 1 and "damaged" in said, said
    assert said.count(str(db)) == 1 and said.count("doctor --repair") == 1, said


def test_a_store_directory_that_is_a_file_is_said_so_with_the_fix(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("notes\n")
    for home in (afile, afile / "store"):
        env = {"REFLECT_HOME": str(home)}
        stats = run_cli("stats", env=env)
        (line,) = stats.stderr.decode().splitlines()
        assert stats.returncode == 1 and "Errno" not in line
        assert f"{afile} is a file, not a directory" in line and "REFLECT_HOME" in line
        doctor = run_cli("doctor", env=env)
        assert doctor.returncode == 1
        assert f"{afile} is a file, not a directory" in doctor.stdout.decode()
        assert afile.read_text() == "notes\n"


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="/sys: a folder nobody can write")
def test_a_folder_no_capture_can_write_is_said_so_not_left_to_the_first_capture(monkeypatch):
    """/sys refuses a new directory to every user, root too (chmod does not stop root)."""
    monkeypatch.delenv("REFLECT_HOME")
    monkeypatch.chdir("/sys/kernel")
    stats = run_cli("stats")
    (line,) = stats.stderr.decode().splitlines()
    assert stats.returncode == 1 and "Errno" not in line
    assert "/sys/kernel/.reflect cannot be made or written" in line and "REFLECT_HOME" in line
    doctor = run_cli("doctor")
    (store,) = [s for s in doctor.stdout.decode().splitlines() if s.startswith("store:")]
    assert doctor.returncode == 1 and "first capture" not in store
    assert "PROBLEM" in store and "point REFLECT_HOME at a directory you can write" in store
    capture = run_cli("capture", "--exit-code", "1")  # kept aside, the loop goes on
    assert capture.returncode == 0 and b"failure kept in" in capture.stderr


def test_the_doctors_probe_leaves_nothing_behind(own_store, tmp_path):
    before = sorted(tmp_path.iterdir())
    out = run_cli("doctor")
    assert out.returncode == 0 and "none yet (the first capture creates it)" in out.stdout.decode()
    assert sorted(tmp_path.iterdir()) == before and not own_store.exists()
