"""The holdout: what showing a lesson changes, measured by withholding it at random.

Credit says a lesson shown and not followed by its cause won, though the cause might not
have come anyway. A holdout knows: of the runs where recall would show a lesson from an
earlier run, a share ``p`` do not see it, chosen by a hash of the run and the lesson's
fingerprint (the failure it is the lesson of: a lesson rewritten by the worker keeps its
runs' arms), so a run stays in one arm for that lesson and a rerun of a recall gives the
same block. Effects are counted per lesson id: a rewritten lesson is a new experiment.
Per lesson, the rate at which its family followed in each arm, with Wilson intervals, and
their difference (Newcombe's interval from the two) say what it changes; the predictor's
rate stands beside them. A lesson is judged when each arm has ``min_runs`` runs, and
again each time the smaller one has doubled (a few looks, not one per recall: an interval
read at every recall crosses its bound by chance): promoted when the interval of its
effect lies above zero (shown from then on, past the predictor's threshold too, and
exported as a house rule), demoted when it lies below ``min_effect`` (not shown: its
place goes to the next lesson). After a verdict the lesson leaves the holdout (its runs
are logged ``promoted`` or ``demoted``, outside the arms), so the verdict stands and
withholding costs repeats only while it is in question. The rule is one value, ``Holdout``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reflect.base.digest import sha256

if TYPE_CHECKING:
    from reflect.base.answers import Measured
    from reflect.store.protocol import InjectionLog

SHOWN, WITHHELD, PROMOTED, DEMOTED = "shown", "withheld", "promoted", "demoted"
RANDOMIZED = (SHOWN, WITHHELD)  # the arms an effect is measured on


@dataclass(frozen=True)
class Holdout:
    p: float = 0.0  # the share of (run, lesson) pairs withheld; 0: every lesson is shown
    min_runs: int = 30  # runs in each arm before a lesson is judged
    z: float = 2.5  # the intervals' width: judged at every recall, so wider than once at 95%
    min_effect: float = 0.05  # the cut in its family's rate a lesson must be able to show

    def __post_init__(self) -> None:
        if not 0.0 <= self.p < 1.0:
            raise ValueError(f"holdout {self.p} is not a share: use 0 <= p < 1 (0.1 is usual)")


def withheld(run: str, fingerprint: str, p: float) -> bool:
    """Whether ``run`` is in the withheld arm for the lesson of ``fingerprint``: the same
    every time."""
    digest = sha256(f"{run}\0{fingerprint}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < p


def wilson(hits: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's score interval for a rate of ``hits`` in ``n``: sound at small n and at 0."""
    if n == 0:
        return 0.0, 1.0
    rate = hits / n
    centre = rate + z * z / (2 * n)
    spread = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


@dataclass
class Effect:
    lesson_id: str
    family: str
    shown: int = 0  # randomized runs that saw it
    shown_hits: int = 0  # of them, those its family followed in
    withheld: int = 0
    withheld_hits: int = 0
    predicted: float = 0.0  # the predictor's mean p(family) over those runs
    verdict: str = ""  # promoted | demoted | "" (not judged yet, or nothing clear)

    def rates(self) -> tuple[float, float]:
        return self.shown_hits / max(self.shown, 1), self.withheld_hits / max(self.withheld, 1)

    def effect(self) -> float:
        """How much showing it cuts its family's rate (withheld rate minus shown rate)."""
        shown, held = self.rates()
        return held - shown

    def interval(self, z: float) -> tuple[float, float]:
        """Newcombe's interval for the effect, from the two arms' Wilson intervals."""
        shown, held = self.rates()
        s_lo, s_hi = wilson(self.shown_hits, self.shown, z)
        w_lo, w_hi = wilson(self.withheld_hits, self.withheld, z)
        d = held - shown
        return (d - math.sqrt((held - w_lo) ** 2 + (s_hi - shown) ** 2),
                d + math.sqrt((w_hi - held) ** 2 + (shown - s_lo) ** 2))

    def judge(self, rule: Holdout) -> str:
        """A verdict only at a look: when the smaller arm has ``min_runs`` times a power of
        two runs. Read at every recall, an interval would cross its bound by chance alone."""
        looks, rest = divmod(min(self.shown, self.withheld), max(rule.min_runs, 1))
        if looks == 0 or rest or looks & (looks - 1):
            return ""
        lo, hi = self.interval(rule.z)
        if lo > 0:
            return PROMOTED
        if hi < rule.min_effect:
            return DEMOTED
        return ""

    def to_dict(self, rule: Holdout) -> Measured:
        shown, held = self.rates()
        lo, hi = self.interval(rule.z)
        return {"lesson_id": self.lesson_id, "family": self.family, "verdict": self.verdict,
                "predicted": round(self.predicted, 4),
                "shown": {"runs": self.shown, "hits": self.shown_hits, "rate": round(shown, 4),
                          "interval": [round(x, 4) for x in wilson(self.shown_hits,
                                                                   self.shown, rule.z)]},
                "withheld": {"runs": self.withheld, "hits": self.withheld_hits,
                             "rate": round(held, 4),
                             "interval": [round(x, 4) for x in wilson(self.withheld_hits,
                                                                      self.withheld, rule.z)]},
                "effect": round(self.effect(), 4), "effect_interval": [round(lo, 4), round(hi, 4)]}


def effects(rows: Iterable[dict[str, Any]], rule: Holdout) -> dict[str, Effect]:
    """Per lesson, from the store's ``holdout_arms`` (per lesson and arm: runs, hits, the
    mean predicted p, the latest row), each judged by ``rule``. A verdict once given is
    in the log (the runs after it are logged ``promoted`` or ``demoted``) and stands,
    whatever rule reads it later."""
    found: dict[str, Effect] = {}
    weighed: dict[str, float] = {}  # predicted p summed over the randomized runs
    given: dict[str, tuple[int, str]] = {}  # lesson -> (latest row, verdict) of the log
    for r in rows:
        e = found.setdefault(r["lesson_id"], Effect(r["lesson_id"], r["family"]))
        runs, hits = int(r["runs"]), int(r["hits"])
        if r["arm"] not in RANDOMIZED:  # shown or not by a verdict: not an experiment
            given[e.lesson_id] = max(given.get(e.lesson_id, (0, "")), (int(r["last"]), r["arm"]))
            continue
        if r["arm"] == SHOWN:
            e.shown, e.shown_hits = runs, hits
        else:
            e.withheld, e.withheld_hits = runs, hits
        weighed[e.lesson_id] = weighed.get(e.lesson_id, 0.0) + float(r["predicted"]) * runs
    for e in found.values():
        e.predicted = weighed.get(e.lesson_id, 0.0) / max(e.shown + e.withheld, 1)
        e.verdict = given[e.lesson_id][1] if e.lesson_id in given else e.judge(rule)
    return found


def measured(store: InjectionLog, rule: Holdout,
             lesson_ids: list[str] | None = None) -> list[Effect]:
    """Every lesson's measured effect (of ``lesson_ids``, else all), the largest first."""
    found = effects(store.holdout_arms(lesson_ids), rule).values()
    return sorted(found, key=lambda e: (-e.effect(), e.lesson_id))


def arm(run: str, fingerprint: str, verdict: str, rule: Holdout) -> str:
    """The arm a run is in for the lesson of ``fingerprint``, given its verdict so far."""
    if verdict:
        return verdict
    return WITHHELD if withheld(run, fingerprint, rule.p) else SHOWN
