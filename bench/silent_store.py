"""A step's time when the PostgreSQL store accepts connections and never answers, beside
the SQLite file: `reflect capture`, `reflect recall` and a Claude Code hook, each a cold
process as an agent runs it, with the warning lines each printed.

Run: .venv/bin/python bench/silent_store.py [--runs N]
The silent server is a loopback socket that accepts every connection and reads what it
is sent, never answering (libpq waits for its reply to the first message). Each command
must keep its failure aside (or recall what was kept aside) and exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from figures import emit

RUNS = 3
EVENT = Path(__file__).resolve().parents[1] / "tests/fixtures/claude_code/PostToolUseFailure.json"


def silent_server() -> int:
    sock = socket.create_server(("127.0.0.1", 0))

    def drain(conn: socket.socket) -> None:
        while conn.recv(65536):
            pass

    def serve() -> None:
        while True:
            conn, _ = sock.accept()
            threading.Thread(target=drain, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return sock.getsockname()[1]


def step(env: dict[str, str], *args: str, stdin: bytes = b"") -> tuple[float, int]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "reflect", *args], input=stdin, env=env,
                          capture_output=True, timeout=120)
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} exited {done.returncode}: {done.stderr.decode()}")
    return took, len(done.stderr.splitlines())


def call(event: dict, cwd: str) -> bytes:
    """The hook's event for a call of its own (the same id again is a step stored once)."""
    return json.dumps({**event, "cwd": cwd,
                       "tool_use_id": f"toolu_{os.urandom(8).hex()}"}).encode()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=RUNS, help=f"runs of each step ({RUNS})")
    runs = p.parse_args().runs
    port = silent_server()
    event = json.loads(EVENT.read_text())
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, url in (("SQLite file", ""),
                          ("PostgreSQL, silent", f"postgresql://reflect@127.0.0.1:{port}/x")):
            env = {**os.environ, "REFLECT_HOME": f"{tmp}/{len(rows)}", "REFLECT_STORE": url,
                   "REFLECT_WORKER": "off"}
            steps = {"capture": ("capture", "--run", "r", "--exit-code", "1"),
                     "recall": ("recall", "--run", "r"),
                     "hook (PostToolUseFailure)": ("hook", "claude-code")}
            rows[name] = {what: [step(env, *args, stdin=call(event, tmp) if "hook" in what
                                      else b"")
                                 for _ in range(runs)] for what, args in steps.items()}
    names = list(rows)
    print(f"| a cold process, median of {runs} | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for what in rows[names[0]]:
        cells = []
        for name in names:
            times = [t for t, _ in rows[name][what]]
            lines = max(n for _, n in rows[name][what])
            cells.append(f"{statistics.median(times):.2f} s, {lines} warning line(s)")
        print(f"| {what} | " + " | ".join(cells) + " |")
    emit({name: {what: {"median_s": statistics.median(t for t, _ in runs),
                        "warning_lines": max(n for _, n in runs)}
                 for what, runs in by_step.items()} for name, by_step in rows.items()})


if __name__ == "__main__":
    main()
