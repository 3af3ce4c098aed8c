"""The block for the prompt: bounded lines, error text quoted as data, within a token budget."""

from __future__ import annotations

import json
import re

from reflect.records import Recall, RecallItem

RECENT_HEADER = "PAST FAILURES TO AVOID:"
MAX_LINE = 240

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


def bound(line: str, limit: int = MAX_LINE) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def recent_item_text(failure: dict, count: int, lesson: dict | None) -> str:
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
    if failure["resolution"]:
        lines.append(f"  Fixed later by: {code(failure['resolution'])}")
    return "\n".join(bound(line) for line in lines)


def fit(header: str, items: list[RecallItem], max_tokens: int) -> Recall:
    """Keep items in order while the block stays within ``max_tokens``."""
    kept: list[RecallItem] = []
    text = ""
    for item in items:
        candidate = "\n".join([header, *(i.text for i in kept), item.text])
        if estimate_tokens(candidate) > max_tokens:
            break
        kept.append(item)
        text = candidate
    return Recall(text=text, tokens=estimate_tokens(text), items=kept)
