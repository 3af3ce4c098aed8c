"""Cold hooks under load: N `reflect hook claude-code` failures at once, each a call of its
own, cold (`REFLECT_HELPER=off`), while a CPU load generator keeps the machine busy (a
spinning process per unit of load). For each hook: whether its failure was stored (in the
store, or kept aside), what it said on stderr, whether it answered (exit 0, one JSON
object) and its wall time from its start to its exit; then the slowest, how many went past
the hook's budget and the client's timeout, and how many said what was not true ("nothing
recorded" for a failure that was, or recorded for one that was lost).

Run: .venv/bin/python bench/hook_load.py [--hooks N] [--load L] [--rounds R] [--each]
(50 hooks and a load of 36 by default, one round; --each prints every hook's row)
Targets: no hook past its budget (`budget.SECONDS`) plus a second for its exit and
none past the client's timeout (`settings.TIMEOUT`); every hook answers; none lost;
none says what is not true.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from figures import emit

from reflect.capture.tool_calls import step_key
from reflect.integrations import budget, settings
from reflect.store import pending
from reflect.store.sqlite import DB_NAME

EVENT = json.loads((Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "claude_code"
                    / "PostToolUseFailure.json").read_text())
SETTLE_SECONDS = 120  # for the failures a hook records after its answer
EXIT_SLACK = 1.0  # a hook that answered in time still has its interpreter to end


def spin() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def hook(home: Path, call: str) -> tuple[subprocess.Popen, float, float]:
    """One cold hook, started now, its event written: the process, when it was asked for
    and when it started (its start in /proc, as its budget counts it)."""
    env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_WORKER": "off",
           "REFLECT_HELPER": "off", "TMPDIR": str(home.parent)}
    asked = time.monotonic()
    running = subprocess.Popen([sys.executable, "-m", "reflect", "hook", "claude-code"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, cwd=home.parent)
    started = budget.process_start(f"/proc/{running.pid}/stat")
    assert running.stdin is not None  # piped
    running.stdin.write(json.dumps({**EVENT, "cwd": str(home.parent),
                                    "tool_use_id": call}).encode())
    running.stdin.close()
    return running, asked, started


def finished(running: subprocess.Popen, asked: float, started: float, ended: float,
             call: str) -> dict:
    assert running.stdout is not None and running.stderr is not None  # piped
    out, err = running.stdout.read(), running.stderr.read()
    try:
        answered = running.returncode == 0 and isinstance(json.loads(out), dict)
    except ValueError:
        answered = False
    return {"call": call, "seconds": ended - started, "spawned_s": ended - asked,
            "answered": answered, "said": err.decode("utf-8", "replace").strip()}


def stored_calls(home: Path, calls: list[str]) -> set[str]:
    """The calls whose failure is in the store or kept aside (by the step key)."""
    # Own SQL: a row's step key tells which hook's call it is; the API's rows do not say.
    keys: set[str] = set()
    db = home / DB_NAME
    if db.exists():
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA busy_timeout = 10000")
            keys.update(step for (step,) in conn.execute("SELECT step FROM failures"))
    # kept aside, or in a file a replay claimed and left (a hook cut short mid-replay):
    # the next capture replays it
    for path in [*home.glob(f"{pending.PENDING_FILE}*"),
                 *home.parent.glob("reflect-*/pending-*.jsonl*")]:
        if not path.name.endswith(pending.REJECTED_SUFFIX):
            keys.update(json.loads(line).get("failure", {}).get("step")
                        for line in path.read_text().splitlines() if line.strip())
    run = EVENT["session_id"]
    return {call for call in calls if step_key(run, call) in keys}


def claim(said: str) -> str:
    """What a hook's stderr says of its failure: "none" (nothing recorded), "some"
    (recorded, kept aside, or recorded after the answer), or "" (it says nothing of it)."""
    if "nothing recorded" in said:
        return "none"
    if any(word in said for word in ("recorded", "kept in", "kept aside")):
        return "some"
    return ""


def one_round(tmp: Path, hooks: int, load: int) -> list[dict]:
    home = tmp / "store"
    home.mkdir(mode=0o700)
    burners = [spin() for _ in range(load)]
    try:
        time.sleep(1)  # the load is there before the hooks start
        calls = [f"toolu_{os.urandom(8).hex()}" for _ in range(hooks)]
        running = {}
        for call in calls:
            process, asked, started = hook(home, call)
            running[process.pid] = (process, asked, started, call)
        rows = []
        while running:  # each exit seen as it comes (the outputs fit in their pipes)
            pid, status = os.wait()
            ended = time.monotonic()
            process, asked, started, call = running.pop(pid)
            process.returncode = os.waitstatus_to_exitcode(status)
            rows.append(finished(process, asked, started, ended, call))
    finally:
        for b in burners:
            b.kill()
            b.wait()
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:  # what a hook left to a child after its answer is recorded by then
        kept = stored_calls(home, calls)
        if len(kept) == hooks or time.monotonic() > deadline:
            break
        time.sleep(1)
    for row in rows:
        row["stored"] = row["call"] in kept
        said = claim(row["said"])
        row["untrue"] = (said == "none" and row["stored"]) or (said == "some" and not row["stored"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hooks", type=int, default=50)
    parser.add_argument("--load", type=int, default=36, help="spinning processes")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--each", action="store_true", help="print every hook's row")
    args = parser.parse_args()
    limit = budget.SECONDS + EXIT_SLACK
    if os.geteuid() == 0:  # the observer sees each exit as it comes, not when the load lets it
        os.nice(-10)
    figures = []
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp_name:
            rows = one_round(Path(tmp_name), args.hooks, args.load)
        if args.each:
            for r in sorted(rows, key=lambda r: r["seconds"]):
                print(f"  {r['seconds']:6.2f} s ({r['spawned_s']:6.2f} s from the spawn)"
                      f"  stored {'yes' if r['stored'] else 'NO ':3}"
                      f"  answered {'yes' if r['answered'] else 'NO ':3}"
                      f"  {'UNTRUE ' if r['untrue'] else ''}said: {r['said'][-160:] or '-'}")
        times = sorted(r["seconds"] for r in rows)
        spawned = sorted(r["spawned_s"] for r in rows)
        row = {"hooks": len(rows), "load": args.load, "median_s": statistics.median(times),
               "slowest_s": times[-1], "slowest_from_spawn_s": spawned[-1],
               "over_budget": sum(t > limit for t in times),
               "over_timeout": sum(t > settings.TIMEOUT for t in spawned),
               "no_answer": sum(not r["answered"] for r in rows),
               "lost": sum(not r["stored"] for r in rows),
               "untrue": sum(r["untrue"] for r in rows),
               "said_something": sum(bool(r["said"]) for r in rows)}
        figures.append(row)
        print(f"round {n + 1}: {args.hooks} cold hooks at once, load {args.load} spinning:"
              f" from each one's start median {row['median_s']:.1f} s, slowest"
              f" {row['slowest_s']:.1f} s (from the spawn {row['slowest_from_spawn_s']:.1f} s);"
              f" over budget ({limit:g} s from the start) {row['over_budget']}, over the"
              f" client's timeout ({settings.TIMEOUT} s from the spawn) {row['over_timeout']};"
              f" no answer {row['no_answer']}, lost {row['lost']}, untrue {row['untrue']}"
              f" (said something: {row['said_something']})", flush=True)
    emit({"rounds": figures})


if __name__ == "__main__":
    main()
