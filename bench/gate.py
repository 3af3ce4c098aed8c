"""The relevance gate of LESSONS FROM EARLIER RUNS, tuned and measured on labelled pairs.

Run: .venv/bin/python bench/gate.py [DATA_DIR]   (under a minute; the bundled MiniLM model)

Stores. Each of the 34 mini-swe-agent runs (SWE-bench tasks) takes a turn as run B: a
fresh store gets the failures of the other 33 runs, captured as the product captures
them, so every lesson is the product's own heuristic lesson. B is then recalled as a
harness recalls it: at its first iteration (the goal alone) and after each of its
failures (the goal plus its latest error; B's failures are captured as they happen, so
those lessons are excluded as the recent section's). At every recall `find_lessons` runs
three times: with `passes` patched to let every candidate through and the candidate cut
widened, which records the signals of every lesson the recall judges (goal and error
cosine, `term_hits`, the runs its cause failed in, its score) with the recall's context
(the store's run count, the score the product ranks an evidence-only lesson by); as the
product's gate with the cut widened and no item limit, which `check` proves the arrays
below reproduce exactly (evidence rule, its cap a block and one lesson a cause
included); and as the product runs it (50 candidates a source, 6 items), whose answer
goes back to the recall, so the store's injection log evolves as in use.

Labels. A pair (lesson L, run B at a moment) is relevant when B's latest or a later
failure is L's mistake:
- automatic: it has the signature (reflect.eval.signature, computed from the raw error
  text, independently of the store's fingerprint) of one of L's failures;
- hand-labelled root causes: signatures that differ only in the instance they name are
  the same mistake (ROOT_CAUSES: `no such table: <any>`, any unconfigured Django setting, a
  script or local app module that is not there);
- hand-labelled by what B did: a Django `no such table` or unconfigured-settings lesson is
  relevant to a run that wrote a standalone Django script (`settings.configure` in its
  commands; for tables also a model and SQLite), whether or not it then hit the error.
Everything else is not relevant. "All pairs" is what a real store holds (mostly
irrelevant lessons); "balanced" takes every relevant pair at the first iteration and as
many irrelevant ones, half of them from B's own repository (same topic, the hard case);
"one-lesson stores" judges the balanced pairs again in a store holding L alone, where
BM25 is meaningless, every query term is the lesson's, and the store's run count is L's.

The gate, as `find_lessons` applies it: a lesson passes on a signal (goal cosine, the
goal's z-score among all lessons' cosines with a cosine of at least MIN_Z_COSINE (stores
of SPREAD_LESSONS or more), error cosine, or MIN_TERM_HITS of the query's rarest terms
held; a taught lesson on its trigger, none here), or on evidence alone: its cause
recurred in at least max(EVIDENCE_RUNS, EVIDENCE_SHARE x the store's run count) runs
with an error that names the mistake, at most EVIDENCE_ITEMS such lessons a block (the
most widespread, then the latest to recur); of several passing lessons of one cause, the
best scored. Tuning
maximizes F0.5 (precision counts double: noise in a prompt is worse than nothing) of
that whole gate over a grid of the four signal thresholds (MIN_TERM_HITS in counts, 1-6
or off), the evidence rule and the floor fixed as in reflect/retrieval.py: on all runs,
and on each half of the runs (alternating within each repository), each half then
judged by the thresholds of the other (held out). The evidence constants and the floor
are not tuned (too few root causes recur; no goal here is unlike every lesson); their
variants are reported. "before" is the gate before the first tuning (term share >= 0.34 of
min(terms, 3), evidence a fixed 3 runs that also counted failures without error text, no
cap), with runs counted by cause and one lesson a cause as today; "now" reads
reflect/retrieval.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from replay import mini_swe_agent

import reflect.embedding as embedding
import reflect.recall as recall_module
import reflect.retrieval as retrieval
from reflect import Memory
from reflect.eval.convert import convert
from reflect.eval.signature import signature

ROOT_CAUSES = [  # hand-labelled: one mistake whatever instance the message names
    ("no-such-table", r"^OperationalError: no such table: "),
    ("settings-not-configured", r"^ImproperlyConfigured: Requested setting \w+, but settings"),
    ("local-module-missing", r"^ModuleNotFoundError: No module named '(reproduce_app|test_app)'"),
    ("script-missing", r"^FileNotFound: python3?: can't open file"),
]
STANDALONE = r"settings\.configure"
STANDALONE_ORM = (STANDALONE, r"models\.Model", r"sqlite3")
OFF = 99  # a threshold no signal reaches
GRID = {  # what tuning tries; OFF switches a signal off
    "MIN_GOAL_COSINE": [0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.70, OFF],
    "MIN_GOAL_Z": [1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, OFF],
    "MIN_ERROR_COSINE": [0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.75, OFF],
    "MIN_TERM_HITS": [1, 2, 3, 4, 5, 6, OFF],  # of the query's rarest terms
}
EVIDENCE = ("EVIDENCE_RUNS", "EVIDENCE_SHARE", "EVIDENCE_ITEMS")
FLOOR = "MIN_Z_COSINE"  # the cosine a z-score needs to count: fixed, variants reported
KEYS = (*GRID, *EVIDENCE, FLOOR)
# The product's gate is recorded as now and with these constants.
CHECKED = ({}, {"EVIDENCE_SHARE": 0.0, "EVIDENCE_ITEMS": 1})
UNCAPPED = 10**6
BEFORE = {  # the gate before the first tuning
    "MIN_GOAL_COSINE": 0.30, "MIN_GOAL_Z": OFF, FLOOR: 0.0, "MIN_ERROR_COSINE": 0.55,
    "MIN_TERM_SHARE": 0.34, "EVIDENCE_RUNS": 3, "EVIDENCE_SHARE": 0.0,
    "EVIDENCE_ITEMS": UNCAPPED, "any_error_evidence": True,
}


@dataclass
class Obs:
    run: str  # B
    moment: int  # 0: first iteration; else the iteration of B's latest failure
    recall: int  # which recall (block) judged the pair
    candidate: retrieval.Candidate
    sources: list  # L's failures in other runs (trace records)
    run_count: int  # the store's run count at the recall
    n_terms: int  # the query's rarest terms searched for
    evidence_score: float  # the score the product ranks L by if it got in on evidence alone
    taught: bool  # a taught lesson whose trigger the query holds
    gate: tuple  # the product's gate passed L, for each of CHECKED (find_lessons as now,
    # or with CHECKED's constants, every candidate, no item limit)
    shown: bool  # the product showed L (find_lessons as run: cut of 50, 6 items)
    auto: bool = False
    hand: bool = False

    @property
    def relevant(self) -> bool:
        return self.auto or self.hand


class Memo:
    """The real embedder, loaded once for all the stores, each text embedded once."""

    def __init__(self, inner):
        self.inner, self.name, self.seen = inner, inner.name, {}

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts):
        new = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if new:
            self.seen.update(zip(new, self.inner.embed(new), strict=True))
        return np.stack([self.seen[t] for t in texts]) if texts else self.inner.embed([])


def instrument() -> list:
    """Record every recall's judged candidates (see the module's docstring); one embedder
    for all stores. Returns the list each recall appends its record to."""
    recalls: list = []
    load, loaded = embedding.load_embedder, {}
    embedding.load_embedder = lambda spec, warn: loaded.get(spec) or loaded.setdefault(
        spec, Memo(load(spec, warn)))
    find, passes, cut = retrieval.find_lessons, retrieval.passes, retrieval.CANDIDATES

    def find_lessons(store, vectors, **kw):
        judged: list = []
        retrieval.passes = lambda c: judged.append(c) or True
        retrieval.CANDIDATES = 10_000
        try:
            find(store, vectors, **{**kw, "limit": 10**6})
            retrieval.passes = passes
            gate = [passed(store, vectors, kw, variant) for variant in CHECKED]
        finally:
            retrieval.passes, retrieval.CANDIDATES = passes, cut
        shown = find(store, vectors, **kw)
        query_words = set(retrieval.words(kw["query"]))
        alone = {"goal_cosine": 0.0, "goal_z": 0.0, "error_cosine": 0.0, "term_hits": 0,
                 "evidence_only": True}
        recalls.append({
            "run_count": store.run_count(),
            "n_terms": len(retrieval.rare_terms(store, kw["query"])),
            "judged": [(c, retrieval._score(dataclasses.replace(c, **alone), kw["scope"],
                                            kw["now"], kw["half_life_days"]),
                        retrieval.taught_match(c.lesson, query_words)) for c in judged],
            "gate": gate,
            "shown": {c.lesson["id"] for c in shown},
        })
        return shown

    def passed(store, vectors, kw: dict, variant: dict) -> set[str]:
        saved = {k: getattr(retrieval, k) for k in variant}
        for k, v in variant.items():
            setattr(retrieval, k, v)
        try:
            return {c.lesson["id"] for c in find(store, vectors, **{**kw, "limit": 10**6})}
        finally:
            for k, v in saved.items():
                setattr(retrieval, k, v)

    recall_module.find_lessons = find_lessons
    return recalls


def observe(runs: dict, recalls: list, b: str, failures: list, moments: bool) -> list[Obs]:
    """Recall for run ``b`` from a fresh store of ``failures`` (trace records)."""
    out: list[Obs] = []
    origin: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="reflect-gate-") as home:
        mem = Memory(home, embeddings="", clock=lambda: 1.7e9)

        def capture(r) -> None:
            entry = mem.capture(run=r.run, iteration=r.iteration, goal=r.goal, action=r.action,
                                exit_code=r.exit_code, error_text=r.error_text)
            origin[entry.failure_id] = r

        def recall(moment: int) -> None:
            done = len(recalls)
            mem.recall(run=b, goal=runs[b][0].goal, iteration=moment + 1)
            for i in range(done, len(recalls)):  # none when no other lesson is stored
                rec = recalls[i]
                ids = mem.store.failure_ids([c.lesson["fingerprint"] for c, _, _ in
                                             rec["judged"]])
                for c, evidence_score, taught in rec["judged"]:
                    held = [origin[f] for f in ids.get(c.lesson["fingerprint"], [])]
                    out.append(Obs(b, moment, i, c, [r for r in held if r.run != b],
                                   rec["run_count"], rec["n_terms"], evidence_score, taught,
                                   tuple(c.lesson["id"] in g for g in rec["gate"]),
                                   c.lesson["id"] in rec["shown"]))

        for record in failures:
            capture(record)
        recall(0)
        for record in runs[b] if moments else ():
            if not record.success:
                capture(record)
                recall(record.iteration)
        mem.close()
    return out


def root(sig: str | None) -> str | None:
    for name, pattern in ROOT_CAUSES:
        if sig and re.search(pattern, sig):
            return name
    return sig


def label(obs: list[Obs], runs: dict) -> None:
    actions = {b: "\n".join(r.action for r in records) for b, records in runs.items()}
    for o in obs:
        sigs = {signature(r.error_text) for r in o.sources} - {None}
        later = {signature(r.error_text) for r in runs[o.run]
                 if not r.success and r.iteration >= o.moment} - {None}
        o.auto = bool(sigs & later)
        causes = {root(s) for s in sigs}
        wrote = actions[o.run]
        o.hand = not o.auto and (
            bool(causes & {root(s) for s in later})
            or ("no-such-table" in causes and all(re.search(p, wrote) for p in STANDALONE_ORM))
            or ("settings-not-configured" in causes and bool(re.search(STANDALONE, wrote))))


def balanced(obs: list[Obs]) -> list[Obs]:
    """Every relevant first-iteration pair and as many irrelevant ones, half of them from
    B's own repository (same topic), half from others; a fixed seed."""
    rng = random.Random(0)
    first = [o for o in obs if o.moment == 0]
    same = [o for o in first if not o.relevant and repo(o.run) == repo(o.sources[0].run)]
    other = [o for o in first if not o.relevant and repo(o.run) != repo(o.sources[0].run)]
    positives = [o for o in first if o.relevant]
    rng.shuffle(same)
    rng.shuffle(other)
    negatives = (same[: (len(positives) + 1) // 2] + other)[: len(positives)]
    return positives + negatives


def repo(run: str) -> str:
    return run.split("__")[0]


def signals(obs: list[Obs]) -> dict[str, np.ndarray]:
    c = [o.candidate for o in obs]
    s = {
        "MIN_GOAL_COSINE": np.array([x.goal_cosine for x in c]),
        "MIN_GOAL_Z": np.array([x.goal_z for x in c]),
        "MIN_ERROR_COSINE": np.array([x.error_cosine for x in c]),
        "MIN_TERM_HITS": np.array([x.term_hits for x in c]),
        "n_terms": np.array([o.n_terms for o in obs]),
        "runs": np.array([x.runs for x in c]),
        "last_seen": np.array([x.lesson["last_seen"] for x in c], dtype=float),
        "cause": np.unique([x.lesson["cause"] or x.lesson["id"] for x in c],
                           return_inverse=True)[1].reshape(-1),
        "score": np.array([x.score for x in c]),
        "evidence_score": np.array([o.evidence_score for o in obs]),
        "run_count": np.array([o.run_count for o in obs]),
        "names_mistake": np.array([retrieval.names_mistake(x.lesson["error_text"]) for x in c],
                                  dtype=bool),
        "taught": np.array([o.taught for o in obs], dtype=bool),
        "recall": np.array([o.recall for o in obs], dtype=int),
        "relevant": np.array([o.relevant for o in obs], dtype=bool),
    }
    return s


def signal(s: dict, th: dict) -> np.ndarray:
    """``retrieval.passes`` (or a taught lesson's trigger) over arrays."""
    if "MIN_TERM_SHARE" in th:  # before: the share of min(terms, 3) held
        terms = s["MIN_TERM_HITS"] / np.clip(s["n_terms"], 1, 3) >= th["MIN_TERM_SHARE"]
    else:
        terms = s["MIN_TERM_HITS"] >= th["MIN_TERM_HITS"]
    return ((s["MIN_GOAL_COSINE"] >= th["MIN_GOAL_COSINE"])
            | ((s["MIN_GOAL_Z"] >= th["MIN_GOAL_Z"]) & (s["MIN_GOAL_COSINE"] >= th[FLOOR]))
            | (s["MIN_ERROR_COSINE"] >= th["MIN_ERROR_COSINE"]) | terms | s["taught"])


def recurring(s: dict, th: dict) -> np.ndarray:
    """Evidence: its cause recurred in max(EVIDENCE_RUNS, EVIDENCE_SHARE x the store's
    runs) runs, with an error that names the mistake."""
    enough = s["runs"] >= np.maximum(th["EVIDENCE_RUNS"], th["EVIDENCE_SHARE"] * s["run_count"])
    return enough if th.get("any_error_evidence") else enough & s["names_mistake"]


def firsts(keys: tuple, subset: np.ndarray, groups: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` of ``subset`` in each group, ordered by ``keys`` (np.lexsort's:
    the last key sorts first)."""
    ranked = np.lexsort(keys)
    ranked = ranked[subset[ranked]]
    out = np.zeros(len(subset), dtype=bool)
    if not len(ranked):
        return out
    g = groups[ranked]
    start = np.r_[True, g[1:] != g[:-1]]
    position = np.arange(len(g)) - np.maximum.accumulate(np.where(start, np.arange(len(g)), 0))
    out[ranked[position < n]] = True
    return out


def gate(s: dict, th: dict, evidence_only: bool = False) -> np.ndarray:
    """The gate of ``find_lessons`` over arrays (``check`` proves they agree): the lessons
    that pass a signal or the evidence rule; in each recall the best scored of each cause
    (ties in the order candidates were found, the order recorded); of those let in on
    evidence alone, the EVIDENCE_ITEMS most widespread, then latest to recur."""
    fits = signal(s, th)
    alone = recurring(s, th) & ~fits
    order = np.arange(len(fits))
    score = np.where(fits, s["score"], s["evidence_score"])
    causes = s["recall"] * (s["cause"].max(initial=0) + 1) + s["cause"]
    best = firsts((order, -score, causes), fits | alone, causes, 1)
    chosen = firsts((order, -score, -s["last_seen"], -s["runs"], s["recall"]), best & alone,
                    s["recall"], th["EVIDENCE_ITEMS"])
    return chosen if evidence_only else (best & fits) | chosen


def check(obs: list[Obs], passes, now: dict) -> None:
    """The arrays reproduce what ``find_lessons`` passed (as now, and with each of
    CHECKED's constants), and ``passes`` at every term threshold of the grid."""
    s = signals(obs)
    for i, variant in enumerate(CHECKED):
        assert (gate(s, {**now, **variant}) == np.array([o.gate[i] for o in obs])).all(), \
            f"gate() no longer mirrors find_lessons ({variant or 'now'})"
    saved = {k: getattr(retrieval, k) for k in KEYS}
    try:
        for hits in GRID["MIN_TERM_HITS"]:
            th = {**now, "MIN_TERM_HITS": hits}
            for k in KEYS:
                setattr(retrieval, k, th[k])
            real = np.array([passes(o.candidate) for o in obs], dtype=bool)
            assert (real | s["taught"] == signal(s, th)).all(), \
                "signal() no longer mirrors passes()"
    finally:
        for k, v in saved.items():
            setattr(retrieval, k, v)


def score(shown: np.ndarray, relevant: np.ndarray) -> tuple[float, float, float, int, int]:
    tp, fp = int((shown & relevant).sum()), int((shown & ~relevant).sum())
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / relevant.sum() if relevant.sum() else 0.0
    return p, r, (1.25 * p * r / (0.25 * p + r) if p + r else 0.0), tp, fp


def tune(s: dict, now: dict) -> dict:
    """The signal thresholds with the best F0.5 of the whole gate, the evidence rule as
    now; near-ties (F0.5 to two decimals) go to the more precise."""
    def key(th):
        p, _, f, _, _ = score(gate(s, th), s["relevant"])
        return round(f, 2), p
    grid = ({**now, **dict(zip(GRID, v, strict=True))}
            for v in itertools.product(*GRID.values()))
    return max(grid, key=key)


def halves(runs: dict) -> tuple[set[str], set[str]]:
    """Alternate runs within each repository, so both halves hold every topic."""
    by_repo = defaultdict(list)
    for b in sorted(runs):
        by_repo[repo(b)].append(b)
    train = {b for names in by_repo.values() for b in names[0::2]}
    return train, set(runs) - train


def cell(shown: np.ndarray, relevant: np.ndarray) -> str:
    p, r, f, tp, fp = score(shown, relevant)
    return f"P {p:.2f} R {r:.2f} F.5 {f:.2f} {tp:4d}/{fp:<5d}"


def describe(th: dict) -> str:
    def value(k):
        return "off" if th[k] >= OFF else f"{th[k]:g}"
    terms = (f"share {th['MIN_TERM_SHARE']:g}" if "MIN_TERM_SHARE" in th
             else value("MIN_TERM_HITS"))
    evidence = f"max({th['EVIDENCE_RUNS']:g}, {th['EVIDENCE_SHARE']:g}n)"
    if th.get("any_error_evidence"):
        evidence += " any error"
    evidence += (" uncapped" if th["EVIDENCE_ITEMS"] >= UNCAPPED
                 else f" <={th['EVIDENCE_ITEMS']} a block")
    return (f"{value('MIN_GOAL_COSINE')} z {value('MIN_GOAL_Z')} (>= {th[FLOOR]:g})"
            f" {value('MIN_ERROR_COSINE')}"
            f" {terms} {evidence}")


def sections(obs: list[Obs], shown: np.ndarray) -> str:
    """Per recall: how often the section is empty, and how often a shown one helps."""
    by_recall = defaultdict(list)
    for o, on in zip(obs, shown, strict=True):
        by_recall[o.recall].append((on, o.relevant))
    full = [v for v in by_recall.values() if any(s for s, _ in v)]
    useful = sum(any(s and r for s, r in v) for v in full)
    count = sum(s for v in full for s, _ in v)
    full_ = max(len(full), 1)
    return (f"empty {1 - len(full) / len(by_recall):4.0%}, non-empty with a relevant lesson "
            f"{useful / full_:4.0%}, lessons per non-empty {count / full_:.1f}")


def main() -> int:
    source = mini_swe_agent()
    if source is None:
        return 1
    start = time.perf_counter()
    records = convert("mini-swe-agent", [source])
    runs: dict[str, list] = defaultdict(list)
    for record in records:
        runs[record.run].append(record)
    real_passes = retrieval.passes
    now = {k: getattr(retrieval, k) for k in KEYS}
    recalls = instrument()
    obs: list[Obs] = []
    for b in sorted(runs):
        others = [r for a in sorted(runs) if a != b for r in runs[a] if not r.success]
        obs += observe(runs, recalls, b, others, True)
    label(obs, runs)
    pairs = balanced(obs)
    small: list[Obs] = []
    for o in pairs:  # the same pairs, each judged in a store holding the lesson alone
        small += [x for x in observe(runs, recalls, o.run, o.sources, False)
                  if x.candidate.lesson["fingerprint"] == o.candidate.lesson["fingerprint"]]
    label(small, runs)
    check(obs, real_passes, now)
    check(small, real_passes, now)

    first = [o for o in obs if o.moment == 0]
    later = [o for o in obs if o.moment > 0]
    s = signals(obs)
    counts = sorted({o.run_count for o in obs})
    print(f"{len(runs)} runs, {len(records)} iterations, "
          f"{sum(not r.success for r in records)} failed; "
          f"{time.perf_counter() - start:.0f} s")
    print(f"stores of {counts[0]}-{counts[-1]} runs: evidence needs "
          f"{max(now['EVIDENCE_RUNS'], now['EVIDENCE_SHARE'] * counts[0]):g}-"
          f"{max(now['EVIDENCE_RUNS'], now['EVIDENCE_SHARE'] * counts[-1]):g} runs; most "
          f"runs of a lesson naming its mistake {s['runs'][s['names_mistake']].max()}, "
          f"of another {s['runs'][~s['names_mistake']].max(initial=0)}; taught lessons "
          f"{int(s['taught'].sum())}")
    print(f"{'pairs (lesson, run B at a moment)':<40}{'pairs':>6} relevant (signature + hand)")
    for name, group in (("first iteration (goal only)", first),
                        ("after a failure (goal + latest error)", later),
                        ("balanced (first iteration)", pairs)):
        print(f"  {name:<38}{len(group):6d} {sum(o.relevant for o in group):5d} "
              f"({sum(o.auto for o in group)} + {sum(o.hand for o in group)})")

    same = [o for o in obs if any(repo(r.run) == repo(o.run) for r in o.sources)]
    groups = {"all pairs": obs, "  first iteration": first, "  after a failure": later,
              "  same repository": same, "  balanced": pairs, "  one-lesson stores": small}
    columns = {"before": BEFORE, "now": now}
    print("\nthresholds: goal cosine, z goal z-score (with a cosine of at least the floor), error"
          " cosine, term hits, evidence runs (n: the store's runs)")
    for name, th in columns.items():
        print(f"  {name}: {describe(th)}")
    print(f"shown relevant/not\n{'':<24}" + "".join(f"{name:<38}" for name in columns))
    for name, group in groups.items():
        g = signals(group)
        print(f"{name:<24}" + "".join(f"{cell(gate(g, th), g['relevant']):<38}"
                                      for th in columns.values()))
    for name, group in (("  on evidence alone", obs), ("    one-lesson stores", small)):
        g = signals(group)
        print(f"{name:<24}" + "".join(f"{cell(gate(g, th, True), g['relevant']):<38}"
                                      for th in columns.values()))
    shown = np.array([o.shown for o in obs])
    print(f"{'all pairs, as shown':<24}{'':<38}{cell(shown, s['relevant'])}"
          "(cut of 50 candidates, 6 items)")
    off = {**now, "EVIDENCE_RUNS": 10**6}
    for name, on in (("before", gate(s, BEFORE)), ("now", gate(s, now)),
                     ("now without evidence rule", gate(s, off)), ("now, as shown", shown)):
        print(f"per recall, {name:<26} {sections(obs, on)}")

    print("\nvariants of now (all pairs | first iteration | one-lesson stores):")
    for name, change in (("goal 0.45", {"MIN_GOAL_COSINE": 0.45}),
                         ("z-score off", {"MIN_GOAL_Z": OFF}),
                         ("z-score floor 0", {FLOOR: 0.0}),
                         ("z-score floor 0.35", {FLOOR: 0.35}),
                         ("error 0.55", {"MIN_ERROR_COSINE": 0.55}),
                         ("terms 3", {"MIN_TERM_HITS": 3}),
                         ("terms 5", {"MIN_TERM_HITS": 5}),
                         ("evidence 3 runs and 20% of runs, 1 a block",
                          {"EVIDENCE_RUNS": 3, "EVIDENCE_SHARE": 0.2, "EVIDENCE_ITEMS": 1}),
                         ("evidence share 0", {"EVIDENCE_SHARE": 0.0}),
                         ("evidence 1 a block", {"EVIDENCE_ITEMS": 1}),
                         ("evidence 3 a block", {"EVIDENCE_ITEMS": 3}),
                         ("evidence uncapped", {"EVIDENCE_ITEMS": UNCAPPED}),
                         ("no evidence rule", {"EVIDENCE_RUNS": 10**6})):
        th = {**now, **change}
        print(f"  {name:<36}" + " | ".join(
            cell(gate(g, th), g["relevant"]) for g in map(signals, (obs, first, small))))

    halves_ = halves(runs)
    print("\nMIN_TERM_HITS, the rest as now (all pairs | half A | half B):")
    for hits in GRID["MIN_TERM_HITS"]:
        th = {**now, "MIN_TERM_HITS": hits}
        print(f"  {'off' if hits >= OFF else hits:<4}" + " | ".join(
            cell(gate(g, th), g["relevant"])
            for g in map(signals, (obs, *([o for o in obs if o.run in h] for h in halves_)))))

    tuned = [tune(signals([o for o in obs if o.run in half]), now) for half in halves_]
    print(f"\ntuned (F0.5 of the gate, evidence as now): all runs {describe(tune(s, now))}; "
          f"half A ({len(halves_[0])} runs) {describe(tuned[0])}; "
          f"half B ({len(halves_[1])} runs) {describe(tuned[1])}")
    print(f"held out: each half judged by the thresholds tuned on the other half\n{'':<24}"
          f"{'before':<38}{'tuned on the other half':<38}now (in sample)")
    names = "AB"
    for i, (half, th) in enumerate(zip(halves_, reversed(tuned), strict=True)):
        print(f"half {names[i]} ({len(half)} runs), tuned on {names[1 - i]}: {describe(th)}")
        for name, group in list(groups.items())[:3] + [("  balanced", pairs)]:
            g = signals([o for o in group if o.run in half])
            print(f"{name:<24}" + "".join(f"{cell(gate(g, t), g['relevant']):<38}"
                                          for t in (BEFORE, th, now)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
