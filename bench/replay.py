"""Replay mini-swe-agent-dev (239 SWE-bench runs) and DebugBench from ../shared/data with
memory on, recency-only, off and the two baselines (last3: the run's last three failures;
popular: the recent section and the lessons of the causes seen in the most earlier runs).

Run: .venv/bin/python bench/replay.py [DATA_DIR] [--charts DIR]   (the curves are drawn to
docs/figures unless told another directory)
Target: the `on` replay of mini-swe-agent-dev finishes in under two minutes. Prints, per
data set, the conversion time, the wall time per mode, the figures side by side (the
same table as `reflect eval compare`, with each mode's matched baselines in both readings,
the block before the step and anywhere earlier in the run, and fold by fold over
repositories; the defaults' cross-validation is bench/house_rules.py), then counts
per mode: coverage as k/n with its interval, lesson precision, items naming a foreign
detail, items and lesson-section items per block (mean over iterations, max), tokens,
recall latency and wall time; then mode on's coverage-vs-items curve beside the
popularity baselines at 1 to 8 items a block, drawn to docs/figures/curve-SET-KEY.png.
Outputs go to a temporary directory. The predictor's tuning: bench/predictor.py.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from figures import DATA, emit, no_data

from reflect import Memory
from reflect.base.choices import REPLAY_MODES as MODES
from reflect.eval._compare import compare, curve_chart, load, table
from reflect.eval._convert import convert
from reflect.eval._replay import replay
from reflect.eval._trace import read_trace, write_trace

TARGET_SECONDS = 120


SETS = {"mini-swe-agent-dev": "mini-swe-agent", "debugbench": "debugbench"}  # folder: format
CURVES = Path(__file__).resolve().parents[1] / "docs" / "figures"


def data_set(data: Path, name: str) -> Path | None:
    """A data set's folder in ``data``: $REFLECT_DATA (default ../shared/data), or the data
    directory given as the argument."""
    source = data / name
    if source.is_dir():
        return source
    print(no_data(source), file=sys.stderr)
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", type=Path, default=DATA)
    parser.add_argument("--charts", type=Path, default=CURVES,
                        help="where the curves are drawn (docs/figures)")
    args = parser.parse_args()
    slow = False
    figures: dict = {"sets": {}}
    for name, kind in SETS.items():
        source = data_set(args.data, name)
        if source is None:
            return 1
        with tempfile.TemporaryDirectory(prefix="reflect-bench-") as tmp:
            trace = Path(tmp) / f"{name}.jsonl"
            start = time.perf_counter()
            write_trace(trace, convert(kind, [source]))
            records = read_trace(trace)
            print(f"== {name}: convert + read {time.perf_counter() - start:.2f} s, "
                  f"{len({r.run for r in records})} runs, {len(records)} iterations")
            for mode in MODES:
                start = time.perf_counter()
                # The store of mode off is kept: it counts the failures and benign exits.
                store = Path(tmp) / "store-off" if mode == "off" else None
                replay(records, mode, Path(tmp) / mode, trace=str(trace), store=store)
                seconds = time.perf_counter() - start
                slow |= kind == "mini-swe-agent" and mode == "on" and seconds > TARGET_SECONDS
                print(f"replay --mode {mode:<8} {seconds:7.2f} s")
            with Memory(home=Path(tmp) / "store-off", embeddings="off") as mem:
                stats = mem.stats()
            dirs = [Path(tmp) / mode for mode in MODES]
            print(f"{stats.failures} failures, {stats.benign} benign exits")
            print()
            print(table(compare(dirs)))
            print()
            print(side_by_side(dirs))
            print()
            _, on = load(Path(tmp) / "on")
            print(curve_table(on))
            for key in ("group", "signature"):
                chart = args.charts / f"curve-{name}-{key}.png"
                if curve_chart(on, chart, key):
                    print(f"chart: {chart}")
            print()
            figures["sets"][name] = {"runs": len({r.run for r in records}),
                                     "iterations": len(records), "failures": stats.failures,
                                     "benign": stats.benign, "modes": per_mode(dirs)}
    if slow:
        print(f"SLOW: mode on took over {TARGET_SECONDS} s on mini-swe-agent-dev")
    emit(figures)
    return 0


def curve_table(summary: dict) -> str:
    """Mode on's cross-run coverage beside each baseline at 1..8 items a block, by key."""
    lines = []
    for key, figures in summary["matched"]["keys"].items():
        mode = figures["mode"]
        items = summary["blocks"]["lesson_items"]["mean"]
        lines.append(f"by {key}: on covers {mode['covered']}/{mode['repeats']} at "
                     f"{items:.2f} lesson items a block (precision "
                     f"{_pct(mode['precision'])}); matched baselines: " + ", ".join(
                         f"{pool} {t['covered']}" for pool, t in figures["matched"].items()))
        for pool, points in figures["curve"].items():
            lines.append(f"  popular/{pool:<7} at 1..{len(points)} items: "
                         + " ".join(f"{p['covered']}" for p in points))
        run = summary["matched"]["run"][key]
        lines.append(f"  anywhere earlier in the run, on covers {run['mode']['covered']}/"
                     f"{run['mode']['repeats']}; each list shown once at the start:")
        for pool, points in run["curve"].items():
            lines.append(f"  popular/{pool:<7} at 1..{len(points)} items: "
                         + " ".join(f"{p['covered']}" for p in points))
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def per_mode(dirs: list[Path], seed: int = 0) -> dict:
    """The figures the README quotes, per mode (bench/figures.py renders them)."""
    loaded = dict(load(d) for d in dirs)
    out = {}
    for arm in compare(dirs, seed=seed)["arms"]:
        m = arm["metrics"]
        out[arm["mode"]] = {
            **{key: m[key] for key in ("coverage_cross", "coverage_within", "lesson_precision",
                                       "foreign", "noise", "noise_lessons")},
            "tokens_per_iteration": m["tokens_per_iteration"]["value"],
            "lesson_items": loaded[arm["label"]]["blocks"]["lesson_items"],
            "items": loaded[arm["label"]]["blocks"]["items"],
            "recall_ms": arm["recall_ms"], "wall_seconds": arm["wall_seconds"],
            "matched": loaded[arm["label"]].get("matched")}
    return out


def side_by_side(dirs: list[Path], seed: int = 0) -> str:
    """Per mode: k/n with the bootstrap interval, items per block, tokens, noise, latency."""
    loaded = [load(d) for d in dirs]
    arms = compare(dirs, seed=seed)["arms"]

    def share(m: dict) -> str:
        if m["value"] is None:
            return f"{m['num']}/{m['den']}"
        return (f"{m['num']}/{m['den']} {100 * m['value']:.1f}% "
                f"[{100 * m['low']:.1f}, {100 * m['high']:.1f}]")

    def per_block(summary: dict, name: str) -> str:
        b = (summary.get("blocks") or {}).get(name)
        return f"{b['mean']:.2f} / {b['max']}" if b else "-"

    def latency(ms: dict) -> str:
        return "-" if not ms or ms.get("p50") is None else f"{ms['p50']:.2f} / {ms['p95']:.2f}"

    rows = [["", *(summary.get("mode", label) for label, summary in loaded)],
            ["coverage, cross-run (k/n)", *(share(a["metrics"]["coverage_cross"]) for a in arms)],
            ["coverage, within-run (k/n)",
             *(share(a["metrics"]["coverage_within"]) for a in arms)],
            ["lesson items per block mean / max",
             *(per_block(s, "lesson_items") for _, s in loaded)],
            ["all items per block mean / max", *(per_block(s, "items") for _, s in loaded)],
            ["tokens per iteration",
             *(f"{a['metrics']['tokens_per_iteration']['value']:.1f}" for a in arms)],
            ["noise, all items", *(share(a["metrics"]["noise"]) for a in arms)],
            ["noise, lesson items", *(share(a["metrics"]["noise_lessons"]) for a in arms)],
            ["lesson precision", *(share(a["metrics"]["lesson_precision"]) for a in arms)],
            ["items naming a foreign detail", *(share(a["metrics"]["foreign"]) for a in arms)],
            ["recall p50 / p95 ms", *(latency(a["recall_ms"]) for a in arms)],
            ["wall time s", *(f"{a['wall_seconds']:.1f}" for a in arms)]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


if __name__ == "__main__":
    sys.exit(main())
