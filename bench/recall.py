"""Recall with lessons from earlier runs: in process at 100k lessons, and as a cold CLI.

Run: .venv/bin/python bench/recall.py   (make bench runs it too)
Targets: in-process recall p50 under 20 ms at 100,000 lessons with a cached query
embedding, using the real goals of ../shared/data/mini-swe-agent; a cold
`reflect recall` under 300 ms with peak RSS under 150 MB at 10,000 lessons.

Lesson texts are synthetic (templated errors with random names) and their
vectors random unit vectors: search cost does not depend on what they say.
The goals' vectors come from the real bundled model.
"""

from __future__ import annotations

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
from reflect.index import to_blob

from reflect import Memory
from reflect.fingerprint import cause
from reflect.records import new_id

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mini-swe-agent" / "trajs"
TEMPLATES = [
    ("ModuleNotFoundError", "No module named '{w}'", "Install `{w}` first: `pip install {w}`."),
    ("OperationalError", "no such table: {w}_{v}", "Run the migrations before querying `{w}_{v}`."),
    ("AttributeError", "'{W}' object has no attribute '{v}'", "Check `{W}`'s API for `{v}`."),
    ("FileNotFoundError", "No such file or directory: '{w}.cfg'", "Create `{w}.cfg` first."),
    ("TypeError", "{w}() takes 2 positional arguments but 3 were given",
     "Check the signature of `{w}()`."),
    ("CommandNotFound", "{w}: command not found", "Install `{w}` or run it via python -m."),
]


def goals() -> list[str]:
    found = []
    for path in sorted(DATA.glob("*.traj.json")):
        messages = json.loads(path.read_text())["messages"]
        text = next(m["content"] for m in messages if m["role"] == "user")
        match = re.search(r"<pr_description>(.*?)</pr_description>", text, re.S)
        found.append(match.group(1).strip() if match else text[:2000])
    return found or ["Fix the failing date parser tests"]


def fill(home: Path, lessons: int, model: str, dim: int) -> None:
    """Write ``lessons`` lessons, one failure each, with random unit vectors."""
    rng = random.Random(1)
    vocab = [f"{rng.choice('bcdfgklmnprst')}{rng.choice('aeiou')}{rng.randrange(10**4)}"
             for _ in range(5000)]
    with Memory(home, embeddings="off") as mem:
        mem.capture(run="seed", exit_code=1)  # builds the schema
        conn = mem.store.conn
        vectors = np.random.default_rng(1).standard_normal((lessons, dim)).astype("<f4")
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        conn.execute("BEGIN")
        for i in range(lessons):
            error_type, message, guidance = rng.choice(TEMPLATES)
            w, v = rng.choice(vocab), rng.choice(vocab)
            words = {"w": w, "v": v, "W": w.capitalize()}
            message, guidance = message.format(**words), guidance.format(**words)
            lesson_id, fp, run = new_id("L"), f"fp{i}", f"run-{i % 500}"
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
            conn.execute("INSERT INTO lesson_vectors VALUES (?, ?, ?)",
                         (lesson_id, model, to_blob(vectors[i])))
        conn.execute("INSERT OR REPLACE INTO fingerprints SELECT DISTINCT fingerprint, cause"
                     " FROM failures")
        conn.execute("INSERT OR REPLACE INTO causes SELECT cause, COUNT(DISTINCT run),"
                     " COUNT(*), MAX(ts) FROM failures GROUP BY cause")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('embedder:', ?)", (model,))
        conn.execute("COMMIT")


def in_process(home: Path, texts: list[str]) -> None:
    with Memory(home, embeddings="") as mem:
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


def cold_cli(home: Path, goal: str) -> None:
    env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": "bench",
           "REFLECT_WORKER": "off"}
    script = str(Path(sys.executable).parent / "reflect")
    base = [cold([sys.executable, "-c", "pass"], env) for _ in range(10)]
    runs = [cold([script, "recall", "--goal", goal], env) for _ in range(15)]
    base_ms = statistics.median(r[0] for r in base)
    ms = statistics.median(r[0] for r in runs)
    print(f"  cold `reflect recall`: median {ms:.1f} ms ({ms / base_ms:.1f}x python -c pass at "
          f"{base_ms:.1f} ms), peak RSS {max(r[1] for r in runs):.1f} MB")


def main() -> None:
    from reflect.index import load_embedder

    embedder = load_embedder(None, print)
    texts = goals()
    for size in (10_000, 100_000):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "store"
            start = time.perf_counter()
            fill(home, size, embedder.name, embedder.dim)
            print(f"{size:,} lessons (filled in {time.perf_counter() - start:.0f} s):")
            in_process(home, texts)
            if size == 10_000:
                cold_cli(home, texts[0])


if __name__ == "__main__":
    main()
