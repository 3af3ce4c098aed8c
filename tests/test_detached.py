"""`reflect capture` starts a detached worker for a shell harness, and lets go of it.

The worker runs in another process, so the provider is :class:`FakeProvider`, a small
OpenAI-compatible server on 127.0.0.1 that stops by itself. Every process started against a
test's store is found by the REFLECT_HOME in its environment and killed in a ``finally``.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import reflect_argv, started
from test_worker import MODEL, PROXY_VARIABLES, TRACEBACK, FakeProvider, failure_text, wait_for

from reflect import Memory
from reflect.api.memory import port
from reflect.reflection.worker import WORKER_LOG
from reflect.store import open_store

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(),
                                reason="finds the detached worker through /proc")
# Seconds after which a process is taken for hung: a guard against a hang, never a measure
# of speed (a worker's start, litellm's import, took a minute on a loaded machine).
HUNG = 300


@pytest.fixture
def provider(monkeypatch):
    """A model on a loopback server, configured through the environment as a harness does;
    its answers wait for ``release()``."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with FakeProvider(lifetime=2 * HUNG, held=True) as server:
        monkeypatch.setenv("REFLECT_MODEL", MODEL)
        monkeypatch.setenv("REFLECT_API_BASE", server.base)
        monkeypatch.setenv("REFLECT_API_KEY", "local-test-key")
        yield server


@pytest.fixture
def no_stray_process(own_store):
    """Kill whatever was started against this test's store, whatever the test's outcome."""
    yield
    for pid in processes_of(own_store):
        try:
            if os.getpgid(pid) == pid:  # a detached worker leads its own session and group
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not processes_of(own_store), 10, "the killed workers to go")


def processes_of(home: Path) -> list[int]:
    """Live processes (not zombies) whose environment names this store."""
    mark = f"REFLECT_HOME={home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if mark in environ and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def query(home: Path, sql: str, *args) -> list[tuple]:
    store = open_store(home, busy_timeout=10.0)
    try:
        return [tuple(r) for r in store._rows(sql, args)]
    finally:
        store.close()


def cli_capture(error_text: str, watch: bool = False) -> subprocess.CompletedProcess:
    """``reflect capture`` with its stdout and stderr as pipes, as a harness runs it;
    returns once both pipes reach EOF. ``watch``: under conftest's ``SPAWN_PROBE``."""
    proc = subprocess.Popen(
        reflect_argv("capture", "--run", "r1", "--phase", "test", "--exit-code", "1",
                     "--error-file", "-", "--format", "json", watch=watch),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        # A child holding the pipes would keep them open: communicate() would time out.
        out, err = proc.communicate(error_text.encode(), timeout=HUNG)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_capture_starts_a_detached_worker_that_reflects_and_lets_go(
        provider, own_store, monkeypatch, no_stray_process):
    monkeypatch.delenv("REFLECT_WORKER")

    # The model's answer is held: the capture's pipes reached EOF before the worker could
    # finish its job, so the capture waited neither for the worker nor for its output.
    out = cli_capture(TRACEBACK)
    assert out.returncode == 0, out.stderr
    entry = json.loads(out.stdout)

    pid = wait_for(lambda: query(own_store, "SELECT pid FROM workers"), HUNG,
                   "the detached worker to register")[0][0]
    assert processes_of(own_store) == [pid]
    assert os.getsid(pid) == pid != os.getsid(0)  # its own session
    log = own_store / WORKER_LOG
    assert os.readlink(f"/proc/{pid}/fd/0") == os.devnull
    assert os.readlink(f"/proc/{pid}/fd/1") == os.readlink(f"/proc/{pid}/fd/2") == str(log)
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"worker" in argv and b"--idle-exit" in argv  # it exits once idle

    wait_for(lambda: provider.requests == 1, HUNG, "the worker's call to the model")
    assert query(own_store, "SELECT state FROM jobs WHERE kind = 'reflect'") == [("leased",)]
    provider.release()
    wait_for(lambda: query(own_store, "SELECT guidance FROM lessons WHERE kind = 'model'"
                           " AND fingerprint = ?", entry["fingerprint"]),
             HUNG, "the detached worker's lesson")
    assert provider.requests == 1
    assert query(own_store, "SELECT state FROM jobs WHERE kind = 'reflect'") == [("done",)]
    assert log.is_file()

    # A second failure while the worker lives: no second worker, the live one takes it.
    out = cli_capture(failure_text(1))
    assert out.returncode == 0, out.stderr
    wait_for(lambda: provider.requests == 2, HUNG, "the live worker to take the next job")
    assert processes_of(own_store) == [pid]


def test_a_worker_exits_by_itself_once_idle(provider, own_store, no_stray_process):
    with Memory() as mem:
        entry = mem.capture(run="r1", exit_code=1, error_text=TRACEBACK)
    provider.release()
    # The event is the worker's exit, with its job done: nothing but a hang stops it.
    done = subprocess.run([sys.executable, "-m", "reflect", "worker", "--idle-exit", "0.5"],
                          capture_output=True, timeout=HUNG)
    assert done.returncode == 0, done.stderr
    assert provider.requests == 1
    with Memory() as mem:
        lesson = mem.failure(entry.failure_id)
        assert lesson.hint == port(mem).store.active_lessons([entry.fingerprint])[
            entry.fingerprint]["guidance"]
        assert mem.status().workers_alive == 0  # it retired on its way out
    assert query(own_store, "SELECT kind FROM lessons WHERE fingerprint = ? AND status = 'active'",
                 entry.fingerprint) == [("model",)]


def test_reflect_worker_off_starts_nothing(provider, own_store, no_stray_process):
    assert os.environ["REFLECT_WORKER"] == "off"
    out = cli_capture(TRACEBACK, watch=True)  # exited: whatever it started, it did
    assert out.returncode == 0, out.stderr
    assert started(out) == []
    assert processes_of(own_store) == []
    assert not (own_store / WORKER_LOG).exists()
    assert query(own_store, "SELECT value FROM meta WHERE key = 'worker_started'") == []
    assert query(own_store, "SELECT state FROM jobs WHERE kind = 'reflect'") == [("queued",)]
    assert provider.requests == 0
