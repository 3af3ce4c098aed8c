"""The holdout on a population of scripted agents, over many seeds: how often it reaches
the right verdicts, how often its intervals hold the truth, and what it costs in repeats.

Run: .venv/bin/python bench/holdout.py [--runs 800] [--seeds 20] [--p 0.5]
     [--min-runs 45] [--z 2.5] [--min-effect 0.15] [--store-url URL]
(about 4 s a seed on SQLite)

The population is tests/test_holdout.py's (``reflect.eval._scripted``): showing lesson A
cuts its mistake from 0.3 to 0.1 of runs, lesson B changes nothing (0.3 either way). Each
seed is a fresh store, its own runs' names (so its own arms) and its own agents' draws.
Per seed: A's and B's verdicts, whether each arm's Wilson interval and the effect's
interval hold the true value, and A's extra repeats (withheld hits minus what those runs
would have made with the lesson) beside p x effect x A's judged runs.
"""

from __future__ import annotations

import argparse
import tempfile

from figures import emit

from reflect import Memory, Settings
from reflect.api.memory import port
from reflect.eval._scripted import Mistake, run_population
from reflect.recall.holdout import Holdout, wilson

NO_YAML = "ModuleNotFoundError: No module named 'yaml'"
NO_PYTEST = "bash: pytest: command not found"
A = Mistake("python -c 'import yaml'", 1, NO_YAML, rate=0.3, shown_rate=0.1)
B = Mistake("pytest", 127, NO_PYTEST, rate=0.3, shown_rate=0.3)


def one(seed: int, runs: int, rule: Holdout, store_url: str | None) -> dict:
    with tempfile.TemporaryDirectory() as home, \
            Memory(home=home, store_url=store_url, embeddings="off",
                   settings=Settings(holdout=rule)) as mem:
        run_population(mem, [A, B], runs, seed=seed)
        by_action = {f.fingerprint: f.action for f in mem.failures(limit=10 * runs)}
        found = {}
        for e in mem.effects():
            lesson = port(mem).store.lesson(e.lesson_id)
            assert lesson is not None  # an effect is of a stored lesson
            fingerprint = lesson["fingerprint"]
            m = A if by_action.get(fingerprint) == A.action else B
            lo, hi = e.interval(rule.z)
            covered = (wilson(e.shown_hits, e.shown, rule.z)[0] <= m.shown_rate
                       <= wilson(e.shown_hits, e.shown, rule.z)[1]
                       and wilson(e.withheld_hits, e.withheld, rule.z)[0] <= m.rate
                       <= wilson(e.withheld_hits, e.withheld, rule.z)[1]
                       and lo <= m.rate - m.shown_rate <= hi)
            found["A" if m is A else "B"] = {
                "effect": e, "covered": covered,
                "extra": e.withheld_hits - m.shown_rate * e.withheld,
                "expected": rule.p * (m.rate - m.shown_rate) * (e.shown + e.withheld)}
        return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=800, help="runs a seed (default 800)")
    parser.add_argument("--seeds", type=int, default=20, help="seeds (default 20)")
    parser.add_argument("--p", type=float, default=0.5, help="the holdout (default 0.5)")
    parser.add_argument("--min-runs", type=int, default=45, help="first look (default 45)")
    parser.add_argument("--z", type=float, default=2.5, help="interval width (default 2.5)")
    parser.add_argument("--min-effect", type=float, default=0.15,
                        help="demoted below this cut (default 0.15)")
    parser.add_argument("--store-url", default=None,
                        help="a PostgreSQL URL (default: a SQLite store per seed)")
    args = parser.parse_args()
    rule = Holdout(p=args.p, min_runs=args.min_runs, z=args.z, min_effect=args.min_effect)
    right = covered = 0
    extra = expected = 0.0
    print(f"{args.runs} runs a seed, {rule}")
    print(f"{'seed':>4}  {'A':<48} {'B':<48}")
    for seed in range(args.seeds):
        found = one(seed, args.runs, rule, args.store_url)
        cells = []
        for k in "AB":
            if k not in found:
                cells.append("never eligible")
                continue
            e = found[k]["effect"]
            held = "ok" if found[k]["covered"] else "MISS"
            cells.append(f"{e.verdict or '-':<8} shown {e.shown_hits}/{e.shown} withheld "
                         f"{e.withheld_hits}/{e.withheld} {held}")
        print(f"{seed:>4}  {cells[0]:<48} {cells[1]:<48}")
        right += ("A" in found and found["A"]["effect"].verdict == "promoted"
                  and "B" in found and found["B"]["effect"].verdict == "demoted")
        covered += sum(f["covered"] for f in found.values())
        if "A" in found:
            extra += found["A"]["extra"]
            expected += found["A"]["expected"]
    summary = [f"A promoted and B demoted: {right}/{args.seeds} seeds; truth within the "
               f"intervals: {covered}/{2 * args.seeds} lessons",
               f"A's extra repeats, all seeds: {extra:.1f} (p x effect x judged runs: "
               f"{expected:.1f}); an all-shown fleet of {args.seeds * args.runs} runs would "
               f"make {A.shown_rate * args.seeds * args.runs:.0f}"]
    print("\n".join(summary))
    emit({"summary": summary, "right": right, "seeds": args.seeds, "covered": covered,
          "extra": extra, "expected": expected})


if __name__ == "__main__":
    main()
