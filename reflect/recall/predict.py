"""Across runs: the causes this run is likely to fail with, from earlier runs in scope.

One estimate per cause, the probability that this run fails with it:

    p(c) = (sum_n w_n y_nc + sum_f v y'_fc + prior * base(c)) / (sum_n w_n + sum_f v + prior)

- ``n`` ranges over the ``k`` earlier runs whose goals are most like this one, ``w_n``
  their similarity (the goal vectors' cosine; before a vector exists, as in the CLI
  before the worker has embedded, the FTS5 match of the goal's rarest words, scaled
  so the best match weighs 1), ``y_nc`` whether run n failed with c;
- ``f`` ranges over earlier runs that failed with a cause this run has already hit,
  each of weight ``follow``, and ``y'_fc`` says whether c came after it there: what
  this run has done so far moves the estimate;
- the base rate, the share of earlier runs that failed with c (itself shrunk by
  ``prior`` runs that did not), is a Beta prior worth ``prior`` runs: one neighbour
  out of two does not outrank 60 runs of 400.

A cause seen in fewer than ``min_runs`` earlier runs is not predicted.

A cause this run already has is left out (the recent section shows it). A lesson
enters when its cause's p passes ``threshold``, at most ``max_items``, most probable
first. The rule is one value, ``Predictor``, that benches pass in and tune.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

STOPWORDS = frozenset(
    "the and for that this with from are was were been have has had not but you your can"
    " will would should could into when then than there their them they what which who how"
    " all any each some such only also more most other use used using does did doing done"
    " its our out off one two get got may might must just like make made very here where"
    " about after before while because issue error fails failed failing test tests code"
    " file line run running should expected actual".split()
)
_WORD = re.compile(r"[a-z][a-z0-9]{2,}")  # as FTS5 unicode61 splits: "auth_user" is two
MAX_TERMS = 12  # a goal is an issue text of hundreds of words: keep its rarest terms
CANDIDATE_CAUSES = 20  # the most widespread causes always get an estimate


@dataclass(frozen=True)
class Predictor:
    """Tuned by bench/predictor.py on mini-swe-agent and DebugBench (see the README)."""

    k: int = 10  # similar earlier runs
    prior: float = 10.0  # the base rate's weight, in runs
    follow: float = 0.5  # weight of an earlier run that shared a cause with this one
    threshold: float = 0.06  # p a cause needs for its lesson to enter
    min_runs: int = 1  # earlier runs a cause must have failed in
    max_items: int = 6


@dataclass
class Estimate:
    cause: str
    p: float
    similar: int = 0  # neighbours that failed with it
    neighbours: int = 0
    share: float = 0.0  # the similarity-weighted share of neighbours that failed with it
    runs: int = 0  # earlier runs that failed with it
    earlier: int = 0  # earlier runs in scope
    followed: int = 0  # runs where it came after a cause this run hit
    sharing: int = 0  # runs that shared a cause with this one

    def why(self) -> str:
        """A few words on why the lesson is shown."""
        if self.similar and self.share >= self.runs / max(self.earlier, 1):
            return f"in {self.similar} of {self.neighbours} similar runs"
        if self.followed:
            return f"came next in {self.followed} of {self.sharing} runs"
        return f"in {self.runs} of {self.earlier} earlier runs"


@dataclass
class Neighbourhood:
    """The earlier runs this run is compared with, and the weights they get."""

    similar: list[tuple[str, float]] = field(default_factory=list)  # (run, w)
    following: dict[str, set[str]] = field(default_factory=dict)  # run -> causes after


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def similar_by_words(store, goal: str, run: str, scope: str, k: int
                     ) -> list[tuple[str, float]]:
    """The ``k`` runs whose goals share the most of this goal's rarest words (FTS5),
    each weighed by its match relative to the best one."""
    unique = list(dict.fromkeys(words(goal)))[:400]
    df = store.goal_term_runs(unique)
    present = [w for w in unique if df.get(w, 0) > 0]
    terms = sorted(present, key=lambda w: (df[w], unique.index(w)))[:MAX_TERMS]
    hits = store.runs_by_words(terms, run, scope, k)
    best = max((score for _, score in hits), default=0.0)
    return [(r, score / best) for r, score in hits if best > 0 and score > 0]


def estimate(store, predictor: Predictor, near: Neighbourhood, run: str, earlier: int,
             exclude: set[str]) -> list[Estimate]:
    """The causes whose probability passes the threshold, most probable first;
    ``earlier``: the runs in scope other than ``run``."""
    incidence = store.run_causes([r for r, _ in near.similar])
    candidates = set(store.widespread_causes(CANDIDATE_CAUSES))
    for causes in (*incidence.values(), *near.following.values()):
        candidates |= causes
    candidates -= exclude
    if not candidates:
        return []
    base_runs = store.cause_runs(sorted(candidates))
    near_weight = sum(w for _, w in near.similar)
    weight = near_weight + predictor.follow * len(near.following)
    mass: defaultdict[str, float] = defaultdict(float)  # weighted neighbours that hit it
    hits: Counter[str] = Counter()  # and how many they are
    for r, w in near.similar:
        for c in incidence[r]:
            mass[c] += w
            hits[c] += 1
    came_after = Counter(c for after in near.following.values() for c in after)
    found = []
    for c in candidates:
        runs = min(base_runs.get(c, 0), earlier)
        if runs < predictor.min_runs:
            continue
        base = runs / (earlier + predictor.prior)  # few runs say little: shrunk toward 0
        followed = came_after[c]
        p = ((mass[c] + predictor.follow * followed + predictor.prior * base)
             / (weight + predictor.prior))
        if p >= predictor.threshold:
            found.append(Estimate(
                c, round(p, 4), similar=hits[c], neighbours=len(near.similar),
                share=mass[c] / near_weight if near_weight else 0.0,
                runs=runs, earlier=earlier, followed=followed,
                sharing=len(near.following)))
    found.sort(key=lambda e: (e.p, e.runs), reverse=True)
    return found
