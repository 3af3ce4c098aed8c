"""Choose the house rules' defaults by cross-validation over repositories, and read every
fold in both readings against the popularity lists shown with as many items.

Run: .venv/bin/python bench/house_rules.py [DATA_DIR]   (about 2 minutes a grid point)

For mini-swe-agent-dev and DebugBench from the shared data, each point of a small grid of
`Predictor` values (the window of latest runs the base rate starts from; what followed a
family this run hit, off or on; the weight of what the latest runs' commands of the kind
about to run failed with, off or on; what a lesson that saves a failed step is worth, in
tokens, which decides how likely a rule must be to pay for its own) replays the trace in
task order through the product's own `replay` (mode `on`, no embeddings, each recall told
the step's command as a PreToolUse hook tells it; the value is passed in, nothing is
patched). The runs are split into folds of repositories
(`reflect.eval._matched.fold_groups`: SWE-bench's repository, DebugBench's kind of bug).
For each fold in turn the point that held the most readings on the other folds (coverage
and precision at least the best popularity list's, both keys, both readings), then with
the largest margin over that list, is chosen, and judged on the held-out fold: its
cross-run coverage and precision beside the best list's, by signature and by group, in
the block before the step and anywhere earlier in the run. A signal belongs in the
default only if the point with it holds more readings of both sets than the point
without it; the default is the point that held the most. Beside each point, each
popularity list is judged as the house rules are (against the best of the lists, at the
house rules' items): how many readings it held says what holding every fold asks.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from figures import DATA, emit

from reflect.eval._compare import best_list, holds_against, verdict
from reflect.eval._convert import convert
from reflect.eval._replay import replay
from reflect.recall.predict import Predictor

SETS = {"mini-swe-agent-dev": "mini-swe-agent", "debugbench": "debugbench"}
# The default first: on a tie the earlier point is chosen. Every point is told the command
# about to run (as a PreToolUse hook tells it); only a point with an action weight uses it.
GRID = [Predictor(), *(replace(Predictor(), window=w) for w in (25, 10)),
        replace(Predictor(), follow=0.5), replace(Predictor(), action=3.0),
        *(replace(Predictor(), step_tokens=s) for s in (600, 1200))]


def margin(fold: dict[str, Any]) -> int:
    """The mode's covered repeats over the best list's, both keys, both readings."""
    return sum(f["mode"]["covered"] - best_list(f)[1]["covered"] for f in readings(fold))


def readings(fold: dict[str, Any]) -> list[dict[str, Any]]:
    """The fold's readings: both keys, both readings."""
    return [figures for by_key in fold["keys"].values() for figures in by_key.values()]


def held(fold: dict[str, Any]) -> int:
    """How many of the fold's readings the mode held."""
    return sum(holds_against(f["mode"], best_list(f)[1]) for f in readings(fold))


def holds(fold: dict[str, Any]) -> bool:
    return held(fold) == len(readings(fold))


def lists_held(folds: list[dict[str, Any]]) -> dict[str, int]:
    """How many readings of the folds each popularity list held, judged as the mode is:
    against the best of the lists (itself among them), at the mode's items."""
    out: dict[str, int] = {}
    for figures in (f for fold in folds for f in readings(fold)):
        best = best_list(figures)[1]
        for pool, tally in figures["matched"].items():
            out[pool] = out.get(pool, 0) + holds_against(tally, best)
    return out


def label(point: Predictor) -> str:
    return (f"window {point.window}, follow {point.follow}, action {point.action},"
            f" step {point.step_tokens}")


def cross_validate(name: str, kind: str, data: Path) -> dict[str, Any]:
    records = convert(kind, [data / name])
    folds, readings_held, lists = {}, {}, {}
    for point in GRID:
        summary = replay(records, "on", embeddings="off", predictor=point, actions=True)
        at = label(point)
        folds[at] = summary["matched"]["folds"]
        readings_held[at] = sum(map(held, folds[at]))
        lists[at] = lists_held(folds[at])
        print(f"== {name}, {at}: every fold "
              f"{'held' if all(map(holds, folds[at])) else 'not held'};"
              f" readings held {readings_held[at]}; each list, judged as the house rules"
              f" are: " + ", ".join(f"{pool} {n}" for pool, n in lists[at].items()))
        for n, fold in enumerate(folds[at], 1):
            print(f"  fold {n} ({fold['runs']} runs: {', '.join(fold['groups'])})")
            for key, by_reading in fold["keys"].items():
                print(f"    by {key:<9} " + "; ".join(
                    f"{reading} {verdict(f)}" for reading, f in by_reading.items()))
    chosen = []
    n_folds = len(next(iter(folds.values())))
    print(f"== {name}: each fold judged with the point chosen on the others")
    for held_out in range(n_folds):
        others = {label(p): [f for i, f in enumerate(folds[label(p)]) if i != held_out]
                  for p in GRID}
        best = max(GRID, key=lambda p: (sum(map(held, others[label(p)])),
                                        sum(map(margin, others[label(p)]))))
        fold = folds[label(best)][held_out]
        chosen.append({"fold": held_out + 1, "point": label(best), "held": holds(fold),
                       "keys": fold["keys"]})
        print(f"  fold {held_out + 1}: chosen {label(best)}; "
              + "; ".join(f"{key} {reading} {verdict(f)}" for key, by_reading in
                          fold["keys"].items() for reading, f in by_reading.items()))
    return {"points": folds, "held": readings_held, "lists_held": lists, "chosen": chosen}


def main() -> int:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    figures: dict[str, Any] = {"sets": {}}
    for name, kind in SETS.items():
        if not (data / name).is_dir():
            print(f"no data at {data / name}; pass the shared data directory as the argument")
            return 1
        figures["sets"][name] = cross_validate(name, kind, data)
    emit(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
