"""Are the errors like the one just captured a signal for the house rules? The kin's
lists read beside the popular list of as many items (`bench/signal_lists.py`), and what
worked for the nearest kin beside what the run then did.

Run: .venv/bin/python bench/kin_signal.py [DATA_DIR]   (under a minute; loads the
bundled embedding model)

The kin of a run's latest failure are the failures of earlier runs of another cause
whose error lines (`reflect.store.error_query`: its error type and message, the text the
worker embeds) are nearest to its own by the bundled model's vectors, at a cosine of at
least a floor. Two uses are read:

- **What comes next.** Before every step after the run's first failure, the `kin` list
  holds the keys of the latest failure's kin, nearest first, the rest from `popular`:
  an agent that has just failed this way is likely to meet what runs that failed like
  it met. The cells of folds, keys and lengths say whether it earns a place.
- **What worked.** Of the run's failures it later fixed (the store's resolution, what
  made the failed command pass), the fix shown from the nearest kin that was fixed,
  leaving out a fix that names a detail the failure does not hold (a file, a module):
  how often one is shown, how often its commands are of a kind the run's own fix used
  (`reflect.capture.commands.kind`), and the mean word overlap (Jaccard) of the two.
  Beside it: the latest earlier fix of the same family (no vectors needed), and the
  latest earlier fix of any failure (what any fix shares with any other).
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from figures import DATA, emit
from reflect.index.embedders import SentenceTransformerEmbedder, load_embedder
from signal_lists import by_run, report, rows_of, verdicts

from reflect.base.records import FailureRow
from reflect.capture.commands import kind
from reflect.capture.details import foreign
from reflect.eval._convert import convert
from reflect.recall.predict import words
from reflect.store import error_query, open_store

SETS = {"mini-swe-agent-dev": "mini-swe-agent", "debugbench": "debugbench"}
FLOORS = (0.5, 0.7)  # the cosine of error lines a kin needs at least
_COMMAND = re.compile(r"`([^`]*)`")  # a resolution quotes the commands it ran


class Failures:
    """The replay's failures, by row: their store rows and unit vectors of error lines."""

    def __init__(self, rows: list[dict[str, Any]], store: Path, embed: Callable[[list[str]], Any]):
        ids = [row["failure_id"] for row in rows if row["failure_id"]]
        db = open_store(store)
        try:
            found = db.failures_by_id(ids)
        finally:
            db.close()
        # a benign exit is captured but kept as no failure
        self.of: dict[int, FailureRow] = {i: found[row["failure_id"]] for i, row in enumerate(rows)
                                       if row["failure_id"] in found}
        texts = list(dict.fromkeys(error_query(f) for f in self.of.values()))
        vectors = np.asarray(embed(texts), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        by_text = dict(zip(texts, vectors, strict=True))
        self.vector = {i: by_text[error_query(f)] for i, f in self.of.items()}


class KinSignal:
    """The keys of the failures of earlier runs nearest to this run's latest one."""

    def __init__(self, failures: Failures, floor: float):
        self.failures, self.floor = failures, floor
        self.earlier: list[tuple[np.ndarray, str, str]] = []  # vector, key, cause
        self.matrix = np.zeros((0, 1), dtype=np.float32)
        self.run: list[tuple[np.ndarray, str, str]] = []
        self.latest: int | None = None

    def started(self, run: str) -> None:
        self.run, self.latest = [], None
        if self.earlier:
            self.matrix = np.stack([v for v, _, _ in self.earlier])

    def ranked(self, index: int) -> list[str]:
        if self.latest is None or not self.earlier:
            return []
        cause = self.failures.of[self.latest]["cause"]
        cosines = self.matrix @ self.failures.vector[self.latest]
        order = np.argsort(-cosines, kind="stable")
        return list(dict.fromkeys(
            self.earlier[j][1] for j in order if cosines[j] >= self.floor
            and self.earlier[j][2] != cause))

    def failed(self, index: int, value: str) -> None:
        if index in self.failures.of:
            self.latest = index
            self.run.append((self.failures.vector[index], value,
                             self.failures.of[index]["cause"]))

    def ended(self, run: str) -> None:
        self.earlier.extend(self.run)


def fixes(rows: list[dict[str, Any]], failures: Failures, floor: float) -> dict[str, Any]:
    """What each way of choosing another run's fix shows for the failures later fixed."""
    runs = by_run(rows)
    order = [i for indexes in runs.values() for i in indexes if i in failures.of]
    tally: Counter[str] = Counter()
    overlap: dict[str, float] = dict.fromkeys(("kin", "family", "any"), 0.0)
    for n, i in enumerate(order):
        mine = failures.of[i]
        if not mine["resolution"]:
            continue
        tally["fixed"] += 1
        earlier = [j for j in order[:n] if failures.of[j]["run"] != mine["run"]
                   and failures.of[j]["resolution"]]
        cosine = {j: float(failures.vector[i] @ failures.vector[j]) for j in earlier}
        ways = {
            "kin": sorted((j for j in earlier if failures.of[j]["cause"] != mine["cause"]
                           and cosine[j] >= floor), key=lambda j: -cosine[j]),
            "family": [j for j in reversed(earlier)
                       if failures.of[j]["family"] == mine["family"]],
            "any": list(reversed(earlier)),
        }
        open_now: FailureRow = {**mine, "resolution": ""}  # at recall, the fix is still ahead
        for way, candidates in ways.items():
            shown = next((j for j in candidates
                          if not foreign(failures.of[j]["resolution"], [open_now])), None)
            if shown is None:
                continue
            theirs, own = failures.of[shown]["resolution"], mine["resolution"]
            tally[way] += 1
            tally[way + " kind"] += bool(kinds(theirs) & kinds(own))
            a, b = set(words(theirs)), set(words(own))
            overlap[way] += len(a & b) / max(len(a | b), 1)
    return {"fixed": tally["fixed"], **{way: {
        "shown": tally[way], "kind": tally[way + " kind"],
        "jaccard": overlap[way] / max(tally[way], 1)} for way in ("kin", "family", "any")}}


def kinds(resolution: str) -> set[str]:
    return {kind(command) for command in _COMMAND.findall(resolution)} - {""}


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DATA
    embedder = load_embedder(None, print)  # None: the bundled model
    if not isinstance(embedder, SentenceTransformerEmbedder):
        sys.exit("the bundled embedding model could not be loaded (see above): `make setup`"
                 " installs it")
    sets: dict[float, dict[str, Any]] = {floor: {} for floor in FLOORS}
    worked: dict[float, dict[str, Any]] = {floor: {} for floor in FLOORS}
    for name, source in SETS.items():
        records = convert(source, [data / name])
        with tempfile.TemporaryDirectory() as tmp:
            rows = rows_of(records, Path(tmp) / "store")
            failures = Failures(rows, Path(tmp) / "store", embedder.embed)
        for floor in FLOORS:
            print(f"== {name}, kin at a cosine of at least {floor}")
            sets[floor][name] = report(name, rows, partial(KinSignal, failures, floor),
                                       "kin")
            worked[floor][name] = w = fixes(rows, failures, floor)
            print(f"{name}: of {w['fixed']} failures later fixed, " + "; ".join(
                f"{way}'s fix shown for {w[way]['shown']}, of a kind the run used in "
                f"{w[way]['kind']}, word overlap {w[way]['jaccard']:.2f}"
                for way in ("kin", "family", "any")))
    figures = {str(floor): {"sets": sets[floor], "fixes": worked[floor], **verdicts(
        sets[floor], f"the kin's list (cosine >= {floor})")} for floor in FLOORS}
    emit(figures)


if __name__ == "__main__":
    main()
