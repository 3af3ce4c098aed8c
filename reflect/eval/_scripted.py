"""A population of scripted agents on the real store and recall: what the holdout is
checked against (tests/test_holdout.py) and measured with (bench/holdout.py).

Each run recalls once, reads its block, and makes each scripted mistake with its rate:
``shown_rate`` when the lesson of that mistake is in the block, ``rate`` when it is not.
So what showing a lesson changes is known, and the holdout's estimate can be held to it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reflect.api.memory import Memory


@dataclass(frozen=True)
class Mistake:
    action: str
    exit_code: int
    error_text: str
    rate: float  # how often a run makes it without its lesson
    shown_rate: float  # and with its lesson in the block


@dataclass
class Step:
    run: str
    mistake: int  # its index in the population's mistakes
    shown: bool  # the block held its lesson
    made: bool


def run_population(mem: Memory, mistakes: list[Mistake], runs: int, seed: int = 0,
                   goal: str = "") -> list[Step]:
    """``runs`` runs of the scripted agents through ``mem`` (a ``Memory``), one recall and
    then each mistake's capture each; what each run saw and did."""
    rng = random.Random(seed)
    fingerprints: dict[int, str] = {}  # a mistake's fingerprint, once it has been made
    steps = []
    for n in range(runs):
        run = f"run-{seed}-{n:05d}"  # another seed, other arms
        block = mem.recall(run=run, goal=goal, iteration=1)
        seen = {i.fingerprint for i in block.items if i.section == "lesson"}
        for k, m in enumerate(mistakes):
            shown = fingerprints.get(k) in seen
            made = rng.random() < (m.shown_rate if shown else m.rate)
            if made:
                entry = mem.capture(run=run, iteration=1, goal=goal, action=m.action,
                                    exit_code=m.exit_code, error_text=m.error_text)
                if entry is not None:  # None: failure memory is switched off
                    fingerprints[k] = entry.fingerprint
            steps.append(Step(run, k, shown, made))
    return steps
