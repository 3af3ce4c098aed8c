"""``Settings``: how a ``Memory`` behaves, read from the environment once, at the library's
boundary, and validated there. After a ``Memory`` is made, nothing it does reads the
environment again: the worker, the block, upkeep and the doctor take these values."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from reflect.base import config
from reflect.recall.holdout import Holdout
from reflect.reflection.consolidation import Upkeep
from reflect.reflection.queue import POLL, Retries
from reflect.store import open_store

if TYPE_CHECKING:
    from pathlib import Path

    from reflect.recall.predict import Predictor
    from reflect.store import Store


@dataclass(frozen=True)
class Settings:
    """How a ``Memory`` behaves, beyond which store it opens and which models it may call
    (those are ``Memory``'s own keywords; ``open_store`` is how it opens it). A field left
    at its default takes its environment variable's value when the ``Memory`` is made
    (``with_env``)."""

    # Load the embedding model here, once, on the first recall whose goal has no cached
    # vector; False never loads it here: cached vectors are used, the rest is queued.
    embed_here: bool = True
    worker_thread: bool = False  # run the worker in a daemon thread of this process
    # False keeps the injection log but credits no outcome to a lesson: for replays of
    # recorded agents, which never saw what was injected.
    credit: bool = True
    predictor: Predictor | None = None  # the prediction's thresholds; None: the default
    # The share of runs kept from a lesson of earlier runs, to measure what it changes
    # (REFLECT_HOLDOUT, default 0); a ``Holdout`` gives the rule that judges too.
    holdout: float | Holdout = 0.0
    scrub_patterns: tuple[str, ...] = ()  # patterns scrubbed beside the built-in rules
    busy_timeout: float = 5.0  # seconds a step waits for a store another process holds
    close_timeout: float = 2.0  # seconds ``close`` gives a worker thread to finish its job
    clock: Callable[[], float] = time.time
    # Times a run may fail the same way right after being shown the hint before the item
    # is marked REPEATED FAILURE (REFLECT_ESCALATE_AFTER, at least 1).
    escalate_after: int = 2
    # Earlier runs of like goals the default predictor compares a run with
    # (REFLECT_SIMILAR_RUNS; 0: on the public data sets they did not improve its score).
    similar_runs: int = 0
    # Days without use over which a lesson's confidence halves (REFLECT_HALF_LIFE_DAYS).
    half_life_days: float = Upkeep.half_life_days
    # Failures the store keeps, the newest (REFLECT_MAX_FAILURES; 0: no bound).
    max_failures: int = config.DEFAULT_MAX_FAILURES
    start_worker: bool = True  # capture may start a detached worker (REFLECT_WORKER=off)
    # A hook refuses a command that just failed when nothing that could change its outcome
    # ran since (REFLECT_REFUSE_REPEATS=off: it is told so instead).
    refuse_repeats: bool = True
    # A job's attempts and backoff, a provider's breaker.
    retries: Retries = field(default_factory=Retries)
    worker_poll: float = POLL  # seconds a worker waits before it looks at the queue again
    # How the store is opened, from its directory, URL and ``busy_timeout``: by this
    # ``Memory`` and by the workers it runs (a detached worker opens its own). A test gives
    # a fake store here (tests/fake_store.py); nothing patches the backends.
    open_store: Callable[[Path, str, float], Store] = open_store

    def __post_init__(self) -> None:
        for name, (_, _, valid, meaning) in ENVIRONMENT.items():
            value = getattr(self, name)
            if not valid(value):
                raise ValueError(f"Settings({name}={value!r}): {meaning}")

    @property
    def upkeep(self) -> Upkeep:
        return Upkeep(self.half_life_days, self.max_failures or None)

    def with_env(self, env: Mapping[str, str]) -> Settings:
        """These settings, each field left at its default taken from its environment
        variable, checked: a value out of range is said once, naming the variable and its
        range, and the default stands (a setting never breaks the agent loop)."""
        given = {f.name: getattr(self, f.name) for f in fields(self)
                 if getattr(self, f.name) != f.default}
        found: dict[str, Any] = {}
        for name, (variable, read, valid, meaning) in ENVIRONMENT.items():
            raw = env.get(variable, "").strip()
            if name in given or not raw:
                continue
            try:
                value = read(raw)
            except ValueError:
                value = None
            if value is None or not valid(value):
                config.warn(f"{variable}={raw!r} is not {meaning}; using the default")
                continue
            found[name] = value
        return replace(self, **found)

    def environ(self) -> dict[str, str]:
        """The variables ``with_env`` reads these settings' values back from (those a
        variable can hold: a whole ``Holdout`` rule or a predictor cannot travel so)."""
        values = {name: getattr(self, name) for name in ENVIRONMENT}
        if isinstance(values["holdout"], Holdout):
            values["holdout"] = values["holdout"].p
        for switch in ("start_worker", "refuse_repeats"):
            values[switch] = "on" if values[switch] else "off"
        return {variable: str(values[name]) for name, (variable, *_) in ENVIRONMENT.items()}


def _share(value: object) -> bool:
    p = value.p if isinstance(value, Holdout) else value
    return isinstance(p, int | float) and 0.0 <= p < 1.0


def _switch(off: set[str]) -> Callable[[str], bool]:
    return lambda raw: raw.lower() not in off


# Each field the environment may set: its variable, how it is read, when it is valid, and
# what a valid value is (said when it is not).
ENVIRONMENT: dict[str, tuple[str, Callable[[str], Any], Callable[[Any], bool], str]] = {
    "holdout": ("REFLECT_HOLDOUT", float, _share, "a share: 0 <= p < 1 (0.1 is usual)"),
    "escalate_after": ("REFLECT_ESCALATE_AFTER", int, lambda n: n >= 1,
                       "a whole number of failures, at least 1"),
    "similar_runs": ("REFLECT_SIMILAR_RUNS", int, lambda n: n >= 0,
                     "a whole number of runs, 0 or more"),
    "half_life_days": ("REFLECT_HALF_LIFE_DAYS", float, lambda d: 0 < d < float("inf"),
                       "a number of days above 0"),
    "max_failures": ("REFLECT_MAX_FAILURES", int, lambda n: n >= 0,
                     "a whole number of failures, 0 or more (0: no bound)"),
    "start_worker": ("REFLECT_WORKER", _switch({"off", "0", "false", "no"}),
                     lambda b: isinstance(b, bool), "on or off"),
    "refuse_repeats": ("REFLECT_REFUSE_REPEATS", _switch({"off", "0", "false", "no"}),
                       lambda b: isinstance(b, bool), "on or off"),
}
