"""Replay all of ../shared/data/mini-swe-agent with memory on, recency-only and off.

Run: .venv/bin/python bench/replay.py [DATA_DIR]
Target: the `on` replay finishes in under two minutes. Prints the conversion
time, the wall time per mode and the figures side by side (the same table as
`reflect eval compare`). Outputs go to a temporary directory.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from reflect.eval.compare import compare, table
from reflect.eval.convert import convert
from reflect.eval.replay import MODES, replay
from reflect.eval.trace import read_trace, write_trace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TARGET_SECONDS = 120


def main() -> int:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    source = data / "mini-swe-agent"
    if not source.is_dir():
        print(f"no data at {source}; pass the shared data directory as the argument")
        return 1
    with tempfile.TemporaryDirectory(prefix="reflect-bench-") as tmp:
        trace = Path(tmp) / "mini-swe-agent.jsonl"
        start = time.perf_counter()
        write_trace(trace, convert("mini-swe-agent", [source]))
        records = read_trace(trace)
        print(f"convert + read: {time.perf_counter() - start:.2f} s, "
              f"{len({r.run for r in records})} runs, {len(records)} iterations")
        slow = False
        for mode in MODES:
            start = time.perf_counter()
            replay(records, mode, Path(tmp) / mode, trace=str(trace))
            seconds = time.perf_counter() - start
            slow |= mode == "on" and seconds > TARGET_SECONDS
            print(f"replay --mode {mode:<8} {seconds:7.2f} s")
        print()
        print(table(compare([Path(tmp) / mode for mode in MODES])))
    if slow:
        print(f"\nSLOW: mode on took over {TARGET_SECONDS} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
