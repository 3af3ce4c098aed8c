"""Recall with lessons from earlier runs: in process at 100k lessons in 10k runs, and
as a cold CLI at 10k lessons in 1k runs.

Run: .venv/bin/python bench/recall.py [DATA_DIR] [--divide N] [--cold N]   (make bench runs
it too; --divide: each store N times smaller)
Targets: in-process recall p95 under 20 ms at 100,000 lessons and 10,000 runs with the
goal's vector cached, using the real goals of ../shared/data/mini-swe-agent; a cold
`reflect recall` printed beside `python -c "import numpy"` (no slower than before).

Lessons, failures and run goals are synthetic: templated errors with random names
(plus a few causes common to many runs, as real stores have), each run's goal vector a
random unit vector. Prediction cost depends on how many runs and causes there are, not
on what they say. The real goals' vectors come from the bundled model.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from capture_recall import cold
from figures import DATA, emit
from reflect.index import to_blob

from reflect import Memory
from reflect.api.memory import port
from reflect.base.records import new_id
from reflect.base.text import text_key
from reflect.capture.fingerprint import cause
from reflect.store import SQLiteStore

STORES = ((10_000, 1_000), (100_000, 10_000))  # lessons, runs; the cold CLI on the first
COLD = 15
TEMPLATES = [
    ("ModuleNotFoundError", "No module named '{w}'", "Install `{w}` first: `pip install {w}`."),
    ("OperationalError", "no such table: {w}_{v}", "Run the migrations before querying `{w}_{v}`."),
    ("AttributeError", "'{W}' object has no attribute '{v}'", "Check `{W}`'s API for `{v}`."),
    ("FileNotFoundError", "No such file or directory: '{w}.cfg'", "Create `{w}.cfg` first."),
    ("TypeError", "{w}() takes 2 positional arguments but 3 were given",
     "Check the signature of `{w}()`."),
    ("CommandNotFound", "{w}: command not found", "Install `{w}` or run it via python -m."),
]


COMMON_WORD = "requests"


def goals(data: Path) -> list[str]:
    found = []
    for path in sorted((data / "mini-swe-agent" / "trajs").glob("*.traj.json")):
        messages = json.loads(path.read_text())["messages"]
        text = next(m["content"] for m in messages if m["role"] == "user")
        match = re.search(r"<pr_description>(.*?)</pr_description>", text, re.S)
        found.append(match.group(1).strip() if match else text[:2000])
    return found or ["Fix the failing date parser tests"]


def fill(home: Path, lessons: int, runs: int, model: str, dim: int) -> None:
    """``lessons`` lessons with one failure each, spread over ``runs`` runs whose goals
    have random unit vectors; then the run-goal index, as the worker leaves it."""
    rng = random.Random(1)
    vocab = [f"{rng.choice('bcdfgklmnprst')}{rng.choice('aeiou')}{rng.randrange(10**4)}"
             for _ in range(5000)]
    common = [COMMON_WORD, *vocab[:19]]  # causes that many runs share
    with Memory(home, embeddings="off") as mem:
        mem.capture(run="seed", exit_code=1)  # builds the schema
        # Own SQL: 100,000 lessons in one transaction (the API commits a capture at a time).
        store = port(mem).store
        assert isinstance(store, SQLiteStore)  # a file of its own: Memory(home)
        conn = store.conn
        vectors = np.random.default_rng(1).standard_normal((runs, dim)).astype("<f4")
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        conn.execute("BEGIN")
        for r in range(runs):
            goal = f"task {r}: fix {rng.choice(vocab)} in {rng.choice(vocab)}"
            conn.execute("INSERT INTO runs (run, goal, goal_key, scope, created)"
                         " VALUES (?, ?, ?, 'global', ?)",
                         (f"run-{r}", goal, text_key(goal), time.time()))
            conn.execute("INSERT INTO query_vectors VALUES (?, ?, ?, ?, ?)",
                         (text_key(goal), goal, model, to_blob(vectors[r]), time.time()))
        for i in range(lessons):
            error_type, message, guidance = rng.choice(TEMPLATES)
            w = rng.choice(common) if rng.random() < 0.3 else rng.choice(vocab)
            words = {"w": w, "v": rng.choice(vocab), "W": w.capitalize()}
            message, guidance = message.format(**words), guidance.format(**words)
            lesson_id, fp, run = new_id("L"), f"fp{i}", f"run-{i % runs}"
            conn.execute(
                "INSERT INTO lessons (id, fingerprint, trigger, guidance, category, severity,"
                " kind, confidence, created, updated, scope, error_text) VALUES"
                " (?, ?, ?, ?, 'general', 'medium', 'heuristic', 0.5, ?, ?, 'global', ?)",
                (lesson_id, fp, f"running `python app.py` fails with {error_type}", guidance,
                 time.time(), time.time(), f"{error_type}: {message}"),
            )
            conn.execute(
                "INSERT INTO failures (id, run, iteration, ts, goal, phase, action, exit_code,"
                " error_type, message, signature, friction, fingerprint, source, redactions,"
                " category, severity, lesson_id, cause) VALUES (?, ?, 1, ?, '', '',"
                " 'python app.py', 1, ?, ?, '', '', ?, 'text', 0, 'general', 'medium', ?, ?)",
                (new_id("F"), run, time.time(), error_type, message, fp, lesson_id,
                 cause(error_type, message)),
            )
        conn.execute("INSERT OR REPLACE INTO fingerprints SELECT DISTINCT fingerprint, cause"
                     " FROM failures")
        conn.execute("INSERT OR REPLACE INTO causes SELECT cause, COUNT(DISTINCT run),"
                     " COUNT(*), MAX(ts) FROM failures GROUP BY cause")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('embedder:', ?)", (model,))
        conn.execute("COMMIT")
    with Memory(home, embeddings="") as mem:  # the index file, as the worker leaves it
        port(mem).vectors.index()


def in_process(home: Path, texts: list[str]) -> dict:
    with Memory(home, embeddings="") as mem:
        # The run has hit a common cause: what followed it in earlier runs is looked up too.
        mem.capture(run="bench", exit_code=1, error_text=f"ModuleNotFoundError: No module "
                    f"named '{COMMON_WORD}'")
        for goal in texts:  # first pass: load the model, cache each goal's vector
            mem.recall(run="bench", goal=goal)
        samples = []
        for _ in range(3):
            for goal in texts:
                start = time.perf_counter()
                rec = mem.recall(run="bench", goal=goal)
                samples.append((time.perf_counter() - start) * 1000)
    q = statistics.quantiles(samples, n=20)
    print(f"  in process, {len(texts)} real goals x3, cached query embedding: "
          f"p50 {statistics.median(samples):.2f} ms  p95 {q[18]:.2f} ms  "
          f"({len(rec.items)} items, {rec.tokens} tokens in the last block)")
    return {"goals": len(texts), "p50": statistics.median(samples), "p95": q[18]}


def cold_cli(home: Path, goal: str, times: int) -> dict:
    """Interleaved, so both see the same machine load."""
    env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": "bench",
           "REFLECT_WORKER": "off"}
    script = str(Path(sys.executable).parent / "reflect")
    numpy, runs = [], []
    for _ in range(times):
        numpy.append(cold([sys.executable, "-c", "import numpy"], env))
        runs.append(cold([script, "recall", "--goal", goal], env))
    base_ms = statistics.median(r[0] for r in numpy)
    ms = statistics.median(r[0] for r in runs)
    print(f"  cold `reflect recall`: median {ms:.1f} ms, {ms / base_ms:.2f}x "
          f"`python -c \"import numpy\"` at {base_ms:.1f} ms; peak RSS "
          f"{max(r[1] for r in runs):.1f} MB")
    return {"ms": ms, "numpy_ms": base_ms, "rss_mb": max(r[1] for r in runs)}


def main() -> None:
    from reflect.index import load_embedder

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("data", nargs="?", type=Path, default=DATA,
                   help="the data sets' directory (its mini-swe-agent's goals)")
    p.add_argument("--divide", type=int, default=1,
                   help="lessons and runs of each store divided by this (1)")
    p.add_argument("--cold", type=int, default=COLD, help=f"runs of each cold process ({COLD})")
    args = p.parse_args()
    embedder = load_embedder(None, print)
    assert embedder is not None  # None: embeddings off, which the bench does not ask
    texts = goals(args.data)
    figures: dict = {"stores": {}}
    for n, (size, runs) in enumerate((s // args.divide, r // args.divide) for s, r in STORES):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "store"
            start = time.perf_counter()
            fill(home, size, runs, embedder.name, embedder.dim)
            print(f"{size:,} lessons in {runs:,} runs "
                  f"(filled in {time.perf_counter() - start:.0f} s):")
            figures["stores"][str(size)] = {"runs": runs, **in_process(home, texts)}
            if n == 0:
                figures["cold"] = cold_cli(home, texts[0], args.cold)
    emit(figures)


if __name__ == "__main__":
    main()
