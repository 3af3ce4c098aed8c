"""Baselines read at the number of items a mode showed: popularity lists rebuilt from a
replay's own rows, after the fact, so a mode is never compared with a list of another
length (a list of 6 against one of 2 proves nothing).

For each block the mode injected with n lesson-section items, each baseline shows the n
keys that the most earlier runs failed with, leaving out the keys this run has already
failed with (the recent section shows those). A key is a failure's ``signature`` or its
``group`` (``signature.group``: quoted values and names masked). The pools:

- ``global``: every earlier run;
- ``scope``: the earlier runs of the same project (the trace's ``project``) first, then
  every earlier run, as a store scoped by project would rank them;
- ``recent``: the last ``window`` earlier runs.

Ties go to more failures, then the latest. A cross-run repeat by a key (its key failed in
an earlier run, not yet in this one) is covered when the key was in the list before it;
a baseline's precision is, of the distinct keys a run was shown, the share that then
failed in it (at or after the iteration first shown); the mode's is the same share of its
distinct lessons (one standing for several keys is borne out by any of them), as lesson
precision is.

``curve`` is each baseline at a fixed length (1 to ``longest`` items in every block), for
the coverage-vs-items chart; the mode's own point is its coverage at its mean items.

Two readings of what the agent had been shown before a failing step:

- ``block`` (the keys above): in the block just before it, as a harness that builds
  each prompt afresh has it;
- ``run``: anywhere earlier in the run, as an agent that keeps its history has it: the
  mode's distinct lessons shown so far; each baseline's list shown once at the run's
  start with as many items as the mode showed distinct lessons in that run (matched run
  by run).

``folds`` holds both readings for each fold of runs: each project (the trace's
``project``, else the run's name before its first ``/``, DebugBench's kind of bug) goes,
largest first, to the fold with the fewest runs, so that a default can be judged on
runs of repositories it was not tuned on (``bench/house_rules.py``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

KEYS = ("signature", "group")
POOLS = ("global", "scope", "recent")
WINDOW = 50  # runs in the recent pool
LONGEST = 8  # the curve's last length
FOLDS = 4


@dataclass
class _Pool:
    """The earlier runs' failures by key, and the tallies of one baseline."""

    runs: Counter[str] = field(default_factory=Counter)  # key -> earlier runs with it
    failures: Counter[str] = field(default_factory=Counter)
    last: dict[str, int] = field(default_factory=dict)  # key -> its latest row

    def ranked(self, exclude: set[str], first: Counter[str] | None = None) -> list[str]:
        """The keys by earlier runs (those counted in ``first`` before any other)."""
        ahead = first if first is not None else Counter()
        keys = [k for k in self.runs if k not in exclude]
        return sorted(keys, key=lambda k: (ahead[k], self.runs[k], self.failures[k],
                                           self.last[k]), reverse=True)


@dataclass
class _Tally:
    covered: int = 0
    repeats: int = 0
    items: int = 0
    shown: int = 0
    borne: int = 0

    def add(self, other: _Tally) -> None:
        for name in ("covered", "repeats", "items", "shown", "borne"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def summary(self) -> dict[str, Any]:
        return {"covered": self.covered, "repeats": self.repeats,
                "coverage": self.covered / self.repeats if self.repeats else None,
                "items": self.items, "shown": self.shown, "borne": self.borne,
                "precision": self.borne / self.shown if self.shown else None}


Tallies = dict[str, list[_Tally]]  # "mode", each pool, "run:mode", "run:" + each pool


def matched(rows: Sequence[dict[str, Any]], window: int = WINDOW, longest: int = LONGEST,
            folds: int = FOLDS) -> dict[str, Any]:
    """The mode's own cross-run coverage by each key beside each baseline at its length,
    in both readings, the fixed-length curves, and both readings fold by fold."""
    by_run: dict[str, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_run[row["run"]].append(index)
    out: dict[str, Any] = {"window": window, "lesson_items": _lesson_items(rows), "keys": {},
                           "run": {}, "folds": []}
    groups = fold_groups(rows, by_run, folds)
    per_key = {key: _for_key(rows, by_run, key, window, longest) for key in KEYS}
    for key, runs in per_key.items():
        whole = _sum(runs.values(), longest)
        out["keys"][key] = _block(whole, with_curve=True)
        out["run"][key] = {**_reading(whole, "run:"), "curve": {
            pool: [x.summary() for x in whole["run:" + pool][1:]] for pool in POOLS}}
    for names in groups:
        members = {run for run in by_run if _group(rows[by_run[run][0]], run) in names}
        fold: dict[str, Any] = {"groups": names, "runs": len(members), "keys": {}}
        for key, runs in per_key.items():
            part = _sum((t for run, t in runs.items() if run in members), longest)
            fold["keys"][key] = {"block": _reading(part, ""), "run": _reading(part, "run:")}
        out["folds"].append(fold)
    return out


def _group(row: dict[str, Any], run: str) -> str:
    return str(row.get("project") or run.split("/", 1)[0])


def fold_groups(rows: Sequence[dict[str, Any]], by_run: dict[str, list[int]],
                folds: int) -> list[list[str]]:
    """The projects of each fold: largest first, each to the fold with the fewest runs."""
    size: Counter[str] = Counter(_group(rows[indexes[0]], run) for run, indexes in by_run.items())
    out: list[list[str]] = [[] for _ in range(min(folds, len(size)))]
    load = [0] * len(out)
    for name, n in sorted(size.items(), key=lambda kv: (-kv[1], kv[0])):
        j = load.index(min(load))
        out[j].append(name)
        load[j] += n
    return out


def _sum(parts: Any, longest: int) -> Tallies:
    total: Tallies = _tallies(longest)
    for tallies in parts:
        for name, row in tallies.items():
            for mine, theirs in zip(total[name], row, strict=True):
                mine.add(theirs)
    return total


def _tallies(longest: int) -> Tallies:
    return {"mode": [_Tally()], "run:mode": [_Tally()],
            **{pool: [_Tally() for _ in range(longest + 1)] for pool in POOLS},
            **{"run:" + pool: [_Tally() for _ in range(longest + 1)] for pool in POOLS}}


def _reading(t: Tallies, prefix: str) -> dict[str, Any]:
    return {"mode": t[prefix + "mode"][0].summary(),
            "matched": {pool: t[prefix + pool][0].summary() for pool in POOLS}}


def _block(t: Tallies, with_curve: bool) -> dict[str, Any]:
    out = _reading(t, "")
    if with_curve:
        out["curve"] = {pool: [x.summary() for x in t[pool][1:]] for pool in POOLS}
    return out


def _lesson_items(rows: Sequence[dict[str, Any]]) -> int:
    return sum(item.get("section") != "recent" for row in rows for item in row.get("items", ()))


def _for_key(rows: Sequence[dict[str, Any]], by_run: dict[str, list[int]], key: str, window: int,
             longest: int) -> dict[str, Tallies]:
    """One key's tallies, run by run: the mode, the matched baselines and the curves."""
    everyone, per_project = _Pool(), defaultdict[str, _Pool](_Pool)
    finished: list[tuple[str, set[str]]] = []  # (run, keys) of each run, in order
    out: dict[str, Tallies] = {}
    for run, indexes in by_run.items():
        project = rows[indexes[0]].get("project") or ""
        pools = {"global": (everyone, None), "scope": (everyone, per_project[project].runs),
                 "recent": (_pool_of(rows, by_run, finished[-window:], key), None)}
        out[run] = _tallies(longest)
        own = _run(rows, indexes, key, pools, out[run])
        for k in own:
            everyone.runs[k] += 1
            per_project[project].runs[k] += 1
        for index in indexes:
            if not rows[index]["success"] and (value := rows[index].get(key)) is not None:
                everyone.failures[value] += 1
                everyone.last[value] = index
        finished.append((run, own))
    return out


def _run(rows: Sequence[dict[str, Any]], indexes: list[int], key: str,
         pools: dict[str, tuple[_Pool, Counter[str] | None]],
         tallies: Tallies) -> set[str]:
    """Tally one run's blocks: the mode's (slot 0) and each pool's, at the mode's length
    (slot 0) and at each fixed length (slot k); then the run reading: what the mode had
    shown so far, against each pool's list at the start as long as the mode's distinct
    lessons in the run. Returns the keys the run failed with."""
    own: set[str] = set()
    later = _later(rows, indexes, key)
    shown: dict[tuple[str, int], set[str]] = defaultdict(set)
    so_far: set[str] = set()  # the keys of every lesson the mode has shown in the run
    crosses: list[str] = []  # the run's cross-run repeats, for the lists at its start
    start = {pool: source.ranked(set(), first) for pool, (source, first) in pools.items()}
    mode, whole = tallies["mode"][0], tallies["run:mode"][0]
    for position, index in enumerate(indexes):
        row = rows[index]
        lessons = [item for item in row.get("items", ()) if item.get("section") != "recent"]
        value = row.get(key)
        cross = (not row["success"] and value is not None and value not in own
                 and pools["global"][0].runs[value] > 0)
        mode.items += len(lessons)
        for item in lessons:  # an item is borne out when any failure it stands for is
            so_far |= set(item.get(key + "s", ()))
            if item["id"] not in shown["mode", 0]:
                shown["mode", 0].add(item["id"])
                mode.shown += 1
                mode.borne += bool(set(item.get(key + "s", ())) & later[position])
        if cross:
            mode.repeats += 1
            mode.covered += any(value in i.get(key + "s", ()) for i in row.get("items", ()))
            whole.repeats += 1
            whole.covered += value in so_far or any(
                value in i.get(key + "s", ()) for i in row.get("items", ()))
            crosses.append(str(value))
        for pool, (source, first) in pools.items():
            ranked = source.ranked(own, first)
            for slot, tally in enumerate(tallies[pool]):
                chosen = set(ranked[:slot or len(lessons)])
                tally.items += len(chosen)
                _show(shown[pool, slot], chosen, later[position], tally)
                if cross:
                    tally.repeats += 1
                    tally.covered += value in chosen
        if not row["success"] and value is not None:
            own.add(value)
    whole.shown, whole.borne, whole.items = mode.shown, mode.borne, mode.shown
    _at_start(start, tallies, mode.shown, later[0] if later else set(), crosses)
    return own


def _at_start(start: dict[str, list[str]], tallies: Tallies, shown: int, failed: set[str],
              crosses: list[str]) -> None:
    """Each pool's list at a run's start, as long as the mode's distinct lessons in the
    run (slot 0) and at each fixed length: what of the run's cross-run repeats it held."""
    for pool, ranked in start.items():
        for slot, tally in enumerate(tallies["run:" + pool]):
            listed = set(ranked[:slot or shown])
            tally.items = tally.shown = len(listed)
            tally.borne = len(listed & failed)
            tally.repeats = len(crosses)
            tally.covered = sum(value in listed for value in crosses)


def _show(before: set[str], keys: set[str], later: set[str], tally: _Tally) -> None:
    """Count the keys a run is shown for the first time, and those then borne out."""
    for k in keys - before:
        tally.shown += 1
        tally.borne += k in later
    before |= keys


def _later(rows: Sequence[dict[str, Any]], indexes: list[int], key: str) -> list[set[str]]:
    """For each of a run's rows, the keys failing at it or later in the run."""
    out: list[set[str]] = []
    ahead: set[str] = set()
    for index in reversed(indexes):
        row = rows[index]
        if not row["success"] and (value := row.get(key)) is not None:
            ahead = ahead | {value}
        out.append(ahead)
    return out[::-1]


def _pool_of(rows: Sequence[dict[str, Any]], by_run: dict[str, list[int]],
             runs: list[tuple[str, set[str]]], key: str) -> _Pool:
    """The pool of the given earlier runs."""
    pool = _Pool()
    for run, keys in runs:
        for k in keys:
            pool.runs[k] += 1
        for index in by_run[run]:
            if not rows[index]["success"] and (value := rows[index].get(key)) is not None:
                pool.failures[value] += 1
                pool.last[value] = index
    return pool
