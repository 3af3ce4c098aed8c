"""Is the action about to run a signal for the house rules? Measured before it is built.

Run: .venv/bin/python bench/action_signal.py [DATA_DIR]   (about 2 minutes a set)

A client that tells reflect the command about to run (Claude Code's and Codex's
PreToolUse) could be shown what earlier runs' commands of that kind failed with. Before
the product gets that signal, this bench asks whether it can pay: it replays each set
through the product's own `replay` (mode `on`, no embeddings) for its rows (each
failure's signature and group, in task order) and, for every cross-run repeat, compares
two lists of n keys (n = 1, 2, 3) shown in the block before the failing step:

- `popular`: the keys the most earlier runs failed with (the best popularity list of
  issue 27's table: the latest 50 runs, else every earlier run);
- `action`: the keys the most earlier runs (the latest 50, else every one) failed with in
  a command of the same kind as the one about to run (`kind`: its program, `python -m X`
  as X, a script by its name), the rest of the list from `popular`.

Both leave out the keys the run already hit. A repeat is covered when its key is in the
list. Figures are printed for every fold of repositories (`fold_groups`), both keys. The
signal would enter the product only if `action` covers more than `popular` at the same n
on every fold of both sets.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from figures import DATA, emit

from reflect.eval._convert import convert
from reflect.eval._matched import KEYS, fold_groups
from reflect.eval._matched import _group as project
from reflect.eval._replay import ITERATIONS_FILE, replay

SETS = {"mini-swe-agent-dev": "mini-swe-agent", "debugbench": "debugbench"}
LENGTHS = (1, 2, 3)
RECENT = 50  # runs in the recent pool, as reflect.eval._matched's WINDOW
_SKIPPED = {"cd", "export", "source", "set", "unset", "true", "echo", "timeout", "env"}


def kind(action: str) -> str:
    """The kind of a command: the program of its first part that does work (`cd x &&`
    and assignments aside), `python -m X` as X, `python script.py` as the script."""
    for part in re.split(r"&&|\|\||[;|&()]|\n", action):
        words = [w for w in part.split() if not re.match(r"^\w+=", w)]
        if not words or words[0] in _SKIPPED:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if re.fullmatch(r"python[\d.]*", program) and len(words) > 1:
            if words[1] == "-m" and len(words) > 2:
                return words[2]
            if words[1] == "-c":
                return "python -c"
            return words[1].rsplit("/", 1)[-1]
        return program
    return ""


def rows_of(records: list[Any]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as out:
        replay(records, "on", out=out, embeddings="off")
        lines = (Path(out) / ITERATIONS_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines]


def tallies(rows: list[dict[str, Any]], records: list[Any], key: str
            ) -> dict[str, dict[str, Counter[int]]]:
    """Per run: covered repeats of each list at each length, and the repeats."""
    by_run: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_run[row["run"]].append(index)
    history: list[dict[str, set[str]]] = []  # each earlier run: kind -> keys it failed with
    out: dict[str, dict[str, Counter[int]]] = {}
    for run, indexes in by_run.items():
        (everyone, kinds), (recent, recent_kinds) = counted(history), counted(history[-RECENT:])
        own: dict[str, set[str]] = defaultdict(set)
        counts: dict[str, Counter[int]] = {"popular": Counter(), "action": Counter(),
                                           "repeats": Counter()}
        for index in indexes:
            value, action = rows[index].get(key), kind(records[index].action or "")
            if rows[index]["success"] or value is None:
                continue
            hit = set().union(*own.values())
            if value not in hit and everyone[value] > 0:
                tally(counts, value, hit, recent or everyone,
                      recent_kinds[action] or kinds[action])
            own[action].add(value)
        history.append(own)
        out[run] = counts
    return out


def counted(runs: list[dict[str, set[str]]]) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """How many of the runs failed with each key, overall and in each kind of command."""
    overall: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:
        overall.update(set().union(*run.values()))
        for action, keys in run.items():
            by_kind[action].update(keys)
    return overall, by_kind


def tally(counts: dict[str, Counter[int]], value: str, own: set[str],
          popular_runs: Counter[str], kind_runs: Counter[str]) -> None:
    """One cross-run repeat against both lists at each length."""
    popular = [k for k, _ in popular_runs.most_common() if k not in own]
    by_kind = [k for k, _ in kind_runs.most_common() if k not in own]
    for n in LENGTHS:
        counts["repeats"][n] += 1
        counts["popular"][n] += value in popular[:n]
        counts["action"][n] += value in list(dict.fromkeys(by_kind[:n] + popular))[:n]


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
                     for what in ("popular", "action", "repeats")}
            label = "pooled" if names is None else f"fold {f}"
            line = "  ".join(f"n={n}: action {total['action'][n]} popular {total['popular'][n]}"
                             f" of {total['repeats'][n]}" for n in LENGTHS)
            print(f"{name:20} {key:9} {label:7} {line}")
            figures[f"{key} {label}"] = {n: (total["action"][n], total["popular"][n],
                                             total["repeats"][n]) for n in LENGTHS}
    return figures


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    sets = {}
    for name, source in SETS.items():
        records = convert(source, [data / name])
        sets[name] = report(name, rows_of(records), records)
    wins = all(a > p for figures in sets.values() for label, by_n in figures.items()
               if "fold" in label for a, p, _ in by_n.values())
    print(f"the action's kind beats the popular list on every fold, key and length: {wins}")
    emit({"sets": sets, "every_fold": wins})


if __name__ == "__main__":
    main()
