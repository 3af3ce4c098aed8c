"""``reflect learn`` over a long history: sessions made from the real fixtures
(tests/fixtures/transcripts, written by the Claude Code and Codex binaries), each under
new ids with its module, script and directory varied, learned by the command as a user
runs it; then learned again (nothing to add). Prints the time and the command's peak
memory (RSS) at two history sizes side by side: streamed, the memory does not grow with
the history.

Run: .venv/bin/python bench/learn.py [--sessions 1000] [--small 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from figures import emit  # noqa: E402
from transcript_fixtures import synthesize  # noqa: E402

MODULES = ["openpyxl", "yaml", "requests", "numpy", "pandas", "lxml", "psycopg2", "boto3"]


def history(root: Path, sessions: int) -> dict[str, Path]:
    """``sessions`` sessions, half of each client, varied by module, script and directory."""
    made = {}
    for client in ("claude-code", "codex"):
        where = root / client
        for k in range(sessions // 2):
            texts = {"openpyxl": MODULES[k % len(MODULES)], "total.py": f"total{k % 13}.py",
                     "'data'": f"'data{k % 5}'", "ls data": f"ls data{k % 5}"}
            synthesize(client, where, texts=texts, start=k)
        made[client] = where
    return made


def learn(home: Path, client: str, where: Path) -> tuple[float, float, float, str]:
    """Wall and CPU seconds and peak RSS (MB) of ``reflect learn CLIENT WHERE``, and its
    first line (the CPU time says what the work costs on a machine others share)."""
    out = home.parent / f"{home.name}.out"
    start = time.perf_counter()
    with open(out, "w") as sink:
        child = subprocess.Popen(
            [sys.executable, "-m", "reflect", "learn", client, str(where)],
            env={**os.environ, "REFLECT_HOME": str(home), "REFLECT_EMBEDDINGS": "off",
                 "REFLECT_WORKER": "off"}, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, in KB
    seconds = time.perf_counter() - start
    text = out.read_text()
    assert os.waitstatus_to_exitcode(status) == 0, text
    return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            text.splitlines()[0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--small", type=int, default=100)
    args = p.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory(prefix="reflect-bench-learn-") as tmp:
        for sessions in (args.small, args.sessions):
            made = history(Path(tmp) / f"h{sessions}", sessions)
            size = sum(f.stat().st_size for d in made.values() for f in d.rglob("*.jsonl"))
            home = Path(tmp) / f"store{sessions}"
            rows = []
            for attempt in ("first", "again"):
                total, cpu, rss, lines = 0.0, 0.0, 0.0, []
                for client, where in made.items():
                    seconds, busy, peak, line = learn(home, client, where)
                    total, cpu, rss = total + seconds, cpu + busy, max(rss, peak)
                    lines.append(line)
                rows.append((attempt, total, cpu, rss, lines))
            figures[str(sessions)] = {a: {"seconds": round(s, 2), "cpu_seconds": round(c, 2),
                                          "rss_mb": round(r, 1)} for a, s, c, r, _ in rows}
            print(f"{sessions} sessions ({size / 2**20:.0f} MB of transcripts and rollouts):")
            for attempt, seconds, cpu, rss, lines in rows:
                print(f"  learn {attempt:5}  {seconds:6.1f} s (CPU {cpu:5.1f} s)  peak RSS "
                      f"{rss:4.0f} MB   " + " | ".join(lines))
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on "
          f"{os.cpu_count()} cores")
    emit(figures)


if __name__ == "__main__":
    main()
