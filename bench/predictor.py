"""Tune the predictor of lessons from earlier runs by leave-runs-out, beside the baselines.

Run: .venv/bin/python bench/predictor.py [DATA_DIR]   (several minutes: one replay per
grid point and data set, with the bundled embedding model)

For mini-swe-agent and DebugBench from the shared data: every grid point of
`Predictor` (k, prior, follow, threshold) replays the whole trace in mode `on` through
the product's own `replay` (the value is passed in; nothing is patched). The runs are
split in two halves (alternating in order of first appearance). The point chosen on
one half is reported on the other (held out), and the other way round. The choice: the
most cross-run coverage (then the best lesson precision, then the fewest items) among
the points that show no more lesson items per iteration than `popular` and have at
least its lesson precision on that half; failing that, the best F1 of the two.
`popular` and `last3` are replayed beside and measured on the same halves, and the
product's default `Predictor()` on all runs.
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import tempfile
from pathlib import Path

from figures import DATA, emit

from reflect.eval.convert import convert
from reflect.eval.metrics import bootstrap
from reflect.eval.replay import replay
from reflect.eval.trace import read_trace, write_trace
from reflect.recall.predict import Predictor

GRID = {"k": (10, 20), "prior": (2.0, 10.0, 50.0), "follow": (0.5,),
        "threshold": (0.01, 0.03, 0.06), "min_runs": (1,)}
SETS = {"mini-swe-agent": "mini-swe-agent", "debugbench": "debugbench"}


def halves(runs: list[dict]) -> tuple[set[str], set[str]]:
    order = [r["run"] for r in runs]  # in order of first appearance
    return set(order[0::2]), set(order[1::2])


def measure(runs: list[dict], keep: set[str]) -> dict:
    """Cross-run coverage, lesson precision and lesson items per iteration on ``keep``."""
    chosen = [r for r in runs if r["run"] in keep]
    m = bootstrap([chosen], resamples=200)[0]
    iterations = sum(r["iterations"] for r in chosen)
    return {"coverage": m["coverage_cross"], "precision": m["lesson_precision"],
            "items": sum(r["lesson_items"] for r in chosen) / max(iterations, 1),
            "foreign": m["foreign"]["num"]}


def f1(m: dict) -> float:
    c, p = m["coverage"]["value"] or 0.0, m["precision"]["value"] or 0.0
    return 2 * c * p / (c + p) if c + p else 0.0


def choose(results, half: set[str], base: dict):
    """The point to use, judged on ``half`` against popular's figures there."""
    def value(m: dict, name: str) -> float:
        return m[name]["value"] or 0.0

    judged = [(measure(runs, half), point, runs) for point, runs in results]
    fair = [j for j in judged if j[0]["items"] <= base["items"]
            and value(j[0], "precision") >= value(base, "precision")]
    if fair:
        _, point, runs = max(fair, key=lambda j: (value(j[0], "coverage"),
                                                  value(j[0], "precision"), -j[0]["items"]))
    else:
        _, point, runs = max(judged, key=lambda j: f1(j[0]))
    return point, runs


def share(m: dict) -> str:
    return f"{m['num']}/{m['den']}" + (f" {100 * m['value']:.1f}%" if m["value"] is not None
                                       else "")


def line(label: str, m: dict) -> str:
    return (f"  {label:<34} cross-run {share(m['coverage']):<14} precision "
            f"{share(m['precision']):<14} lesson items/iter {m['items']:.2f}  foreign "
            f"{m['foreign']}")


def tune(name: str, records) -> dict:
    """Prints the choice on each half and its figures on the other; returns them."""
    runs_of = {}
    for mode in ("popular", "last3"):
        runs_of[mode] = _runs(records, mode, None)
    points = [Predictor(**dict(zip(GRID, values, strict=True)))
              for values in itertools.product(*GRID.values())]
    results = []
    for point in points:
        results.append((point, _runs(records, "on", point)))
    a, b = halves(runs_of["popular"])
    print(f"\n== {name}: {len(records)} iterations, {len(a) + len(b)} runs, "
          f"{len(points)} grid points")
    figures: dict = {"iterations": len(records), "runs": len(a) + len(b),
                     "points": len(points), "halves": []}
    for tuned_on, held_out, label in ((a, b, "A"), (b, a, "B")):
        base = measure(runs_of["popular"], tuned_on)
        best, runs = choose(results, tuned_on, base)
        print(f" tuned on half {label}: {best}")
        half = {"tuned_on": label.lower(), "held_out": "b" if label == "A" else "a",
                "point": dataclasses.asdict(best), "on": measure(runs, held_out)}
        print(line("on, held out", half["on"]))
        for mode in ("popular", "last3"):
            half[mode] = measure(runs_of[mode], held_out)
            print(line(f"{mode}, same half", half[mode]))
        figures["halves"].append(half)
    default = next((runs for point, runs in results if point == Predictor()), None)
    default = default or _runs(records, "on", Predictor())
    everyone = a | b
    print(" the product's default, all runs:", Predictor())
    figures["default"] = {"point": dataclasses.asdict(Predictor()),
                          "on": measure(default, everyone)}
    print(line("on (default)", figures["default"]["on"]))
    for mode in ("popular", "last3"):
        figures["default"][mode] = measure(runs_of[mode], everyone)
        print(line(mode, figures["default"][mode]))
    return figures


def _runs(records, mode: str, predictor: Predictor | None) -> list[dict]:
    """Per-run counts of one replay (its summary holds them)."""
    return replay(records, mode, predictor=predictor)["runs"]


def main() -> int:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    figures: dict = {"sets": {}}
    with tempfile.TemporaryDirectory(prefix="reflect-bench-") as tmp:
        for name, folder in SETS.items():
            source = data / folder
            if not source.is_dir():
                print(f"no data at {source}; pass the shared data directory as the argument")
                return 1
            trace = Path(tmp) / f"{name}.jsonl"
            write_trace(trace, convert(name, [source]))
            figures["sets"][name] = tune(name, read_trace(trace))
    emit(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
