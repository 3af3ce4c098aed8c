"""A team on one store: 4 processes capturing and 4 workers reflecting at once, against
PostgreSQL and, beside it in the same run, against one SQLite file.

Run: .venv/bin/python bench/team.py [failures] [--capturers N] [--workers N]
The PostgreSQL server is $REFLECT_TEST_POSTGRES, else one started for the run by
`.ci/postgres start` (loopback, a temporary directory). The provider is a loopback fake
(tests/test_worker.py's FakeProvider) answering every call with a lesson. Each failure
has its own fingerprint, so each queues one reflection job. Checked, not only timed:
every failure is stored, every job is done, the provider was called once per job (no
job done twice) and each fingerprint holds one model lesson.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from figures import emit  # noqa: E402
from test_worker import MODEL, FakeProvider  # noqa: E402  (the tests' loopback provider)

CAPTURERS = 4
WORKERS = 4
FAILURES = 400
DRAIN_TIMEOUT = 300.0

# One process's captures, each timed; the latencies go to stdout as JSON.
CAPTURE = """
import json, sys, time
from reflect import Memory
who, n = sys.argv[1], int(sys.argv[2])
words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet".split()
times = []
with Memory(run=f"team-{who}") as mem:
    for i in range(n):
        name = "_".join(words[int(d)] for d in f"{i:04d}")  # a module name per failure
        start = time.perf_counter()
        mem.capture(iteration=i + 1, action="python -m app", exit_code=1,
                    error_text=f"ModuleNotFoundError: No module named '{who}_{name}'")
        times.append((time.perf_counter() - start) * 1000)
print(json.dumps(times))
"""


# What the store holds afterwards, read as any other process of the team would.
COUNT = """
import json, sys
from reflect import Memory
with Memory() as mem:
    lessons = mem.lessons(status="active", limit=int(sys.argv[1]))
    print(json.dumps([mem.stats().failures, mem.status().jobs,
                      [lesson.to_dict() for lesson in lessons if lesson.kind == "model"]]))
"""


@contextmanager
def postgres():
    url = os.environ.get("REFLECT_TEST_POSTGRES")
    if url:
        yield url
        return
    started = subprocess.run([str(REPO / ".ci" / "postgres"), "start"], capture_output=True,
                             text=True)
    if started.returncode != 0:
        raise SystemExit(f"no PostgreSQL server: {started.stdout.strip()}")
    directory = started.stdout.strip()
    try:
        yield (Path(directory) / "url").read_text().strip()
    finally:
        subprocess.run([str(REPO / ".ci" / "postgres"), "stop", directory], check=False)


def team(env: dict[str, str], provider: FakeProvider, failures: int, capturers: int,
         workers: int) -> dict:
    each = failures // capturers
    reflecting = [subprocess.Popen([sys.executable, "-m", "reflect", "worker", "--idle-exit", "2"],
                                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                  for _ in range(workers)]
    start = time.perf_counter()
    capturing = [subprocess.Popen([sys.executable, "-c", CAPTURE, f"c{k}", str(each)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for k in range(capturers)]
    latencies: list[float] = []
    for p in capturing:
        out, err = p.communicate(timeout=DRAIN_TIMEOUT)
        if p.returncode != 0:
            raise SystemExit(f"a capturing process failed:\n{err}")
        latencies += json.loads(out)
    captured = time.perf_counter() - start
    for w in reflecting:
        w.wait(timeout=DRAIN_TIMEOUT)
    drained = time.perf_counter() - start
    counted = subprocess.run([sys.executable, "-c", COUNT, str(failures * 2)], env=env,
                             capture_output=True, text=True, check=True)
    stored, jobs, model_lessons = json.loads(counted.stdout)
    return {
        "stored": stored, "expected": each * capturers,
        "jobs done": jobs.get("done", 0), "jobs not done": sum(
            n for state, n in jobs.items() if state != "done"),
        "provider calls": provider.requests,
        "model lessons": len(model_lessons),
        "fingerprints with 2+ model lessons": len(model_lessons)
        - len({lesson["fingerprint"] for lesson in model_lessons}),
        "captures/s": each * capturers / captured,
        "capture p50 ms": statistics.median(latencies),
        "capture p95 ms": statistics.quantiles(latencies, n=20)[-1],
        "drained s": drained,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("failures", nargs="?", type=int, default=FAILURES,
                   help=f"failures captured in all ({FAILURES})")
    p.add_argument("--capturers", type=int, default=CAPTURERS,
                   help=f"processes capturing at once ({CAPTURERS})")
    p.add_argument("--workers", type=int, default=WORKERS, help=f"workers at once ({WORKERS})")
    args = p.parse_args()
    failures = args.failures
    results = {}
    with postgres() as url, tempfile.TemporaryDirectory() as tmp:
        for name, store in (("postgresql", url), ("sqlite", None)):
            with FakeProvider(lifetime=DRAIN_TIMEOUT + 60) as provider:
                env = {**os.environ, "REFLECT_HOME": str(Path(tmp) / name),
                       "REFLECT_MODEL": MODEL, "REFLECT_API_BASE": provider.base,
                       "REFLECT_API_KEY": "bench-key", "REFLECT_EMBEDDINGS": "off",
                       "REFLECT_WORKER": "off", "TMPDIR": tmp,
                       # Every failure is reflected on: no run's cap on calls cuts it short.
                       "REFLECT_MAX_CALLS_PER_RUN": str(failures)}
                env.pop("REFLECT_STORE", None)
                if store:
                    env["REFLECT_STORE"] = store
                results[name] = team(env, provider, failures, args.capturers, args.workers)
    print(f"{args.capturers} capturing processes and {args.workers} workers, {failures} failures"
          " (one fingerprint each):")
    names = list(results)
    print(f"  {'':36}" + "".join(f"{n:>12}" for n in names))
    for key in results[names[0]]:
        cells = "".join(f"{results[n][key]:>12.1f}" if isinstance(results[n][key], float)
                        else f"{results[n][key]:>12}" for n in names)
        print(f"  {key:36}{cells}")
    ok = all(r["stored"] == r["expected"] and r["jobs not done"] == 0
             and r["provider calls"] == r["jobs done"] == r["model lessons"]
             and r["fingerprints with 2+ model lessons"] == 0 for r in results.values())
    print("  none lost, no job done twice:", "yes" if ok else "NO")
    emit({"failures": failures, "capturers": args.capturers, "workers": args.workers, "ok": ok,
          "backends": results})
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
