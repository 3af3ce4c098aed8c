"""Tune the predictor of lessons from earlier runs by a proper score, in time order, and
read each point's blocks beside the popularity baselines shown with as many items.

Run: .venv/bin/python bench/predictor.py [DATA_DIR] [--embeddings NAME] [--small]
(about a minute a grid point and data set with the default `hash` embeddings; with
`--embeddings bundled --small`, the product's model on the neighbours with and without)

For mini-swe-agent-dev and DebugBench from the shared data, every grid point of
`Predictor` replays the trace in task order through the product's own `replay` (mode
`on`; the value is passed in, nothing is patched). Before a run's first iteration, and
again after each of its failures, the point's estimate of every family the store knows
(`recall.block.predicted`, with every family a candidate) is scored
against whether the run then fails with it: log loss and Brier score, each run predicted
only from the runs before it. The prior is the same rule with no signal: a `Predictor`
whose base rate is that of all earlier runs (no window), with no neighbours and nothing
followed. The runs are split in two halves in time order: the point with the lowest log
loss on the first half, the prior among the candidates, is chosen and reported on the
second. Each point's blocks are also graded by `reflect.eval._matched`:
cross-run coverage and precision by signature and by group, beside the popularity lists
(global, the run's project first, the last 50 runs) shown with as many lesson items,
block by block.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from figures import DATA, emit, no_data

from reflect import Memory
from reflect.api.memory import port
from reflect.eval._convert import convert
from reflect.eval._replay import replay
from reflect.eval._trace import TraceRecord
from reflect.recall.block import predicted
from reflect.recall.predict import Predictor

GRID = {"k": (0, 10), "follow": (0.0, 0.5), "window": (25, 100)}
# With the bundled model each point costs minutes: the neighbours with and without.
SMALL_GRID = {"k": (0, 10), "follow": (0.5,), "window": (25,)}
PRIOR = Predictor(window=10**9, k=0, follow=0.0)  # the base rate of all earlier runs alone
SETS = {"mini-swe-agent-dev": "mini-swe-agent", "debugbench": "debugbench"}
EVERY = 10**9  # candidates: every family the store knows gets an estimate
P_FLOOR = 1e-4


class Scorer:
    """The estimates made before a run's first iteration and after each of its failures,
    kept until the run's failures are known: (run, iteration, {family: p})."""

    def __init__(self, predictor: Predictor):
        # Every family the store knows, whatever may be shown: one set of events for all.
        self.predictor = replace(predictor, candidates=EVERY, min_runs=1)
        self.made: list[tuple[str, int, dict[str, float]]] = []
        self.failures: dict[str, int] = {}  # each run's failures so far
        self.scored: dict[str, int] = {}  # each run's failures when last scored

    def observe(self, mem: Memory, r: TraceRecord) -> None:
        """Score before ``r`` when the run is new or failed since; then count ``r``."""
        failures = self.failures.get(r.run, 0)
        if self.scored.get(r.run) != failures:
            self.scored[r.run] = failures
            q = replace(port(mem).query(r.run, r.goal, r.phase, r.iteration), scope=mem.scope)
            store = port(mem).store
            rows = store.recent_causes(r.run, r.iteration, 200)
            estimates = predicted(store, port(mem).vectors, q, self.predictor,
                                  {row["family"] for row in rows},
                                  store.earlier_runs(q.run, q.scope))
            self.made.append((r.run, r.iteration, {e.family: e.p for e in estimates}))
        self.failures[r.run] = failures + (not r.success)


def score(made: list[tuple[str, int, dict[str, float]]], hits: dict[str, list[tuple[int, str]]],
          keep: set[str]) -> dict:
    """Log loss and Brier score over every (recall, family) estimate of the runs ``keep``:
    the outcome is whether the run failed with the family at or after that iteration."""
    loss = brier = 0.0
    n = events = 0
    for run, iteration, estimates in made:
        if run not in keep:
            continue
        later = {family for it, family in hits.get(run, ()) if it >= iteration}
        for family, p in estimates.items():
            y = family in later
            p = min(max(p, P_FLOOR), 1 - P_FLOOR)
            loss -= math.log(p if y else 1 - p)
            brier += (p - y) ** 2
            n += 1
            events += y
    return {"log_loss": loss / n if n else None, "brier": brier / n if n else None,
            "estimates": n, "events": events}


def point_run(records: list[TraceRecord], point: Predictor, embeddings: str | None,
              tmp: Path) -> tuple[dict, list, dict]:
    """One replay of ``point``: its summary, its scored estimates and each run's families
    by iteration (from the replay's store, kept for it)."""
    scorer = Scorer(point)
    store = Path(tempfile.mkdtemp(dir=tmp)) / "store"
    summary = replay(records, "on", store=store, embeddings=embeddings, predictor=point,
                     observe=scorer.observe)
    hits: dict[str, list[tuple[int | None, str]]] = {}
    with Memory(home=store, store_url="", embeddings="off") as mem:
        for row in port(mem).store.failures(None, 10**9):
            hits.setdefault(row["run"], []).append((row["iteration"], row["family"]))
    return summary, scorer.made, hits


def halves(records: list[TraceRecord]) -> tuple[set[str], set[str]]:
    order = list(dict.fromkeys(r.run for r in records))
    return set(order[: len(order) // 2]), set(order[len(order) // 2:])


def coverage_line(label: str, summary: dict) -> str:
    """Cross-run coverage by group and by signature beside the matched baselines."""
    cells = []
    for key, figures in summary["matched"]["keys"].items():
        mode = figures["mode"]
        best = max(figures["matched"].items(), key=lambda kv: kv[1]["coverage"] or 0)
        cells.append(f"{key} {mode['covered']}/{mode['repeats']} (precision "
                     f"{_pct(mode['precision'])}) vs popular/{best[0]} {best[1]['covered']} "
                     f"(precision {_pct(best[1]['precision'])})")
    items = summary["blocks"]["lesson_items"]["mean"]
    return f"  {label:<44} items/block {items:.2f}  " + "; ".join(cells)


def _g(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _or_inf(x: float | None) -> float:
    return math.inf if x is None else x


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def tune(name: str, records: list[TraceRecord], embeddings: str | None, tmp: Path,
         grid: dict) -> dict:
    first, second = halves(records)
    points = [replace(Predictor(), **dict(zip(grid, values, strict=True)))
              for values in itertools.product(*grid.values())]
    results = []
    for point in [PRIOR, Predictor(), *points]:
        summary, made, hits = point_run(records, point, embeddings, tmp)
        results.append((point, summary, score(made, hits, first), score(made, hits, second)))
        print(f"  {name}: {_brief(point)}: log loss {_g(results[-1][2]['log_loss'])} (first half)"
              f" {_g(results[-1][3]['log_loss'])} (second)", flush=True)
    prior, default = results[0], results[1]
    # a half with nothing to score (a tiny data set) chooses nothing over the prior
    chosen = min([prior, *results[2:]], key=lambda r: _or_inf(r[2]["log_loss"]))
    print(f"\n== {name}: {len(records)} iterations, {len(first) + len(second)} runs, "
          f"{len(points)} grid points, embeddings {embeddings or 'bundled'}")
    print(f" chosen on the first half: {_brief(chosen[0])}")
    figures: dict = {"iterations": len(records), "runs": len(first) + len(second),
                     "points": len(points), "embeddings": embeddings, "rows": []}
    for label, (point, summary, one, two) in (("prior (base rate alone)", prior),
                                              ("default Predictor()", default),
                                              ("chosen", chosen)):
        print(f"  {label:<26} log loss {_g(two['log_loss'])}  Brier {_g(two['brier'], 5)}"
              f"  (second half: {two['estimates']} estimates, {two['events']} events)")
        print(coverage_line(label + ", all runs", summary))
        figures["rows"].append({"label": label, "point": dataclasses.asdict(point),
                                "first": one, "second": two, "matched": summary["matched"],
                                "blocks": summary["blocks"]})
    return figures


def _brief(point: Predictor) -> str:
    fields = {f.name: getattr(point, f.name) for f in dataclasses.fields(point)}
    return ", ".join(f"{k}={v}" for k, v in fields.items()
                     if k in (*GRID, "prior", "recent_prior"))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", nargs="?", type=Path, default=DATA)
    parser.add_argument("--embeddings", default="hash",
                        help="hash (the default), off, a model name, or bundled")
    parser.add_argument("--small", action="store_true",
                        help="only the neighbours with and without (for the bundled model)")
    args = parser.parse_args()
    embeddings = None if args.embeddings == "bundled" else args.embeddings
    grid = SMALL_GRID if args.small else GRID
    figures: dict = {"sets": {}}
    with tempfile.TemporaryDirectory(prefix="reflect-bench-") as tmp:
        for name, kind in SETS.items():
            source = args.data / name
            if not source.is_dir():
                print(no_data(source), file=sys.stderr)
                return 1
            records = convert(kind, [source])
            figures["sets"][name] = tune(name, records, embeddings, Path(tmp), grid)
    emit(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
