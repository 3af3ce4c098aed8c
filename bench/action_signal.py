"""Is the command about to run a signal for the house rules? Its lists read beside the
popular list of as many items (`bench/signal_lists.py`).

Run: .venv/bin/python bench/action_signal.py [DATA_DIR]   (seconds)

A client that tells reflect the command about to run (Claude Code's and Codex's
PreToolUse, `recall(action=...)`) could be shown what earlier runs' commands of that
kind failed with. Before every step of the product's own replay, the `action` list holds
the keys the most earlier runs (the latest 50, else every earlier run) failed with in a
command of the same kind as the one about to run (`reflect.capture.commands.kind`: its
program, `python -m X` as X, a script by its name), the rest of the list from `popular`.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from figures import DATA, emit
from signal_lists import RECENT, report, rows_of, verdicts

from reflect.capture.commands import kind
from reflect.eval._convert import convert

SETS = {"mini-swe-agent-dev": "mini-swe-agent", "debugbench": "debugbench"}


class ActionSignal:
    """The keys the most earlier runs failed with in a command of the kind about to run."""

    def __init__(self, records: list[Any]):
        self.records = records
        self.history: list[dict[str, set[str]]] = []  # each earlier run: kind -> its keys
        self.own: dict[str, set[str]] = defaultdict(set)
        self.everyone: dict[str, Counter[str]] = {}
        self.recent: dict[str, Counter[str]] = {}

    def started(self, run: str) -> None:
        self.everyone, self.recent = by_kind(self.history), by_kind(self.history[-RECENT:])
        self.own = defaultdict(set)

    def ranked(self, index: int) -> list[str]:
        action = kind(self.records[index].action or "")
        runs = self.recent.get(action) or self.everyone.get(action) or Counter()
        return [k for k, _ in runs.most_common()]

    def failed(self, index: int, value: str) -> None:
        self.own[kind(self.records[index].action or "")].add(value)

    def ended(self, run: str) -> None:
        self.history.append(self.own)


def by_kind(runs: list[dict[str, set[str]]]) -> dict[str, Counter[str]]:
    """How many of the runs failed with each key in each kind of command."""
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:  # sorted: ties rank the same in every run of the bench
        for action, keys in run.items():
            out[action].update(sorted(keys))
    return out


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    sets = {}
    for name, source in SETS.items():
        records = convert(source, [data / name])
        sets[name] = report(name, rows_of(records), partial(ActionSignal, records), "action")
    emit({"sets": sets, **verdicts(sets, "the command's kind")})


if __name__ == "__main__":
    main()
