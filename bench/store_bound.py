"""The store's bound: captures fill a store, ``consolidate`` keeps the newest failures
and gives the space back. Prints sizes and times.

Run: .venv/bin/python bench/store_bound.py [--captures 50000] [--bound 20000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from figures import emit

from reflect import Consolidation, Memory
from reflect.api.memory import port
from reflect.store import DB_NAME

ERRORS = [
    "Traceback (most recent call last):\n  File \"/repo/src/app/models.py\", line {n}, in save\n"
    "    self.validate()\nValueError: field 'name{n}' must not be empty",
    "E   AssertionError: assert {n} == {m}\n/repo/tests/test_core.py:{n}: AssertionError",
    "ModuleNotFoundError: No module named 'pkg{n}'",
    "bash: tool{n}: command not found",
    "django.db.utils.OperationalError: no such table: app_table{n}",
]


def size(home: Path) -> int:
    return sum(p.stat().st_size for p in home.glob(f"{DB_NAME}*"))


def fill(home: Path, captures: int, per_run: int = 10) -> float:
    start = time.perf_counter()
    with Memory(home, embeddings="off") as mem:
        for i in range(captures):
            run = f"run-{i // per_run}"
            text = ERRORS[i % len(ERRORS)].format(n=i % 97, m=i)
            mem.capture(run=run, goal=f"fix issue {i // per_run} in module {i % 53}",
                        phase="test", action="python -m pytest tests/ -x", exit_code=1,
                        error_text=text)
            if i % per_run == 0:
                mem.recall(run=run, goal=f"fix issue {i // per_run}")
    return time.perf_counter() - start


def consolidate(home: Path, bound: int) -> tuple[Consolidation, float]:
    os.environ["REFLECT_MAX_FAILURES"] = str(bound)
    start = time.perf_counter()
    with Memory(home, embeddings="off") as mem:
        report = mem.consolidate()
    return report, time.perf_counter() - start


def count(home: Path, table: str) -> int:
    with Memory(home, embeddings="off") as mem:
        if table == "failures":
            return int(port(mem).store.footprint()["failures"])
        return len(port(mem).store.lessons(None, 0, 10**9))  # every lesson, whatever its status


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--captures", type=int, default=50_000)
    p.add_argument("--bound", type=int, default=20_000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "store"
        took = fill(home, args.captures)
        full = size(home)
        older = Path(tmp) / "older"
        shutil.copytree(home, older)
        # Own SQL: no API makes a store as older versions did (without incremental vacuum).
        conn = sqlite3.connect(older / DB_NAME, isolation_level=None)
        conn.execute("PRAGMA auto_vacuum=NONE")  # as a store made by an older version
        conn.execute("VACUUM")
        conn.close()
        figures: dict = {"fill": {"captures": args.captures, "seconds": took, "mb": full / 1e6,
                                  "failures": count(home, "failures"),
                                  "lessons": count(home, "lessons")}}
        print(f"{args.captures:,} captures (and a recall per 10) in {took:.0f} s:"
              f" {full / 1e6:.1f} MB, {count(home, 'failures'):,} failures,"
              f" {count(home, 'lessons'):,} lessons")
        report, took = consolidate(home, args.bound)
        figures["consolidate"] = {
            "bound": args.bound, "seconds": took, "mb": size(home) / 1e6,
            "reclaimed_mb": report.reclaimed_bytes / 1e6,
            "deleted_failures": report.deleted_failures,
            "deleted_injections": report.deleted_injections,
            "failures": count(home, "failures"), "lessons": count(home, "lessons")}
        print(f"consolidate with REFLECT_MAX_FAILURES={args.bound:,} in {took:.2f} s:"
              f" {report.deleted_failures:,} failures and {report.deleted_injections:,}"
              f" injections dropped, {count(home, 'lessons'):,} lessons kept;"
              f" {size(home) / 1e6:.1f} MB (shrank by {report.reclaimed_bytes / 1e6:.1f} MB)")
        report, took = consolidate(older, args.bound)
        figures["older"] = {"seconds": took, "mb": size(older) / 1e6,
                            "failures": count(older, "failures")}
        print(f"the same store made by an older version (no incremental vacuum): converted"
              f" and consolidated in {took:.2f} s, {size(older) / 1e6:.1f} MB")
        fill(home, args.captures // 10)
        grown = size(home)
        report, took = consolidate(home, args.bound)
        figures["again"] = {"captures": args.captures // 10, "grown_mb": grown / 1e6,
                            "seconds": took, "mb": size(home) / 1e6,
                            "failures": count(home, "failures")}
        print(f"{args.captures // 10:,} more captures: {grown / 1e6:.1f} MB; consolidate again in"
              f" {took:.2f} s: {size(home) / 1e6:.1f} MB, {count(home, 'failures'):,} failures")
    emit(figures)


if __name__ == "__main__":
    main()
