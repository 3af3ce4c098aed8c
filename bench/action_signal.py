"""Is the command about to run a signal for the house rules? Its lists read beside the
popular list of as many items.

Run: .venv/bin/python bench/action_signal.py [DATA_DIR]   (about 2 minutes a set)

A client that tells reflect the command about to run (Claude Code's and Codex's
PreToolUse, `recall(action=...)`) could be shown what earlier runs' commands of that
kind failed with. This bench replays each set through the product's own `replay` (mode
`on`, no embeddings) for its rows (each failure's signature and group, in task order)
and, before every step, reads two lists of n keys (n = 1, 2, 3):

- `popular`: the keys the most earlier runs failed with (the latest 50 runs, else every
  earlier run: the best popularity list of the house rules' readings);
- `action`: the keys the most of those runs failed with in a command of the same kind as
  the one about to run (`reflect.capture.commands.kind`: its program, `python -m X` as
  X, a script by its name), the rest of the list from `popular`.

Both leave out the keys the run already hit. A cross-run repeat is covered when its key
is in the list before its step; a list's precision is, of the distinct keys it showed in
a run, the share the run then failed with (at or after the step first shown), as the
house rules' readings count it. Figures are printed for every fold of repositories
(`fold_groups`), both keys. A list that covers more only by showing more distinct keys a
run is no better foresight: the signal earns a place where it covers more at a
precision at least the popular list's.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from figures import DATA, emit

from reflect.capture.commands import kind
from reflect.eval._convert import convert
from reflect.eval._matched import KEYS, fold_groups
from reflect.eval._matched import _group as project
from reflect.eval._replay import ITERATIONS_FILE, replay

SETS = {"mini-swe-agent-dev": "mini-swe-agent", "debugbench": "debugbench"}
LENGTHS = (1, 2, 3)
RECENT = 50  # runs in the recent pool, as reflect.eval._matched's WINDOW


def rows_of(records: list[Any]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as out:
        replay(records, "on", out=out, embeddings="off")
        lines = (Path(out) / ITERATIONS_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines]


def tallies(rows: list[dict[str, Any]], records: list[Any], key: str
            ) -> dict[str, dict[str, Counter[int]]]:
    """Per run, for each list at each length: the repeats it covered, and of the distinct
    keys it showed in the run (it is shown before every step), those then borne out (failed
    at or after the step it was first shown at); and the repeats."""
    by_run: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_run[row["run"]].append(index)
    history: list[dict[str, set[str]]] = []  # each earlier run: kind -> keys it failed with
    out: dict[str, dict[str, Counter[int]]] = {}
    for run, indexes in by_run.items():
        (everyone, kinds), (recent, recent_kinds) = counted(history), counted(history[-RECENT:])
        own: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, Counter[int]] = defaultdict(Counter)
        shown: dict[tuple[str, int], set[str]] = defaultdict(set)
        for index, later in zip(indexes, ahead(rows, indexes, key), strict=True):
            value, action = rows[index].get(key), kind(records[index].action or "")
            hit = set().union(*own.values())
            lists = shown_lists(hit, recent or everyone, recent_kinds[action] or kinds[action])
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
            own[action].add(value)
        history.append(own)
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


def counted(runs: list[dict[str, set[str]]]) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """How many of the runs failed with each key, overall and in each kind of command."""
    overall: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:  # sorted: ties rank the same in every run of the bench
        overall.update(sorted(set().union(*run.values())))
        for action, keys in run.items():
            by_kind[action].update(sorted(keys))
    return overall, by_kind


def shown_lists(own: set[str], popular_runs: Counter[str], kind_runs: Counter[str]
                ) -> dict[tuple[str, int], list[str]]:
    """Both lists at each length before a step, neither with a key the run already hit."""
    popular = [k for k, _ in popular_runs.most_common() if k not in own]
    by_kind = [k for k, _ in kind_runs.most_common() if k not in own]
    return {(name, n): listed[:n] for n in LENGTHS for name, listed in (
        ("popular", popular), ("action", list(dict.fromkeys(by_kind[:n] + popular))))}


def precision(total: dict[str, Counter[int]], name: str, n: int) -> float:
    return total[name + " borne"][n] / max(total[name + " shown"][n], 1)


def report(name: str, rows: list[dict[str, Any]], records: list[Any]) -> dict[str, Any]:
    by_run: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_run[row["run"]].append(index)
    groups = fold_groups(rows, by_run, 4)
    figures: dict[str, Any] = {}
    for key in KEYS:
        per_run = tallies(rows, records, key)
        for f, names in enumerate([None, *groups]):
            members = [run for run in by_run
                       if names is None or project(rows[by_run[run][0]], run) in names]
            total = {what: sum((per_run[r][what] for r in members), Counter())
                     for what in ("popular", "action", "repeats", "popular shown",
                                  "popular borne", "action shown", "action borne")}
            label = "pooled" if names is None else f"fold {f}"
            figures[f"{key} {label}"] = by_n = {n: (
                total["action"][n], total["popular"][n], total["repeats"][n],
                precision(total, "action", n), precision(total, "popular", n)) for n in LENGTHS}
            print(f"{name:20} {key:9} {label:7} " + "  ".join(
                f"n={n}: action {a} ({pa:.1%}) popular {p} ({pp:.1%}) of {r}"
                for n, (a, p, r, pa, pp) in by_n.items()))
    return figures


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    sets = {}
    for name, source in SETS.items():
        records = convert(source, [data / name])
        sets[name] = report(name, rows_of(records), records)
    cells = [(a, p, pa, pp) for figures in sets.values() for label, by_n in figures.items()
             if "fold" in label for a, p, _, pa, pp in by_n.values()]
    more = sum(a > p for a, p, *_ in cells)
    held = sum(a >= p and pa >= pp for a, p, pa, pp in cells)
    print(f"of {len(cells)} cells of folds, keys and lengths, the command's kind covers more in"
          f" {more}; as many or more at a precision at least the popular list's in {held}")
    emit({"sets": sets, "cells": len(cells), "covers_more": more, "held": held})


if __name__ == "__main__":
    main()
