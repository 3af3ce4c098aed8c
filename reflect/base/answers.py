"""What ``Memory``'s inspection methods answer: ``status``, ``stats``, ``lesson``,
``injections``, ``consolidate``, ``progress``. An answer is a frozen dataclass whose
``to_dict()`` is what ``--format json`` prints (its fields at the top level of one JSON
object); what it holds inside may be a typed dict (a job, a provenance's failure)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from reflect.base.records import Lesson


@dataclass(frozen=True)
class Answer:
    """A dataclass answer, read by attribute (``mem.status().jobs``)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- status ---------------------------------------------------------------------------


class Footprint(TypedDict):
    """Where the store is (a file, or a database's URL without its password), its size
    on disk and how many failures it holds."""

    path: str
    bytes: int
    failures: int


class StoreState(Footprint):
    max_failures: int | None  # the newest failures upkeep keeps; None: no bound
    kept_aside: int  # captures kept aside while the store was away, not replayed yet


class FailedJob(TypedDict):
    id: int
    kind: str  # reflect | embed
    target: str
    run: str
    state: str  # failed | skipped
    attempts: int
    reason: str
    updated: float


@dataclass(frozen=True)
class Status(Answer):
    """The queue, the workers, the model and its spend, the store."""

    model: str | None  # None: no model is called
    embeddings: str | None  # the embedding model; "off"; None: no vectors yet
    jobs: dict[str, int]  # state -> jobs
    failed_jobs: list[FailedJob]  # the latest that failed or were skipped
    spend_today_usd: float
    calls_today: int
    max_cost_usd: float | None
    workers_alive: int
    store: StoreState
    quarantined: int  # lessons kept for a person, never recalled


# -- stats and the injection log ------------------------------------------------------


@dataclass(frozen=True)
class Stats(Answer):
    """Failures counted by category, error type and run (one run's with ``run=``)."""

    failures: int
    by_category: dict[str, int]
    by_error_type: dict[str, int]  # the most common first
    most_common_error: str | None
    by_run: dict[str, int]
    benign: int  # exits that answered a question: kept, counted, never shown


@dataclass(frozen=True)
class Injection(Answer):
    """What recall put into a prompt (the injection log): one item of a block."""

    id: int
    run: str
    iteration: int
    lesson_id: str
    fingerprint: str
    section: str  # recent | lesson
    rank: int
    score: float
    tokens: int  # the whole block's
    ts: float
    outcome: str  # "" until the iteration ends, then how it went


# -- one lesson with its provenance ---------------------------------------------------


class SourceFailure(TypedDict):
    id: str
    run: str
    iteration: int
    error_type: str
    message: str


class LessonVersion(TypedDict):
    """Another lesson of the same fingerprint: what it replaced or what replaced it."""

    id: str
    kind: str
    status: str
    guidance: str


class Provenance(TypedDict):
    failures: list[SourceFailure]  # its fingerprint's latest failures
    outcomes: dict[str, int]  # outcome of its injections -> count
    history: list[LessonVersion]


class ArmRate(TypedDict):
    runs: int
    hits: int  # runs its family followed in
    rate: float
    interval: list[float]  # Wilson's, [low, high]


class Measured(TypedDict):
    """What the holdout measured of a lesson: its family's rate in the runs shown it and
    in those kept from it."""

    lesson_id: str
    family: str
    verdict: str  # promoted | demoted | "" (not judged yet, or nothing clear)
    predicted: float
    shown: ArmRate
    withheld: ArmRate
    effect: float  # the withheld rate minus the shown rate
    effect_interval: list[float]


@dataclass(frozen=True)
class LessonDetail(Lesson):
    """A lesson, where it comes from, and (``holdout``) its measured effect, if it was
    ever eligible."""

    failures: list[SourceFailure] = field(default_factory=list)  # its cause's latest
    outcomes: dict[str, int] = field(default_factory=dict)  # of its injections -> count
    history: list[LessonVersion] = field(default_factory=list)
    holdout: Measured | None = None


# -- upkeep and progress --------------------------------------------------------------


@dataclass(frozen=True)
class Consolidation(Answer):
    """What upkeep let go (``reflect consolidate``)."""

    removed_lessons: list[str]  # ids
    deleted_failures: int
    deleted_injections: int
    reclaimed_bytes: int


@dataclass(frozen=True)
class RunRepeats:
    """One run: its failures, those seen before (in it or an earlier run), and what was
    injected into its prompts."""

    run: str
    first_ts: float
    failures: int
    repeats: int
    lessons_injected: int
    tokens_injected: int
    repeat_rate: float


@dataclass(frozen=True)
class Pooled:
    """A group of runs: its repeats over its failures."""

    failures: int
    repeats: int
    repeat_rate: float
    runs: int


@dataclass(frozen=True)
class Progress(Answer):
    """Repeat rates run by run (``reflect progress``): early runs against recent ones
    (each a third of the runs) once there are ``min_runs``, else None."""

    runs: list[RunRepeats]  # in the order of their first activity
    min_runs: int
    enough_data: bool
    failures: int
    repeats: int
    repeat_rate: float
    lessons_injected: int
    tokens_injected: int
    early: Pooled | None
    recent: Pooled | None
