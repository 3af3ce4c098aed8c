"""Faults of a shared store, on a PostgreSQL server of the test's own (loopback): the
database restarts mid-run, or cannot be reached at all. No capture is silently lost."""

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from reflect import Memory, Settings

REPO = Path(__file__).resolve().parents[1]
SERVER = REPO / ".ci" / "postgres"

pytestmark = pytest.mark.postgresql


@pytest.fixture
def private_server(monkeypatch):
    """A server only this test uses, so it can be restarted; REFLECT_STORE points at it."""
    pytest.importorskip("psycopg")
    # Outside the test's own temporary directory, which the server's user cannot enter.
    started = subprocess.run([str(SERVER), "start"], capture_output=True, text=True,
                             timeout=120, env={**os.environ, "TMPDIR": "/tmp"})
    if started.returncode != 0:
        pytest.fail(f"no PostgreSQL server for the fault tests: {started.stdout.strip()}")
    directory = started.stdout.strip()
    url = (Path(directory) / "url").read_text().strip()
    monkeypatch.setenv("REFLECT_STORE", url)
    try:
        yield directory, url
    finally:
        subprocess.run([str(SERVER), "stop", directory], timeout=120, check=False)


def capture(mem, i):
    mem.capture(iteration=i, action="python -m app", exit_code=1,
                error_text=f"KeyError: 'setting_{chr(97 + i % 26)}{chr(97 + i // 26)}'")


def test_captures_during_a_restart_are_kept_aside_and_stored_once(private_server):
    directory, _ = private_server
    with Memory(run="r", settings=Settings(busy_timeout=1.0)) as mem:
        for i in range(1, 11):
            capture(mem, i)
        restart = threading.Thread(target=subprocess.run,
                                   args=([str(SERVER), "restart", directory],),
                                   kwargs={"check": True, "timeout": 60})
        restart.start()
        i = 11
        while restart.is_alive() or i <= 30:  # captures go on while the server restarts
            capture(mem, i)
            i += 1
            time.sleep(0.02)
        restart.join()
        capture(mem, i)  # the store is back: this capture takes in what was kept aside
        stored = sorted(f.iteration for f in mem.failures(run="r", limit=1000))
    assert stored == list(range(1, i + 1))  # every one, once
    assert not list(mem.home.glob("pending*"))


def test_an_unreachable_database_spools_and_recall_answers_until_it_returns(
        private_server, monkeypatch):
    _, url = private_server
    monkeypatch.setenv("REFLECT_STORE", url.replace("127.0.0.1:", "127.0.0.1:1"))  # no one
    with Memory(run="r") as mem:
        capture(mem, 1)
        capture(mem, 2)
        rec = mem.recall(iteration=3)
        assert [i.section for i in rec.items] == ["recent", "recent"]
        assert "setting_c" in rec.items[0].text  # this run's latest failure, from the spool
    monkeypatch.setenv("REFLECT_STORE", url)  # the database is back
    with Memory(run="r") as mem:
        capture(mem, 3)
        assert [f.iteration for f in mem.failures(run="r")] == [3, 2, 1]
        assert not list(mem.home.glob("pending*"))
        assert len(mem.recall(iteration=4).items) == 3
