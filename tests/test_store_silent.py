"""A PostgreSQL server that accepts connections and then says nothing (hung, or a network
that drops everything after the handshake) costs a step a bounded wait, as a held SQLite
lock does: capture keeps its failure aside, recall serves what was kept, a hook answers
with at most one warning line. Real sockets on 127.0.0.1, the real psycopg driver."""

import json
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import postgres_server, run_cli, tool_use_id

from reflect import Memory, Settings
from reflect.api.memory import port
from reflect.store import StoreUnavailable, open_store

postgres = pytest.importorskip("reflect.store.postgres", reason="psycopg is not installed")

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"


class Silent:
    """A TCP server on 127.0.0.1 that accepts every connection and never answers; with
    ``upstream`` it relays to that server until ``freeze()``, then drops all it reads."""

    def __init__(self, upstream: tuple[str, int] | None = None):
        self.upstream = upstream
        self.frozen = threading.Event()
        self.dropped = 0  # bytes read once frozen: what was asked of the silent server
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, user: str = "reflect", database: str = "reflect") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}"

    def freeze(self) -> None:
        self.frozen.set()

    def close(self) -> None:
        for s in [self.sock, *self.held]:
            s.close()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(client)
            pairs = [(client, None)]
            if self.upstream:
                server = socket.create_connection(self.upstream)
                self.held.append(server)
                pairs = [(client, server), (server, client)]
            for source, sink in pairs:
                threading.Thread(target=self._relay, args=(source, sink, source is client),
                                 daemon=True).start()

    def _relay(self, source: socket.socket, sink: socket.socket | None, asking: bool) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            if sink is not None and not self.frozen.is_set():
                sink.sendall(data)
            elif asking and self.frozen.is_set():
                self.dropped += len(data)


@pytest.fixture
def silent(monkeypatch):
    server = Silent()
    monkeypatch.setenv("REFLECT_STORE", server.url())
    yield server
    server.close()


def test_capture_recall_and_a_hook_end_with_one_warning_each(silent):
    """Each ends while the server is still silent (the event; bench/silent_store.py times
    the wait)."""
    done = run_cli("capture", "--run", "r", "--exit-code", "1", "--error-file", "-",
                   stdin=b"ValueError: while the server is silent")
    assert done.returncode == 0, done.stderr
    assert len(done.stderr.splitlines()) == 1 and b"kept in" in done.stderr

    done = run_cli("recall", "--run", "r")
    assert done.returncode == 0, done.stderr
    assert b"while the server is silent" in done.stdout  # what was kept aside
    assert len(done.stderr.splitlines()) == 1

    event = json.loads((FIXTURES / "PostToolUseFailure.json").read_text())
    done = run_cli("hook", "claude-code",
                   stdin=json.dumps({**event, "cwd": str(Path.cwd()),
                                     "tool_use_id": tool_use_id()}).encode())
    assert done.returncode == 0, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "command not found" in answer  # the failure it captured, kept aside


def test_a_step_gives_up_on_the_connection_of_a_silent_server(silent, own_store):
    with pytest.raises(StoreUnavailable, match="connection timeout expired"):
        open_store(own_store, silent.url(), busy_timeout=0.25)


@pytest.mark.postgresql
@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_server_gone_silent_after_the_handshake_keeps_the_capture_aside(own_store,
                                                                         monkeypatch):
    """The connection is open when the server stops answering: psycopg alone would wait
    for a reply forever (the server's statement_timeout never fires)."""
    real = urlsplit(postgres_server())
    relay = Silent((real.hostname, real.port))
    schema_url = urlsplit(__import__("os").environ["REFLECT_STORE"])
    monkeypatch.setenv("REFLECT_STORE", schema_url._replace(
        netloc=f"{real.username}@127.0.0.1:{relay.port}").geturl())
    try:
        with Memory(run="r", settings=Settings(busy_timeout=0.25)) as mem:
            mem.capture(iteration=1, exit_code=1, error_text="ValueError: before")
            relay.freeze()
            kept = mem.capture(iteration=2, exit_code=1, error_text="ValueError: after")
            assert kept is not None and kept.message == "after"
            assert (own_store / "pending.jsonl").exists()
            store = port(mem).store
            assert isinstance(store, postgres.PostgresStore) and relay.dropped
            # Counted by the pool's requests, not the relay's bytes: the pool refills in
            # the background the connection it discarded, which the relay drops too.
            asked = store.pool.get_stats().get("requests_num", 0)
            assert "after" in mem.recall(iteration=3).text  # from what was kept aside
            # the step did not ask the silent server again
            assert store.pool.get_stats().get("requests_num", 0) == asked
    finally:
        relay.close()
