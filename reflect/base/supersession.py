"""How lessons replace each other: the one rule for supersession and the one for merging.

A fingerprint has at most one active lesson. A newer lesson supersedes it (the old one
stays in history) when ``may_supersede`` says so; a lesson that says what the active one
already says adds evidence to it instead of becoming a duplicate (``merges``); a
quarantined lesson is kept with its reason and never recalled. Every path that adds or
restores a lesson (the worker's model lessons, imports, ``teach``, ``release``) asks
these; the store applies them (``reflect.store._lessons``), and nothing here reads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SAME_MEANING = 0.6  # word-set overlap above which two guidances say the same thing
KIND_RANK = {"heuristic": 0, "model": 1, "taught": 2}
_WORD = re.compile(r"[a-z0-9_]+")


def similar(a: str, b: str) -> float:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def same_meaning(a: str, b: str) -> bool:
    return similar(a, b) >= SAME_MEANING


def may_supersede(current: Mapping[str, Any], new_kind: str, by_person: bool = False) -> bool:
    """May a new lesson of ``new_kind`` take ``current``'s place? A pinned lesson never
    gives way; a taught one only to a person's action (``teach``, ``release``); any other
    not to a lesser kind (taught > model > heuristic)."""
    if current["pinned"]:
        return False
    if by_person:
        return True
    return (current["kind"] != "taught"
            and KIND_RANK.get(current["kind"], 0) <= KIND_RANK[new_kind])


def merges(current: Mapping[str, Any], new_kind: str, guidance: str) -> bool:
    """Does a new lesson add evidence to ``current`` rather than replace it? When it says
    the same and is of no higher kind (a model's lesson replaces a heuristic one that
    says the same: it adds when it applies)."""
    return (same_meaning(current["guidance"], guidance)
            and KIND_RANK[new_kind] <= KIND_RANK.get(current["kind"], 0))
