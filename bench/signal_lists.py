"""A signal's list of keys read beside the popular list of as many items, before every
step of a replay: what `bench/action_signal.py` and `bench/kin_signal.py` share.

From the rows of the product's own replay (each failure's signature and group, in task
order), before every step two lists of n keys (n = 1, 2, 3) are read:

- `popular`: the keys the most earlier runs failed with (the latest 50 runs, else every
  earlier run: the best popularity list of the house rules' readings);
- the signal's: the keys it ranks first (a `Signal`), the rest of the list from
  `popular`.

Both leave out the keys the run already hit. A cross-run repeat is covered when its key
is in the list before its step; a list's precision is, of the distinct keys it showed in
a run, the share the run then failed with (at or after the step first shown), as the
house rules' readings count it. Figures are printed for every fold of repositories
(`fold_groups`), both keys. A list that covers more only by showing more distinct keys a
run is no better foresight: a signal earns a place where it covers more at a precision
at least the popular list's.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from reflect.eval._matched import KEYS, fold_groups
from reflect.eval._matched import _group as project
from reflect.eval._replay import ITERATIONS_FILE, replay

LENGTHS = (1, 2, 3)
RECENT = 50  # runs in the recent pool, as reflect.eval._matched's WINDOW


class Signal(Protocol):
    """What a signal knows: told of every run's start and end and of each failure, it
    ranks keys before each step."""

    def started(self, run: str) -> None: ...
    def ranked(self, index: int) -> list[str]: ...
    def failed(self, index: int, value: str) -> None: ...
    def ended(self, run: str) -> None: ...


def rows_of(records: list[Any], store: Path | None = None) -> list[dict[str, Any]]:
    """The replay's rows (mode `off`: a row's keys do not depend on what was shown);
    ``store``: keep the store there."""
    with tempfile.TemporaryDirectory() as out:
        replay(records, "off", out=out, store=store, embeddings="off")
        lines = (Path(out) / ITERATIONS_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines]


def by_run(rows: list[dict[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        out[row["run"]].append(index)
    return out


def tallies(rows: list[dict[str, Any]], key: str, signal: Signal
            ) -> dict[str, dict[str, Counter[int]]]:
    """Per run, for each list at each length: the repeats it covered, and of the distinct
    keys it showed in the run (it is shown before every step), those then borne out (failed
    at or after the step it was first shown at); and the repeats."""
    history: list[set[str]] = []  # each earlier run: the keys it failed with
    out: dict[str, dict[str, Counter[int]]] = {}
    for run, indexes in by_run(rows).items():
        everyone, recent = counted(history), counted(history[-RECENT:])
        signal.started(run)
        hit: set[str] = set()
        counts: dict[str, Counter[int]] = defaultdict(Counter)
        shown: dict[tuple[str, int], set[str]] = defaultdict(set)
        for index, later in zip(indexes, ahead(rows, indexes, key), strict=True):
            value = rows[index].get(key)
            lists = shown_lists(hit, recent or everyone, signal.ranked(index))
            for (name, n), listed in lists.items():
                for k in set(listed) - shown[name, n]:
                    counts[name + " shown"][n] += 1
                    counts[name + " borne"][n] += k in later
                shown[name, n] |= set(listed)
            if rows[index]["success"] or value is None:
                continue
            if value not in hit and everyone[value] > 0:
                for (name, n), listed in lists.items():
                    counts[name][n] += value in listed
                counts["repeats"] += Counter(LENGTHS)
            hit.add(value)
            signal.failed(index, value)
        history.append(hit)
        signal.ended(run)
        out[run] = counts
    return out


def ahead(rows: list[dict[str, Any]], indexes: list[int], key: str) -> list[set[str]]:
    """For each of a run's steps, the keys it fails with at that step or later."""
    out: list[set[str]] = []
    later: set[str] = set()
    for index in reversed(indexes):
        if not rows[index]["success"] and (value := rows[index].get(key)) is not None:
            later = later | {value}
        out.append(later)
    return out[::-1]


def counted(runs: list[set[str]]) -> Counter[str]:
    """How many of the runs failed with each key."""
    overall: Counter[str] = Counter()
    for keys in runs:  # sorted: ties rank the same in every run of the bench
        overall.update(sorted(keys))
    return overall


def shown_lists(own: set[str], popular_runs: Counter[str], ranked: list[str]
                ) -> dict[tuple[str, int], list[str]]:
    """Both lists at each length before a step, neither with a key the run already hit."""
    popular = [k for k, _ in popular_runs.most_common() if k not in own]
    mine = [k for k in ranked if k not in own]
    return {(name, n): listed[:n] for n in LENGTHS for name, listed in (
        ("popular", popular), ("signal", list(dict.fromkeys(mine[:n] + popular))))}


def precision(total: dict[str, Counter[int]], name: str, n: int) -> float:
    return total[name + " borne"][n] / max(total[name + " shown"][n], 1)


def report(name: str, rows: list[dict[str, Any]], signal: Callable[[], Signal],
           label: str) -> dict[str, Any]:
    """Every fold's (and the pooled) figures of a fresh ``signal()``'s list, printed as
    ``label``: by length, (its covered, popular's covered, repeats, its precision,
    popular's precision)."""
    runs = by_run(rows)
    groups = fold_groups(rows, runs, 4)
    figures: dict[str, Any] = {}
    for key in KEYS:
        per_run = tallies(rows, key, signal())
        for f, names in enumerate([None, *groups]):
            members = [run for run in runs
                       if names is None or project(rows[runs[run][0]], run) in names]
            total = {what: sum((per_run[r][what] for r in members), Counter())
                     for what in ("popular", "signal", "repeats", "popular shown",
                                  "popular borne", "signal shown", "signal borne")}
            where = "pooled" if names is None else f"fold {f}"
            figures[f"{key} {where}"] = by_n = {n: (
                total["signal"][n], total["popular"][n], total["repeats"][n],
                precision(total, "signal", n), precision(total, "popular", n)) for n in LENGTHS}
            print(f"{name:20} {key:9} {where:7} " + "  ".join(
                f"n={n}: {label} {a} ({pa:.1%}) popular {p} ({pp:.1%}) of {r}"
                for n, (a, p, r, pa, pp) in by_n.items()))
    return figures


def verdicts(sets: dict[str, dict[str, Any]], label: str) -> dict[str, int]:
    """Of the cells of folds, keys and lengths: how many, in how many the signal's list
    covers more, and in how many as many or more at a precision at least popular's."""
    cells = [(a, p, pa, pp) for figures in sets.values() for where, by_n in figures.items()
             if "fold" in where for a, p, _, pa, pp in by_n.values()]
    more = sum(a > p for a, p, *_ in cells)
    held = sum(a >= p and pa >= pp for a, p, pa, pp in cells)
    print(f"of {len(cells)} cells of folds, keys and lengths, {label} covers more in"
          f" {more}; as many or more at a precision at least the popular list's in {held}")
    return {"cells": len(cells), "covers_more": more, "held": held}
