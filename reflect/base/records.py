"""The records that cross a boundary. The API hands out plain dataclasses, JSON-ready via
``asdict`` (``ErrorEntry``, ``Lesson``, ``Recall``), never a row; the store takes and gives
typed rows (``FailureRow``, ``LessonRow``, ``InjectionRow``), dicts whose keys are the
columns, so mypy checks every look-up. A new lesson is built in one place, ``new_lesson``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, NotRequired, Self, TypedDict

ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base32: no i, l, o, u

# The run's next number counts on from its highest iteration below this: one a harness
# gave past it (2**31 - 1) is kept on its row but numbers nothing after it, or every later
# capture would land on the largest number there is. No run counts that far one by one.
COUNTED_BELOW = 10**6


def new_id(prefix: str) -> str:
    """``F-…`` a failure, ``L-…`` a lesson: a person can tell them apart and type them.
    Ten base32 characters (50 bits) keep a store of millions free of collisions. Five
    random bits a character, from os.urandom as secrets would take them (secrets loads
    hmac, and with it OpenSSL: ~3 ms of a hook's capture)."""
    bits = int.from_bytes(os.urandom(7), "big")
    return f"{prefix}-{''.join(ID_ALPHABET[(bits >> 5 * i) & 31] for i in range(10))}"


class FailureRow(TypedDict):
    """A failure as the store holds it (the ``failures`` table): every text scrubbed."""

    id: str
    run: str
    iteration: int | None  # None until the store numbers it in its run
    ts: float
    goal: str
    phase: str
    action: str
    exit_code: int | None
    error_type: str
    message: str
    signature: str
    friction: str
    fingerprint: str
    source: str  # crash | text | exception | synthesized
    redactions: int
    category: str
    severity: str
    seq: NotRequired[int]  # the store's order; the rest it derives or links when it stores
    lesson_id: NotRequired[str]
    resolution: NotRequired[str]
    cause: NotRequired[str]
    family: NotRequired[str]
    step: NotRequired[str | None]  # the step's key (``tool_calls.step_key``), if it has one


class LessonRow(TypedDict):
    """A lesson as the store holds it (the ``lessons`` table). ``new_lesson`` builds one;
    the columns it leaves out the store fills with their defaults."""

    id: str
    fingerprint: str
    trigger: str
    guidance: str
    category: str
    severity: str
    kind: str  # heuristic | model | taught
    confidence: float
    created: float
    updated: float
    scope: str
    prior: NotRequired[float]
    evidence: NotRequired[int]
    error_text: NotRequired[str]
    resolution: NotRequired[str]
    quarantine: NotRequired[str]  # why it is kept out of recall; "" when it is not
    pinned: NotRequired[int]
    origin: NotRequired[str]  # here | taught | imported
    model: NotRequired[str]
    prompt_tokens: NotRequired[int | None]
    completion_tokens: NotRequired[int | None]
    cost_usd: NotRequired[float | None]
    seq: NotRequired[int]
    status: NotRequired[str]  # active | superseded | quarantined
    superseded_by: NotRequired[str]
    wins: NotRequired[float]
    losses: NotRequired[int]
    injected: NotRequired[int]
    last_used: NotRequired[float]


class InjectionRow(TypedDict):
    """What recall put into a prompt (the ``injections`` table): one item of a block."""

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


class RankedLessonRow(LessonRow):
    """A lesson with the number of runs its cause failed in, as an export ranks them."""

    runs: int


def new_lesson(*, fingerprint: str, trigger: str, guidance: str, kind: str, scope: str,
               now: float, confidence: float, category: str = "general",
               severity: str = "medium", created: float | None = None,
               updated: float | None = None,
               prior: float | None = None, evidence: int | None = None,
               error_text: str | None = None, resolution: str | None = None,
               quarantine: str | None = None, pinned: bool | None = None,
               origin: str | None = None) -> LessonRow:
    """A lesson not yet stored, with a new id. A column given as None is left to the
    store's default (prior 0.5, evidence 1, "" texts, not pinned, learnt here)."""
    lesson: LessonRow = {
        "id": new_id("L"), "fingerprint": fingerprint, "trigger": trigger,
        "guidance": guidance, "category": category, "severity": severity, "kind": kind,
        "confidence": confidence, "created": now if created is None else created,
        "updated": now if updated is None else updated, "scope": scope}
    if prior is not None:
        lesson["prior"] = prior
    if evidence is not None:
        lesson["evidence"] = evidence
    if error_text is not None:
        lesson["error_text"] = error_text
    if resolution is not None:
        lesson["resolution"] = resolution
    if quarantine is not None:
        lesson["quarantine"] = quarantine
    if pinned is not None:
        lesson["pinned"] = int(pinned)
    if origin is not None:
        lesson["origin"] = origin
    return lesson


@dataclass
class ErrorEntry:
    """One captured failure, as stored (every text field already scrubbed)."""

    failure_id: str
    fingerprint: str
    run: str
    iteration: int
    seq: int
    ts: float
    error_type: str
    message: str
    signature: str
    phase: str
    goal: str
    action: str
    exit_code: int | None
    source: str  # crash | text | exception | synthesized
    redactions: int
    category: str
    severity: str
    lesson_id: str
    friction: str = ""
    resolution: str = ""
    hint: str = ""  # the guidance of the fingerprint's lesson

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Lesson:
    """A lesson as the API hands it out (``Memory.lessons``, ``search_lessons``,
    ``feedback``): the columns of its row, read by attribute. ``to_dict()`` is what
    ``--format json`` prints."""

    id: str
    fingerprint: str
    trigger: str
    guidance: str
    category: str
    severity: str
    kind: str  # heuristic | model | taught
    confidence: float
    created: float
    updated: float
    scope: str
    status: str = "active"  # active | superseded | quarantined
    quarantine: str = ""  # why it is kept out of recall
    pinned: int = 0
    origin: str = "here"  # here | taught | imported
    prior: float = 0.5
    evidence: int = 1
    error_text: str = ""
    resolution: str = ""  # what worked
    superseded_by: str = ""
    wins: float = 0.0
    losses: int = 0
    injected: int = 0
    last_used: float = 0.0
    model: str = ""  # the model that wrote it, if one did
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    seq: int = 0

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Self:
        """The record of a stored row (and of what a subclass adds beside it); columns the
        record does not name are left out."""
        return cls(**{f.name: row[f.name] for f in fields(cls) if f.name in row})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RecallItem:
    section: str  # "recent" | "lesson"
    id: str  # the lesson id a person can act on
    text: str
    fingerprint: str
    source_failure_ids: list[str]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Recall:
    text: str = ""
    tokens: int = 0
    items: list[RecallItem] = field(default_factory=list)
    # Each lesson of an earlier run this block would show, with its holdout arm
    # (``Eligible``): the log's, not the prompt's.
    eligible: list[Eligible] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        items = [i.to_dict() for i in self.items]
        return {"text": self.text, "tokens": self.tokens, "items": items}


@dataclass(frozen=True)
class Eligible:
    """A lesson of an earlier run that recall would show, and what became of it."""

    lesson_id: str
    family: str
    arm: str  # shown | withheld | promoted | demoted
    predicted: float  # the predictor's p(family) when it was chosen


# -- the job queue (its rules: ``reflection.queue``; its state: the store) --------------


@dataclass
class Job:
    id: int
    kind: str
    target: str
    run: str
    attempts: int


@dataclass(frozen=True)
class Verdict:
    """What becomes of a leased job: it ends ``done``, ``failed`` or ``skipped`` with its
    reason, or is ``queued`` again at ``due``; ``attempt=False`` puts it back untouched
    (the try did not use up an attempt)."""

    state: str
    reason: str = ""
    due: float = 0.0
    attempt: bool = True


DONE = Verdict("done")
