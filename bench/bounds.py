"""Bounded waits, timed: what the unit tests check by the event alone (each command ends,
and says which bound it met), with the time each took, beside `python -c pass` in the
same run. A wall-clock bound is a bench's: a unit test on a loaded machine cannot hold one.

Run: .venv/bin/python bench/bounds.py
Targets, each a cold process: `reflect capture` of what never ends (/dev/zero as a file or
on stdin, a FIFO with no writer, a writer that never closes its pipe) under 15 s; a hook on
endless stdin under 15 s, on an event whose writer never closes under 10 s; a capture and
a hook while another process holds the store's write lock under 3 s and 9 s (one
STEP_BUSY_TIMEOUT and a process start); in process, the heuristic lessons of the 10 KB
messages of tests/test_heuristics.py (84 each) under 2 s a message, and a search of a
megabyte of text under 3 s.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from figures import emit  # noqa: E402
from test_heuristics import HUGE, TYPES  # noqa: E402

from reflect import Memory  # noqa: E402
from reflect.capture.heuristics import heuristic_lesson  # noqa: E402

EVENT = json.loads((REPO / "tests/fixtures/claude_code/PostToolUseFailure.json").read_text())
NEVER_CLOSES = "import sys, time; sys.stdout.write(sys.argv[1]); sys.stdout.flush(); time.sleep(60)"
TRACEBACK = "Traceback (most recent call last):\nValueError: held\n"


def cold(argv: list[str], env: dict[str, str], stdin=None, data: bytes | None = None) -> float:
    """Seconds from start to exit of one child process; it must exit 0."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], stdin=stdin, input=data, env=env,
                          capture_output=True, timeout=120)
    took = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    return took


def from_writer(argv: list[str], env: dict[str, str], text: str) -> float:
    """``argv`` reading a pipe whose writer wrote ``text`` and never closes it."""
    writer = subprocess.Popen([sys.executable, "-c", NEVER_CLOSES, text], stdout=subprocess.PIPE)
    try:
        return cold(argv, env, stdin=writer.stdout)
    finally:
        writer.kill()
        writer.wait()


def in_process(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    rows: list[tuple[str, float, float]] = []  # what, seconds, target
    with tempfile.TemporaryDirectory(prefix="reflect-bench-") as tmp:
        home = Path(tmp) / "store"
        env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_HELPER": "off",
               "REFLECT_WORKER": "off", "REFLECT_EMBEDDINGS": "hash"}
        capture = ["-m", "reflect", "capture", "--run", "r", "--exit-code", "3", "--error-file"]
        hook = ["-m", "reflect", "hook", "claude-code"]
        event = json.dumps({**EVENT, "cwd": tmp})
        bare = cold(["-c", "pass"], env)
        fifo = Path(tmp) / "err.fifo"
        os.mkfifo(fifo)
        with open("/dev/zero", "rb") as zero:
            rows += [("capture --error-file /dev/zero", cold([*capture, "/dev/zero"], env), 15),
                     ("capture of /dev/zero on stdin", cold([*capture, "-"], env, zero), 15),
                     ("capture of a FIFO with no writer", cold([*capture, str(fifo)], env), 15),
                     ("capture from a writer that never closes",
                      from_writer([*capture, "-"], env, TRACEBACK), 15),
                     ("hook on endless stdin", cold(hook, env, zero), 15),
                     ("hook from a writer that never closes", from_writer(hook, env, event), 10)]
        # Own SQL: another process's long write holds the lock; the store's API holds none.
        held = sqlite3.connect(home / "reflect.db", isolation_level=None)
        held.execute("BEGIN EXCLUSIVE")
        try:
            rows += [("capture, the store held", cold([*capture, "-"], env,
                                                      data=TRACEBACK.encode()), 3),
                     ("hook, the store held", cold(hook, env, data=event.encode()), 9)]
        finally:
            held.execute("ROLLBACK")
            held.close()
        action = "sed -i 's/x/y/' " + "f" * 10_000

        def lessons(message: str) -> list[object]:
            return [heuristic_lesson(t, message, action, "p" * 10_000, code)
                    for t in TYPES for code in (None, 1, 124, 126, 127, 137)]

        worst = max(in_process(partial(lessons, message)) for message in HUGE)
        rows.append((f"heuristic lessons of a 10 KB message ({len(TYPES) * 6})", worst, 2))
        with Memory(home=str(home)) as mem:
            rows.append(("search of a megabyte", in_process(
                lambda: mem.search_lessons("auth_user " * 100_000)), 3))
    print(f"python -c pass: {bare:.2f} s")
    missed = [what for what, took, target in rows if took >= target]
    for what, took, target in rows:
        print(f"  {what:<45} {took:6.2f} s  (target < {target} s)"
              + ("  MISSED" if took >= target else ""))
    print("targets met" if not missed else f"targets missed: {', '.join(missed)}")
    emit({"python_ms": bare * 1000, "seconds": {what: took for what, took, _ in rows},
          "missed": missed})
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
