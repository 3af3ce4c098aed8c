"""Capture and recency recall: in process with 10,000 stored failures, and as cold CLI processes.

Run: make bench   (or .venv/bin/python bench/capture_recall.py [--stored N] [--cold N])
Targets: in-process p50 under 2 ms; cold CLI median under 250 ms and peak RSS
under 80 MB, printed beside `python -c pass` measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import emit

from reflect import Memory

STORED = 10_000
RUNS = 50
SAMPLES = 300
COLD = 15


def traceback_4kb(i: int) -> str:
    frames = "".join(
        f'  File "/srv/app/pkg/module_{n}.py", line {10 + n * i % 97}, in handler_{n}\n'
        f"    result = handler_{n + 1}(payload, retries={n})\n"
        for n in range(30)
    )
    text = f"Traceback (most recent call last):\n{frames}KeyError: 'field_{i % 40}'\n"
    return text[-4096:]


def p50_p95(samples: list[float]) -> dict:
    return {"p50": statistics.median(samples), "p95": statistics.quantiles(samples, n=20)[18]}


def percentiles(samples: list[float]) -> str:
    q = p50_p95(samples)
    return f"p50 {q['p50']:7.3f} ms   p95 {q['p95']:7.3f} ms"


def in_process(home: Path, stored: int, samples: int) -> dict:
    errors = [traceback_4kb(i) for i in range(200)]
    with Memory(home) as mem:
        for i in range(stored):
            mem.capture(run=f"run-{i % RUNS}", exit_code=1, error_text=errors[i % 200])
        capture, recall = [], []
        for i in range(samples):
            start = time.perf_counter()
            mem.capture(run="run-7", exit_code=1, error_text=errors[i % 200])
            capture.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            rec = mem.recall(run="run-7", goal="fix the handler", sections=("recent",))
            recall.append((time.perf_counter() - start) * 1000)
    print(f"in process, {stored:,} stored failures, 4 KB traceback:")
    print(f"  capture          {percentiles(capture)}")
    print(f"  recency recall   {percentiles(recall)}   "
          f"({len(rec.items)} items, {rec.tokens} tokens)")
    return {"stored": stored, "capture_ms": p50_p95(capture), "recall_ms": p50_p95(recall)}


# Peak RSS survives exec on Linux, so a child forked from this process would
# report this process's size. Children are started from a tiny launcher that
# imports nothing beyond os and sys, itself smaller than `python -c pass`.
LAUNCHER = """
import os, sys, time
argv, stdin = sys.argv[1:], sys.stdin.buffer.read()
start = time.perf_counter()
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.dup2(r, 0)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.execv(argv[0], argv)
os.close(r)
os.write(w, stdin)
os.close(w)
_, status, usage = os.wait4(pid, 0)
elapsed = (time.perf_counter() - start) * 1000
print(elapsed, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))
"""


def cold(argv: list[str], env: dict, stdin: bytes = b"") -> tuple[float, float]:
    """Wall time (ms) and peak RSS (MB) of one child process."""
    out = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *argv], input=stdin, env=env,
                         capture_output=True, check=True, text=False)
    ms, rss, code = out.stdout.split()
    assert code == b"0", argv
    return float(ms), float(rss)


def cold_cli(home: Path, runs: int) -> dict:
    env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": "run-7"}
    script = str(Path(sys.executable).parent / "reflect")
    commands = {
        "python -c pass": ([sys.executable, "-c", "pass"], b""),
        "reflect capture": ([script, "capture", "--exit-code", "1", "--error-file", "-"],
                            traceback_4kb(3).encode()),
        "reflect recall": ([script, "recall", "--goal", "fix the handler"], b""),
    }
    print(f"cold processes, median of {runs} (same store):")
    baseline, figures = None, {}
    for name, (argv, stdin) in commands.items():
        measured = [cold(argv, env, stdin) for _ in range(runs)]
        ms = statistics.median(r[0] for r in measured)
        rss = max(r[1] for r in measured)
        baseline = baseline or ms
        figures[name] = {"ms": ms, "rss_mb": rss}
        print(f"  {name:<16} {ms:7.1f} ms  ({ms / baseline:4.1f}x python -c pass)   "
              f"peak RSS {rss:5.1f} MB")
    return figures


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stored", type=int, default=STORED, help=f"failures stored ({STORED:,})")
    p.add_argument("--samples", type=int, default=SAMPLES,
                   help=f"timed captures and recalls ({SAMPLES})")
    p.add_argument("--cold", type=int, default=COLD, help=f"runs of each cold process ({COLD})")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "store"
        figures = in_process(home, args.stored, args.samples)
        figures["cold"] = cold_cli(home, args.cold)
    emit(figures)


if __name__ == "__main__":
    main()
