"""The block for the prompt: bounded lines, error text quoted as data, within a token budget."""

from __future__ import annotations

import json
import re

from reflect.records import Recall, RecallItem
from reflect.text import clip

RECENT_HEADER = "PAST FAILURES TO AVOID:"
LESSONS_HEADER = "LESSONS FROM EARLIER RUNS:"
MAX_LINE = 240
BRIEF = 120  # a lesson's trigger and what worked: enough to recognise them
LATER_SHARE = 0.4

# Tool output can carry text aimed at the model reading the prompt. Such lines
# are shown defused, never as instructions.
_INSTRUCTION_LIKE = re.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^\n]{0,40}?\b(?:instructions?|prompts?|rules|guidelines)\b"
    r"|\byou are now\b|\bsystem prompt\b|\bnew instructions?\b"
    r"|^\s*(?:system|assistant|user)\s*:|</?\s*(?:system|instructions?)\s*>",
    re.IGNORECASE | re.MULTILINE,
)
NEUTRALIZED = "[instruction-like text removed]"


def estimate_tokens(text: str) -> int:
    """About four characters a token: close enough for a budget, and needs no tokenizer."""
    return (len(text) + 3) // 4


def neutralize(text: str) -> str:
    return _INSTRUCTION_LIKE.sub(NEUTRALIZED, text)


def quoted(text: str) -> str:
    """Tool output as a JSON string literal: one line, its quotes escaped, plainly data."""
    return json.dumps(neutralize(text), ensure_ascii=False)


def code(text: str) -> str:
    return "`" + neutralize(" ".join(text.split())).replace("`", "'") + "`"



def repeated(lesson: dict | None, escalate_after: int) -> str:
    """The mark of a hint that keeps failing: the agent should try something else."""
    if lesson is None or lesson["losses"] < escalate_after:
        return ""
    return (f"  REPEATED FAILURE: this hint did not prevent it {lesson['losses']} times;"
            " try a different fix.")


def recent_item_text(failure: dict, count: int, lesson: dict | None,
                     escalate_after: int) -> str:
    where = f"iteration {failure['iteration']}"
    if failure["phase"]:
        where += f", phase {failure['phase']}"
    if count > 1:
        where += f", failed {count}x"
    what = f"{failure['error_type']}: {quoted(failure['message'])}"
    if failure["action"]:
        what = f"{code(failure['action'])} -> {what}"
    lesson_id = lesson["id"] if lesson else failure["lesson_id"]
    lines = [f"- [{lesson_id}] {where}: {what}"]
    if lesson is not None:
        lines.append(f"  Hint: {neutralize(lesson['guidance'])}")
    if mark := repeated(lesson, escalate_after):
        lines.append(mark)
    if failure["resolution"]:
        lines.append(f"  Fixed later by: {code(failure['resolution'])}")
    return "\n".join(clip(line, MAX_LINE) for line in lines)


def lesson_item_text(lesson: dict, runs: int, escalate_after: int) -> str:
    """A lesson from another run: when it applies and what to do, with the trigger and
    what worked cut short, since the guidance is what the agent needs from it."""
    seen = f" (seen in {runs} runs)" if runs > 1 else ""
    lines = [f"- [{lesson['id']}] When {clip(neutralize(lesson['trigger']), BRIEF)}{seen}:",
             f"  {neutralize(lesson['guidance'])}"]
    if mark := repeated(lesson, escalate_after):
        lines.append(mark)
    if lesson["resolution"]:
        lines.append(clip(f"  What worked: {code(lesson['resolution'])}", BRIEF))
    return "\n".join(clip(line, MAX_LINE) for line in lines)


def fit(sections: list[tuple[str, list[RecallItem]]], max_tokens: int) -> Recall:
    """Keep each section's items in order while the block stays within ``max_tokens``;
    a section without items has no header. The sections after the first keep up to
    ``LATER_SHARE`` of the budget for their first items: on a long run this run's
    failures would fill the block, and one more of them is worth less than the lesson
    from earlier runs that would otherwise never be seen."""
    counts = [0] * len(sections)

    def grow(index: int, limit: int) -> None:
        while counts[index] < len(sections[index][1]):
            counts[index] += 1
            if estimate_tokens(_text(sections, counts)) > limit:
                counts[index] -= 1
                return

    for index in range(1, len(sections)):
        grow(index, int(max_tokens * LATER_SHARE))
    for index in range(len(sections)):
        grow(index, max_tokens)
    text = _text(sections, counts)
    kept = [item for (_, items), n in zip(sections, counts, strict=True) for item in items[:n]]
    return Recall(text=text, tokens=estimate_tokens(text), items=kept)


def _text(sections: list[tuple[str, list[RecallItem]]], counts: list[int]) -> str:
    return "\n".join(line for (header, items), n in zip(sections, counts, strict=True) if n
                     for line in (header, *(item.text for item in items[:n])))
