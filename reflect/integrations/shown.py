"""What an agent was already shown: a block of only the items it has not read yet.

An item is known by a digest of its text, so a failure shown again with something new
("failed 2x", "Fixed later by") counts as new; the digests are all a caller keeps.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reflect.base.records import Recall, RecallItem


def unseen(rec: Recall, shown: set[str]) -> tuple[str, list[str]]:
    """The block of the items of ``rec`` whose digests are not in
    ``shown``, and the digests of those items."""
    new = [item for item in rec.items if digest(item.text) not in shown]
    digests = [digest(item.text) for item in new]
    if len(new) == len(rec.items):
        return rec.text, digests
    from reflect.recall.render import fit

    sections: dict[str, list[RecallItem]] = {}
    for item in new:  # each under the header it had in the block (house rules keep theirs)
        sections.setdefault(_header(rec.text, item.text), []).append(item)
    return fit(list(sections.items()), max(rec.tokens, 1)).text, digests


def _header(text: str, item: str) -> str:
    """The header line above ``item`` in the block ``text``."""
    before = text[:max(text.find(item), 0)].splitlines()
    return next((line for line in reversed(before) if line and not line.startswith(" ")
                 and not line.startswith("- ")), "")


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
