"""The block's text: short items, each true of the failure it is shown with, error text
quoted as data, this run's failures first and lessons in what they leave of the budget.

A heuristic hint is rendered here, at recall, from the fields of the failure the item
shows (its group's latest occurrence), never from the prose stored with the first
failure of its fingerprint. A model's, a person's or an imported lesson is shown as
written: review already required it to be general.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Sequence

from reflect.base.records import Failure, Lesson, Recall, RecallItem
from reflect.base.text import clip, one_line
from reflect.capture import commands, own_module
from reflect.capture.defuse import neutralize
from reflect.capture.fingerprint import family_template
from reflect.capture.heuristics import heuristic_lesson
from reflect.capture.resolution import shown_fix
from reflect.recall.worked import Record, masked, told, what_worked

RECENT_HEADER = "PAST FAILURES TO AVOID:"
LESSONS_HEADER = "LESSONS FROM EARLIER RUNS:"
HOUSE_HEADER = "HOUSE RULES"
MASKED = {"<x>": "…", "<n>": "N", "<path>": "PATH", "<str>": "…"}
RECENT_ITEM_TOKENS = 60
LESSON_ITEM_TOKENS = 80
ACTION_CHARS = 50  # of the failed command, in an item's first line
MESSAGE_CHARS = 70
MIN_LINE = 40  # a line is never cut shorter than this to fit its item
FIX_CHARS = 170  # of a house rule's fix: its latest steps, never a command cut

def estimate_tokens(text: str) -> int:
    """About four characters a token: close enough for a budget, and needs no tokenizer."""
    return (len(text) + 3) // 4


def quoted(text: str, limit: int = MESSAGE_CHARS) -> str:
    """Tool output as a JSON string literal: one line, its quotes escaped, plainly data;
    neutralized before it is cut to ``limit``, as a cut could leave half a marker unread."""
    return json.dumps(clip(neutralize(text), limit), ensure_ascii=False)


def code(text: str) -> str:
    return "`" + neutralize(one_line(text)).replace("`", "'") + "`"


def hint(lesson: Lesson | None, failure: Failure | None) -> str:
    """What to do about ``failure``: its own heuristic hint, or the lesson as written."""
    if lesson is None:
        return ""
    if lesson["kind"] == "heuristic" and failure is not None:
        return _heuristic_hint(failure["error_type"], failure["message"], failure["action"],
                               failure["phase"], failure["exit_code"], _own_module(failure))
    return lesson["guidance"]


def _own_module(failure: Failure) -> bool:
    """Capture classed a missing module the run's own as an environment matter; or what
    fixed it later made it (``mkdir reproduce_app``), a step capture could not see."""
    if failure["category"] == "environment":
        return True
    name = own_module.missing_module(failure["message"])
    fix = shown_fix(failure["resolution"])
    return bool(name and fix) and own_module.named(name, [fix])


@functools.lru_cache(maxsize=1024)  # a loop recalls the same failures again and again
def _heuristic_hint(error_type: str, message: str, action: str, phase: str,
                    exit_code: int | None, own_module: bool) -> str:
    return heuristic_lesson(error_type, message, action, phase, exit_code,
                            own_module).guidance


def failure_line(failure: Failure) -> str:
    """The failed command and its error, both cut short."""
    # every field is neutralized: a crash file's error class is the caller's text too
    what = (f"{neutralize(failure['error_type'])}: "
            f"{quoted(failure['message'])}")
    if failure["action"].strip():  # neutralized before it is cut short, as the message is
        what = f"{code(commands.brief(neutralize(failure['action']), ACTION_CHARS))} -> {what}"
    return what


def recent_item_text(failure: Failure, count: int, lesson: Lesson | None, shown_failed: int,
                     escalate_after: int) -> str:
    """This run's failure (the latest of its group of ``count``); ``shown_failed``: how
    often in this run it failed again right after the block had shown it."""
    where = f"iteration {failure['iteration']}"
    if failure["phase"]:
        where += f", phase {clip(neutralize(failure['phase']), 20)}"
    if count > 1:
        where += f", failed {count}x"
    lesson_id = lesson["id"] if lesson else failure["lesson_id"]
    lines = [f"- [{lesson_id}] {where}: {failure_line(failure)}"]
    if text := hint(lesson, failure):
        lines.append(f"  Hint: {neutralize(text)}")
    if shown_failed >= escalate_after:
        lines.append(f"  REPEATED FAILURE: shown this, it failed the same way {shown_failed}x"
                     " in this run; try a different fix.")
    if failure["resolution"]:  # one review kept out is said so, never shown
        lines.append(f"  Fixed later by: {neutralize(failure['resolution'])}")
    return bounded(lines, RECENT_ITEM_TOKENS)


def trigger_line(failure: Failure) -> str:
    """When a lesson learnt from ``failure`` applies: its program failing with its error.
    Another run's command line is its own, not the trigger: it is left out."""
    # the error class neutralized as in a recent item: a crash file's is the caller's text
    what = (f"{neutralize(failure['error_type'])}: "
            f"{quoted(failure['message'])}")
    program = commands.shown_program(failure["action"])
    return (f"when {code(clip(neutralize(program), 30))} fails with {what}" if program
            else f"on {what}")


def lesson_item_text(lesson: Lesson, failure: Failure | None, why: str) -> str:
    """A lesson from earlier runs, and why it is shown: its trigger and guidance, for a
    heuristic one those of the failure it was learnt from (a model's or a person's lesson
    and a taught or imported one say their own)."""
    if failure is not None and lesson["kind"] == "heuristic":
        lines = [f"- [{lesson['id']}] {why}: {trigger_line(failure)}"]
        if text := hint(lesson, failure):
            lines.append(f"  Hint: {neutralize(text)}")
    else:
        lines = [f"- [{lesson['id']}] When {neutralize(lesson['trigger'])} ({why}):",
                 f"  {neutralize(lesson['guidance'])}"]
    resolution = shown_fix(failure["resolution"] if failure is not None
                           else lesson.get("resolution") or "")
    if resolution:
        lines.append(f"  What worked: {neutralize(resolution)}")
    return bounded(lines, LESSON_ITEM_TOKENS)


def house_header(earlier: int, project: bool) -> str:
    """The house rules' header: how many earlier runs they are from, and whose."""
    return f"{HOUSE_HEADER} (from {earlier} earlier runs{' of this project' if project else ''}):"


def house_item_text(lesson: Lesson, failure: Failure, failures: list[Failure], why: str,
                    record: Sequence[Record]) -> tuple[str, str]:
    """A house rule: the lesson of a family of mistakes, counted by ``why``, standing for
    ``failures`` (the family's latest in this scope, ``failure`` first); ``record``: what
    the family's runs in this scope did about it. Its count is the family's, so unless its
    trigger line is true of each of them (one cause may hold other numbers: `assert 3 == 2`,
    `assert 5 == 4`) it speaks at the family's level: its error with the subject masked.
    It says what to do: the fix that got most of this project's runs past it, with how
    many (``worked.what_worked``), else the hint most of its failures give; "" when it has
    neither: nothing to say is no house rule. With the text, the failure whose fix it tells
    ("" for none), which its provenance must hold."""
    if lesson["kind"] != "heuristic":
        return lesson_item_text(lesson, failure, why), ""
    family_level = len({trigger_line(f) for f in [failure, *failures]}) != 1
    if family_level:
        lines = [f"- [{lesson['id']}] {why}: on {neutralize(failure['error_type'])}: "
                 f"{quoted(_masked(failure['message']))}"]
    else:
        lines = [f"- [{lesson['id']}] {why}: {trigger_line(failure)}"]
    cause = [r for r in record if r["cause"] == failure.get("cause")]
    worked = (None if family_level else what_worked(cause, False)) or what_worked(record, True)
    if worked is not None:
        lines.append(f"  What worked in {worked.runs} of the {worked.hit} runs that hit it: "
                     f"{neutralize(told(worked.text, FIX_CHARS))}")
    elif text := _family_hint(lesson, [failure, *failures]):
        lines.append(f"  Hint: {neutralize(text)}")
    else:
        return "", ""
    return bounded(lines, LESSON_ITEM_TOKENS), worked.source if worked else ""


def _family_hint(lesson: Lesson, failures: list[Failure]) -> str:
    """The hint most of ``failures`` give, each with its own subject masked (``pip install
    <name>``); "" when no hint is most of theirs."""
    hints = Counter(masked(hint(lesson, f), f["message"]) for f in failures)
    text, n = hints.most_common(1)[0]
    return text if 2 * n > len(failures) else ""


def _masked(message: str) -> str:
    text = family_template(message)
    for mask, shown in MASKED.items():
        text = text.replace(mask, shown)
    return text


def bounded(lines: list[str], max_tokens: int) -> str:
    """The item's lines within ``max_tokens``. The first two (the failure, what to do)
    share the budget less what the later lines (what worked, an escalation) need at
    least, a line that fits in half keeping all of it; later lines get what is left,
    shortened to no less than ``MIN_LINE``."""
    lines = [one_line(line) if i == 0 else "  " + one_line(line) for i, line in enumerate(lines)]
    budget = 4 * max_tokens
    head, rest = lines[:2], lines[2:]
    # The head gives up what the later lines need at least: a fixed failure says so.
    head = _shared(head, max(budget - sum(min(len(line), MIN_LINE) + 1 for line in rest),
                             2 * MIN_LINE))
    for line in rest:
        room = budget - len("\n".join(head)) - 1
        if room >= min(len(line), MIN_LINE):
            head.append(clip(line, room))
    return "\n".join(head)


def _shared(head: list[str], budget: int) -> list[str]:
    """One or two lines within ``budget`` characters, a line that fits in half keeping
    all of it."""
    if len("\n".join(head)) <= budget:
        return head
    if len(head) == 1:
        return [clip(head[0], budget)]
    half = (budget - 1) // 2
    first, second = (len(line) for line in head)
    if first <= half:
        second = budget - 1 - first
    elif second <= half:
        first = budget - 1 - second
    else:
        first = second = half
    return [clip(head[0], first), clip(head[1], second)]


def fit(sections: list[tuple[str, list[RecallItem]]], max_tokens: int) -> Recall:
    """Each section's items in order while the block stays within ``max_tokens``: the
    first section (this run's failures) first, the next ones in what it leaves; a
    section without items has no header."""
    counts = [0] * len(sections)
    for index, (_, items) in enumerate(sections):
        while counts[index] < len(items):
            counts[index] += 1
            if estimate_tokens(_text(sections, counts)) > max_tokens:
                counts[index] -= 1
                break
    text = _text(sections, counts)
    kept = [item for (_, items), n in zip(sections, counts, strict=True) for item in items[:n]]
    return Recall(text=text, tokens=estimate_tokens(text), items=kept)


def _text(sections: list[tuple[str, list[RecallItem]]], counts: list[int]) -> str:
    return "\n".join(line for (header, items), n in zip(sections, counts, strict=True) if n
                     for line in (header, *(item.text for item in items[:n])))
