"""The records the API hands out: plain dataclasses, JSON-ready via ``asdict``."""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base32: no i, l, o, u


def new_id(prefix: str) -> str:
    """``F-…`` a failure, ``L-…`` a lesson: a person can tell them apart and type them.
    Ten base32 characters (50 bits) keep a store of millions free of collisions."""
    return f"{prefix}-{''.join(secrets.choice(ID_ALPHABET) for _ in range(10))}"


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
    # (``recall.holdout.Eligible``): the log's, not the prompt's.
    eligible: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        items = [i.to_dict() for i in self.items]
        return {"text": self.text, "tokens": self.tokens, "items": items}
