"""Capture latency with a model provider that hangs, beside no model at all.

Run: .venv/bin/python bench/hung_provider.py [--samples N] [--cold N] [--settle SECONDS]
The provider is a loopback server that accepts each request and never answers
(it stops by itself after a minute, or when the bench ends). Capture never calls the model: the
reflection job waits in the queue for a worker, in a thread of the agent's
process or in the detached worker that `reflect capture` starts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from capture_recall import cold, traceback_4kb
from figures import emit

from reflect import Memory, Settings

SAMPLES = 200
COLD = 15
HANG = 60.0
SETTLE = 8.0  # seconds for a worker to import litellm and block in the hanging call


class Hang(BaseHTTPRequestHandler):
    def do_POST(self):  # http.server's naming
        time.sleep(HANG)

    def log_message(self, *args):
        pass


def in_process(home: Path, model: str | None, count: int, settle: float) -> float:
    errors = [traceback_4kb(i) for i in range(count)]
    samples = []
    with Memory(home, model=model, settings=Settings(worker_thread=model is not None,
                                                     close_timeout=0.5)) as mem:
        mem.capture(run="r", exit_code=1, error_text="KeyError: 'first'")
        time.sleep(settle)  # the worker thread imports litellm, then hangs in its call
        for i, error in enumerate(errors):
            start = time.perf_counter()
            mem.capture(run="r", exit_code=1, error_text=error + f"\nKeyError: 'k{i}'")
            samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


# Own SQL: the store's API names no worker's pid, and the bench must stop its workers.
def stop_workers(home: Path) -> None:
    conn = sqlite3.connect(home / "reflect.db")
    for (pid,) in conn.execute("SELECT pid FROM workers"):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(pid), signal.SIGTERM)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=SAMPLES,
                   help=f"timed captures in process ({SAMPLES})")
    p.add_argument("--cold", type=int, default=COLD, help=f"timed cold captures ({COLD})")
    p.add_argument("--settle", type=float, default=SETTLE,
                   help=f"seconds a worker is given to block in the call ({SETTLE:g})")
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hang)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stop = threading.Timer(HANG, server.shutdown)
    stop.daemon = True  # the bench's end stops the server too
    stop.start()
    base = f"http://127.0.0.1:{server.server_port}/v1"
    os.environ.update(REFLECT_API_BASE=base, REFLECT_API_KEY="sk-bench", REFLECT_EMBEDDINGS="off")
    script = str(Path(sys.executable).parent / "reflect")
    print(f"capture of a 4 KB traceback, provider at {base} never answers:")
    with tempfile.TemporaryDirectory() as tmp:
        none = in_process(Path(tmp) / "a", None, args.samples, args.settle)
        hung = in_process(Path(tmp) / "b", "openai/bench-model", args.samples, args.settle)
        print(f"  in process, p50:  no model {none:.3f} ms   hanging model (worker thread) "
              f"{hung:.3f} ms   ratio {hung / none:.2f}")
        figures: dict = {"in_process_p50_ms": {"no model": none, "hanging model": hung},
                         "cold_first_ms": {}, "cold_median_ms": {}}
        stdin = traceback_4kb(1).encode()
        for name, model in (("no model", None), ("hanging model", "openai/bench-model")):
            home = Path(tmp) / name.replace(" ", "-")
            env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": "r"}
            env.pop("REFLECT_WORKER", None)
            if model:
                env["REFLECT_MODEL"] = model
            argv = [script, "capture", "--exit-code", "1", "--error-file", "-"]
            first = cold(argv, env, stdin)[0]  # with a model, it starts the detached worker
            time.sleep(args.settle)
            runs = [cold(argv, env, stdin + f"\nKeyError: 'k{i}'".encode())
                    for i in range(args.cold)]
            median = statistics.median(r[0] for r in runs)
            figures["cold_first_ms"][name], figures["cold_median_ms"][name] = first, median
            print(f"  cold `reflect capture`, {name:<13}: first {first:.1f} ms, then median "
                  f"{median:.1f} ms")
            if model:
                stop_workers(home)
    server.shutdown()
    emit(figures)


if __name__ == "__main__":
    main()
