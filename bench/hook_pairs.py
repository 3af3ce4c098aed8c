"""A tool call's two hooks as a client runs them, through the resident helper: the
`PreToolUse`, then the tool, then the `PostToolUse` a gap after the first was answered,
then the model's turn before the next call. A hook that comes before the helper has a
spare child ready (``reflect.cli.resident``: one is forked once the requests pause) is
answered by a child forked for it, which first copies the pages of the helper's memory it
writes. Per gap, the medians of the runs beside `python -c pass` in the same run.

Run: .venv/bin/python bench/hook_pairs.py [--runs N] [--gaps MS,...]   (25; 10,30,60 ms)
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
from hooks import SESSION, SUCCEEDED, event, seed, start_helper

RUNS = 25
GAPS = "10,30,60"
TURN = 0.3  # seconds of the model's turn between two tool calls


def timed(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    """Milliseconds from start to end of ``argv``. Not ``capture_recall.cold``, which
    bench/hooks.py times with: its launcher's own start (~5 ms) would lie between the two
    hooks, lengthening the gap measured; ``python -c pass`` is timed alike here."""
    start = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=RUNS, help=f"tool calls a gap ({RUNS})")
    p.add_argument("--gaps", default=GAPS, help=f"ms from one hook's answer to the next ({GAPS})")
    args = p.parse_args()
    gaps = [float(g) for g in args.gaps.split(",")]
    hook = [str(Path(sys.executable).parent / "reflect"), "hook", "claude-code"]
    before, after = event("PreToolUse", tool_input=SUCCEEDED), event("PostToolUse",
                                                                      tool_input=SUCCEEDED)
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "store"
        env = {**os.environ, "REFLECT_HOME": str(home), "REFLECT_RUN": SESSION,
               "REFLECT_WORKER": "off", "REFLECT_HELPER": "on"}
        seed(home)
        helper = start_helper(home, env)
        try:
            for gap in gaps:
                bare, pre, post = [], [], []
                for _ in range(args.runs):
                    bare.append(timed([sys.executable, "-c", "pass"], env))
                    time.sleep(TURN)
                    pre.append(timed(hook, env, before))
                    time.sleep(gap / 1000)
                    post.append(timed(hook, env, after))
                ms = {name: statistics.median(t)
                      for name, t in (("pass", bare), ("PreToolUse", pre), ("PostToolUse", post))}
                figures[f"{gap:g}"] = ms
                print(f"gap {gap:4g} ms: python -c pass {ms['pass']:5.1f} ms, PreToolUse "
                      f"{ms['PreToolUse']:5.1f} ms ({ms['PreToolUse'] / ms['pass']:.2f}x), "
                      f"PostToolUse {ms['PostToolUse']:5.1f} ms "
                      f"({ms['PostToolUse'] / ms['pass']:.2f}x)")
        finally:
            helper.terminate()
            helper.wait(10)
    print(f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min), "
          f"{os.cpu_count()} cores")
    emit({"runs": args.runs, "gaps": figures, "load": os.getloadavg()})


if __name__ == "__main__":
    main()
