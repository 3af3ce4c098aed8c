"""What an agent was already shown: a block of only what it has not read yet.

An item is known by what it stands for (its section, its lesson and the failures behind
it), not by its words: a failure that happened again is new (its count has grown), the
same item worded anew (a line shortened to fit, a failure fixed since: the agent ran the
fix and read its result) is not. The digests are all a caller keeps.
"""

from __future__ import annotations

from reflect.base.digest import blake2b

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from reflect.base.records import Recall, RecallItem


def unseen(rec: Recall, shown: set[str]) -> tuple[str, list[str]]:
    """The block of what ``rec`` holds that ``shown`` (digests) does not, and the digests
    of the items it adds."""
    new: list[RecallItem] = []
    digests: list[str] = []
    for item in rec.items:
        key = digest("\0".join([item.section, item.id, *item.source_failure_ids]))
        if key not in shown:
            new.append(item)
            digests.append(key)
    if new == rec.items:
        return rec.text, digests
    from reflect.recall.render import fit

    sections: dict[str, list[RecallItem]] = {}
    for item in new:  # each under the header it had in the block (house rules keep theirs)
        sections.setdefault(_header(rec.text, item.id), []).append(item)
    return fit(list(sections.items()), max(rec.tokens, 1)).text, digests


def _header(text: str, lesson_id: str) -> str:
    """The header line above the item of ``lesson_id`` in the block ``text``."""
    before = text[:max(text.find(f"- [{lesson_id}]"), 0)].splitlines()
    return next((line for line in reversed(before) if line and not line.startswith(" ")
                 and not line.startswith("- ")), "")


def digest(text: str) -> str:
    return blake2b(text.encode(), digest_size=8).hexdigest()
