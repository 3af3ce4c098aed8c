"""Credit by outcome: what was injected before an iteration, and how that iteration ended.

A lesson injected before an iteration in which its fingerprint did not recur
earns a win; one injected before its own failure came back earns a loss (it
"did not prevent" it); lessons injected into a successful iteration share a
win. Confidence is the smoothed win rate around the lesson's prior, so a
lesson needs evidence to move far from what it started with: the one formula
for it, whoever judges (outcomes here, a person's feedback in ``controls``).
The store applies these to its injection log (``reflect.store._credit``).
"""

from __future__ import annotations

PRIOR_WEIGHT = 2.0  # the prior counts as this many outcomes

# What one injection earns: its outcome, the wins and the losses it adds to its lesson.
Credit = tuple[str, float, int]


def confidence(wins: float, losses: int, prior: float,
               prior_weight: float = PRIOR_WEIGHT) -> float:
    return (wins + prior_weight * prior) / (wins + losses + prior_weight)


def for_failure(injected_fingerprint: str, fingerprint: str) -> Credit:
    """The iteration failed with ``fingerprint``: a loss for its own lesson, wins for others."""
    return ("loss", 0.0, 1) if injected_fingerprint == fingerprint else ("win", 1.0, 0)


def for_success(injected: int) -> Credit:
    """The iteration succeeded: the ``injected`` lessons shown before it share one win."""
    return ("shared", 1.0 / injected, 0)
