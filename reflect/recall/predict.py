"""Across runs: the kinds of mistake this run is likely to make, from earlier runs in scope.

Evidence is counted by family (``fingerprint.family``: a cause with its subject masked,
so ten runs each missing another module are ten runs of one mistake), and one estimate
per family is made, the probability that this run fails with it:

    p(f) = (sum_n w_n y_nf + sum_g v y'_gf + sum_c a y''_cf + prior * base(f))
           / (sum_n w_n + sum_g v + sum_c a + prior)

- ``n`` ranges over the ``k`` earlier runs whose goals are most like this one, ``w_n``
  their similarity (the goal vectors' cosine, or before a vector exists, as in the CLI
  before the worker has embedded, the FTS5 match of the goal's rarest words; either
  scaled so the closest run weighs 1), ``y_nf`` whether run n failed with f;
- ``g`` ranges over earlier runs that failed with a family this run has already hit,
  each of weight ``follow``, and ``y'_gf`` says whether f came after it there: what
  this run has done so far moves the estimate;
- with ``action`` set and the command about to run known (a client's PreToolUse,
  ``recall(action=...)``), ``c`` ranges over the latest ``action_window`` runs in which
  a command of its kind (``capture.commands.kind``: ``pytest``, ``reproduce.py``) failed,
  each of weight ``action``, and ``y''_cf`` says whether one failed with f: what earlier
  runs' commands of this kind failed with;
- the base rate is the share of the latest ``window`` runs that failed with f, shrunk
  toward the share of the latest ``long_window`` (itself shrunk by ``prior`` runs that
  did not) with ``recent_prior`` runs (in a store of no more runs than that, the share
  of all):
  what a store's recent runs hit is what its next run is likely to hit (a project's
  runs come together). It is a Beta prior worth ``prior`` runs: one neighbour out of
  two does not outrank 60 runs of 400. The signals (neighbours, what followed) only
  move that mass; ``bench/predictor.py`` keeps one only where it lowers the log loss on
  runs not seen, which goal neighbours did not (``k`` is 0 by default).

Every count is of this scope's runs: the base rate's shares are of the latest ``window``
and the latest ``long_window`` runs in scope (a shared store's other projects count for
nothing here). A family fewer than ``min_runs`` of those runs hit is predicted only
when a similar run had it: one earlier run's mistake is no house rule. In a scope whose
runs are by several members (``base.member``), a family needs runs of ``members`` of
them, its count says how many, and no member's runs fill more than a ``members``-th of a
window: one member's many runs (made-up session ids) make no rule for all, nor crowd
out the team's.

A family this run already has is left out (the recent section shows it). The lessons are
the HOUSE RULES (``recall.block``): most probable first, each shown while its expected
value pays for it (p times ``step_tokens``, the tokens of a failed step it may save, at
least the tokens of its item), at most ``max_items``. The rule is one value,
``Predictor``, that benches pass in and tune.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reflect.capture.commands import kind

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
    # weight of an earlier run that shared a family with this one (0: off; it won on no
    # repository fold, docs/evaluation.md)
    follow: float = 0.0
    threshold: float = 0.0  # p a family needs besides paying for its tokens
    min_runs: int = 2  # of the latest runs in scope, unless a similar run had it
    max_items: int = 6
    # the latest runs whose rate the base rate starts from (50: with ``step_tokens``, the
    # point bench/house_rules.py's cross-validation chose; 25 held fewer fold readings)
    window: int = 50
    recent_prior: float = 10.0  # the weight, in runs, of the longer window's rate in it
    long_window: int = 250  # the latest runs in scope the longer rate is of
    # what a lesson shown is worth, in tokens, when it saves a failed step: a step's own
    # command, output and reply are a mean of 606 on mini-swe-agent-dev, and getting past
    # a failure costs more; chosen by cross-validation over repositories
    # (bench/house_rules.py, docs/evaluation.md): at 600, likely rules whose items are long
    # were left out, and the popularity lists covered repeats in their places
    step_tokens: int = 800
    candidates: int = 20  # the most widespread families, which always get an estimate
    # weight of an earlier run whose command of the kind about to run failed (0: off)
    action: float = 0.0
    action_window: int = 50  # the latest runs in scope whose commands are read
    # in a scope of several members: those whose runs a family needs, and the share of a
    # window (1/members) one member's runs may fill
    members: int = 2


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
    recent: int = 0  # of the latest runs in scope, those that failed with it
    latest: int = 0  # the latest runs in scope (at most the window)
    long: int = 0  # the latest runs in scope of the longer window (``runs`` is of them)
    command: str = ""  # the kind of the command about to run
    by_command: int = 0  # of the latest runs, those whose command of that kind failed with it
    commands: int = 0  # the latest runs (at most ``action_window``) whose commands were read
    by: int = 0  # members of the runs ``recent`` counts (0: a scope of one member)
    long_by: int = 0  # members of the runs ``runs`` counts (0: a scope of one member)

    def why(self, project: bool = False) -> str:
        """What the lesson's count is of: this family in this scope's latest runs (or in
        the similar runs that put it here); never a conditional shown as a reason."""
        if self.similar and self.share >= self.recent / max(self.latest, 1):
            return f"in {self.similar} of {self.neighbours} similar runs"
        of = " of this project" if project else ""
        if self.by_command:
            return (f"`{self.command}` failed with it in {self.by_command} of the last"
                    f" {self.commands} runs{of}")
        if self.recent <= 1 < self.runs:  # a rule of more runs than the latest show
            return f"in {self.runs} of the last {self.long} runs{of}{by(self.long_by)}"
        return f"in {self.recent} of the last {self.latest} runs{of}{by(self.by)}"


def by(members: int) -> str:
    """Of how many members the runs counted are, in a scope of several ("" in one's)."""
    return f", by {members} member{'s' * (members != 1)}" if members else ""


@dataclass
class Neighbourhood:
    """The earlier runs this run is compared with, and the weights they get."""

    similar: list[tuple[str, float]] = field(default_factory=list)  # (run, w)
    following: dict[str, set[str]] = field(default_factory=dict)  # run -> families after
    latest: int = 0  # the latest runs (at most ``window``)
    latest_hits: dict[str, int] = field(default_factory=dict)  # family -> those that hit it
    long: int = 0  # the latest runs of the longer window
    long_hits: dict[str, int] = field(default_factory=dict)
    shared: bool = False  # the scope's runs are by several members
    latest_by: dict[str, int] = field(default_factory=dict)  # family -> members that hit it
    long_by: dict[str, int] = field(default_factory=dict)
    command: str = ""  # the kind of the command about to run ("": none told)
    commands: int = 0  # the latest runs whose commands were read
    command_runs: int = 0  # of them, those in which a command of that kind failed
    command_hits: dict[str, int] = field(default_factory=dict)  # family -> of those, with it


def words(text: str, common: bool = False) -> list[str]:
    """The words of ``text`` a search goes by; ``common``: the stop words too."""
    return [w for w in _WORD.findall(text.lower()) if common or w not in STOPWORDS]


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


def command_hits(actions: set[tuple[str, str, str]], command: str) -> tuple[int, dict[str, int]]:
    """Of the (run, action, family) of earlier runs' failures: the runs in which a command
    of kind ``command`` failed, and of them, those that failed with each family."""
    runs: set[str] = set()
    hits: defaultdict[str, set[str]] = defaultdict(set)
    for run, action, family in actions:
        if kind(action) == command:
            runs.add(run)
            hits[family].add(run)
    return len(runs), {f: len(r) for f, r in hits.items()}


def estimate(store: RunStore, predictor: Predictor, near: Neighbourhood, run: str, earlier: int,
             exclude: set[str]) -> list[Estimate]:
    """Every candidate family's estimate, most probable first; ``earlier``: the runs in
    scope other than ``run``."""
    incidence = store.run_families([r for r, _ in near.similar])
    candidates = set(store.widespread_families(predictor.candidates))
    for families in (*incidence.values(), *near.following.values(), near.latest_hits,
                     near.command_hits):
        candidates |= set(families)
    candidates -= exclude
    if not candidates:
        return []
    near_weight = sum(w for _, w in near.similar)
    weight = (near_weight + predictor.follow * len(near.following)
              + predictor.action * near.command_runs)
    mass: defaultdict[str, float] = defaultdict(float)  # weighted neighbours that hit it
    hits: Counter[str] = Counter()  # and how many they are
    for r, w in near.similar:
        for c in incidence[r]:
            mass[c] += w
            hits[c] += 1
    came_after = Counter(c for after in near.following.values() for c in after)
    found = []
    for c in candidates:
        runs = near.long_hits.get(c, 0)
        if runs < predictor.min_runs and not hits[c]:
            continue
        if near.shared and near.long_by.get(c, 0) < predictor.members:
            continue  # one member's runs, however many: no rule for all
        overall = runs / (near.long + predictor.prior)  # few runs say little: shrunk to 0
        base = overall  # a store no larger than the window: its latest runs are all of it
        if near.latest < earlier:
            base = ((near.latest_hits.get(c, 0) + predictor.recent_prior * overall)
                    / (near.latest + predictor.recent_prior))
        followed = came_after[c]
        by_command = near.command_hits.get(c, 0)
        p = ((mass[c] + predictor.follow * followed + predictor.action * by_command
              + predictor.prior * base) / (weight + predictor.prior))
        found.append(Estimate(
            c, round(p, 4), similar=hits[c], neighbours=len(near.similar),
            share=mass[c] / near_weight if near_weight else 0.0,
            runs=runs, earlier=earlier, followed=followed,
            sharing=len(near.following), recent=near.latest_hits.get(c, 0),
            latest=near.latest, long=near.long, command=near.command,
            by_command=by_command, commands=near.commands,
            by=near.latest_by.get(c, 0) if near.shared else 0,
            long_by=near.long_by.get(c, 0) if near.shared else 0))
    # A tie goes to the family's key: the candidates are a set, whose order changes with
    # each process's string hashing, and a harness recalling through the CLI starts a
    # process each iteration: one store must show it the same rules each time.
    found.sort(key=lambda e: (e.p, e.runs, e.family), reverse=True)
    return found
