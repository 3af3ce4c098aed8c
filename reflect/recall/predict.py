"""Across runs: the kinds of mistake this run is likely to make, from earlier runs in scope.

Evidence is counted by family (``fingerprint.family``: a cause with its subject masked,
so ten runs each missing another module are ten runs of one mistake), and one estimate
per family is made, the probability that this run fails with it:

    p(f) = (sum_n w_n y_nf + sum_g v y'_gf + prior * base(f)) / (sum_n w_n + sum_g v + prior)

- ``n`` ranges over the ``k`` earlier runs whose goals are most like this one, ``w_n``
  their similarity (the goal vectors' cosine, or before a vector exists, as in the CLI
  before the worker has embedded, the FTS5 match of the goal's rarest words; either
  scaled so the closest run weighs 1), ``y_nf`` whether run n failed with f;
- ``g`` ranges over earlier runs that failed with a family this run has already hit,
  each of weight ``follow``, and ``y'_gf`` says whether f came after it there: what
  this run has done so far moves the estimate;
- the base rate is the share of the latest ``window`` runs that failed with f, shrunk
  toward the share of all earlier runs (itself shrunk by ``prior`` runs that did not)
  with ``recent_prior`` runs (in a store of no more runs than that, the share of all):
  what a store's recent runs hit is what its next run is likely to hit (a project's
  runs come together). It is a Beta prior worth ``prior`` runs: one neighbour out of
  two does not outrank 60 runs of 400. The signals (neighbours, what followed) only
  move that mass; ``bench/predictor.py`` keeps one only where it lowers the log loss on
  runs not seen, which goal neighbours did not (``k`` is 0 by default).

A family seen in fewer than ``min_runs`` earlier runs is predicted only when a similar
run had it.

A family this run already has is left out (the recent section shows it). A lesson is
offered when its family's p passes ``threshold``, at most ``max_items``, in order of
expected value per token (p over its item's tokens), so the block's budget goes first
to what it buys most with (``recall.block``). The rule is one value, ``Predictor``,
that benches pass in and tune.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reflect.store.protocol import GoalSearch, RunStore

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


@dataclass(frozen=True)
class Predictor:
    """Scored by bench/predictor.py on mini-swe-agent-dev and DebugBench
    (docs/evaluation.md, "How the predictor was tuned")."""

    k: int = 0  # similar earlier runs (0: none; they did not improve the score, see docs)
    prior: float = 10.0  # the base rate's weight, in runs
    follow: float = 0.5  # weight of an earlier run that shared a family with this one
    threshold: float = 0.08  # p a family needs for its lesson to be offered
    min_runs: int = 1  # earlier runs a family needs, unless a similar run had it
    max_items: int = 6
    window: int = 25  # the latest runs whose rate the base rate starts from
    recent_prior: float = 10.0  # the weight, in runs, of all earlier runs' rate in it
    candidates: int = 20  # the most widespread families, which always get an estimate


@dataclass
class Estimate:
    family: str
    p: float
    similar: int = 0  # neighbours that failed with it
    neighbours: int = 0
    share: float = 0.0  # the similarity-weighted share of neighbours that failed with it
    runs: int = 0  # earlier runs that failed with it
    earlier: int = 0  # earlier runs in scope
    followed: int = 0  # runs where it came after a family this run hit
    sharing: int = 0  # runs that shared a family with this one

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
    following: dict[str, set[str]] = field(default_factory=dict)  # run -> families after
    latest: int = 0  # the latest runs (at most ``window``)
    latest_hits: dict[str, int] = field(default_factory=dict)  # family -> those that hit it


def words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def similar_by_words(store: GoalSearch, goal: str, run: str, scope: str, k: int
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


def estimate(store: RunStore, predictor: Predictor, near: Neighbourhood, run: str, earlier: int,
             exclude: set[str]) -> list[Estimate]:
    """Every candidate family's estimate, most probable first; ``earlier``: the runs in
    scope other than ``run``."""
    incidence = store.run_families([r for r, _ in near.similar])
    candidates = set(store.widespread_families(predictor.candidates))
    for families in (*incidence.values(), *near.following.values(), near.latest_hits):
        candidates |= set(families)
    candidates -= exclude
    if not candidates:
        return []
    base_runs = store.family_runs(sorted(candidates))
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
        if runs < predictor.min_runs and not hits[c]:
            continue
        overall = runs / (earlier + predictor.prior)  # few runs say little: shrunk toward 0
        base = overall  # a store no larger than the window: its latest runs are all of it
        if near.latest < earlier:
            base = ((near.latest_hits.get(c, 0) + predictor.recent_prior * overall)
                    / (near.latest + predictor.recent_prior))
        followed = came_after[c]
        p = ((mass[c] + predictor.follow * followed + predictor.prior * base)
             / (weight + predictor.prior))
        found.append(Estimate(
            c, round(p, 4), similar=hits[c], neighbours=len(near.similar),
            share=mass[c] / near_weight if near_weight else 0.0,
            runs=runs, earlier=earlier, followed=followed,
            sharing=len(near.following)))
    found.sort(key=lambda e: (e.p, e.runs), reverse=True)
    return found
