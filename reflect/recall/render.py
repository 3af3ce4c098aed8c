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
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from reflect.base.records import FailureRow, LessonRow, Recall, RecallItem
from reflect.base.text import clip, one_line
from reflect.capture import commands, own_module
from reflect.capture.defuse import neutralize
from reflect.capture.fingerprint import family_template
from reflect.capture.heuristics import heuristic_lesson
from reflect.capture.resolution import shown_fix
from reflect.recall.predict import by
from reflect.recall.worked import Record, masked, rewrote_its_script, told, what_worked

RECENT_HEADER = "PAST FAILURES TO AVOID:"
LESSONS_HEADER = "LESSONS FROM EARLIER RUNS:"
HOUSE_HEADER = "HOUSE RULES"
FIXED = "Fixed later by: "  # a recent item's line once a later step fixed its failure
MASKED = {"<x>": "…", "<n>": "N", "<path>": "PATH", "<str>": "…"}
RECENT_ITEM_TOKENS = 80  # a crowded item (an escalation, a fix) keeps its hint's command
LESSON_ITEM_TOKENS = 80
HINT_TOKENS = 35  # more for a house rule that tells a hint beside its fix
ACTION_CHARS = 50  # of the failed command, in an item's first line
MESSAGE_CHARS = 70
# A crowded item's first line: its error text shortened first, then its command.
SQUEEZES = ((ACTION_CHARS, MESSAGE_CHARS), (ACTION_CHARS, 35), (25, 20))
MIN_LINE = 40  # a line is never cut shorter than this to fit its item
FIX_CHARS = 170  # of a house rule's fix: its latest steps, never a command cut
_Row = TypeVar("_Row", bound=Mapping[str, Any])  # a failure, as the store gives one


def estimate_tokens(text: str) -> int:
    """About four characters a token: close enough for a budget, and needs no tokenizer."""
    return (len(text) + 3) // 4


def quoted(text: str, limit: int = MESSAGE_CHARS) -> str:
    """Tool output as a JSON string literal: one line, its quotes escaped, plainly data;
    neutralized before it is cut to ``limit`` at a word boundary, as a cut could leave half a
    marker unread."""
    return json.dumps(clip(neutralize(text), limit, at_word=True), ensure_ascii=False)


def code(text: str) -> str:
    return "`" + neutralize(one_line(text)).replace("`", "'") + "`"


def hint(lesson: LessonRow | None, failure: FailureRow | None) -> str:
    """What to do about ``failure``: its own heuristic hint, or the lesson as written."""
    if lesson is None:
        return ""
    if lesson["kind"] == "heuristic" and failure is not None:
        return _heuristic_hint(failure["error_type"], failure["message"], failure["action"],
                               failure["phase"], failure["exit_code"], _own_module(failure))
    return lesson["guidance"]


def _own_module(failure: FailureRow) -> bool:
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


def failure_line(failure: FailureRow, action_chars: int = ACTION_CHARS,
                 message_chars: int = MESSAGE_CHARS) -> str:
    """The failed command and its error, both cut short at word boundaries."""
    what = error_line(failure, message_chars)
    if failure["action"].strip():
        what = f"{code(commands.brief(neutralize(failure['action']), action_chars))} -> {what}"
    return what


def error_line(failure: FailureRow, message_chars: int = MESSAGE_CHARS) -> str:
    # every field is neutralized: a crash file's error class is the caller's text too
    return f"{neutralize(failure['error_type'])}: {quoted(failure['message'], message_chars)}"


def recent_item_text(failure: FailureRow, count: int, lesson: LessonRow | None, shown_failed: int,
                     escalate_after: int) -> str:
    """This run's failure (the latest of its group of ``count``); ``shown_failed``: how
    often in this run it failed again right after the block had shown it."""
    where = f"iteration {failure['iteration']}"
    if failure["phase"]:
        where += f", phase {clip(neutralize(failure['phase']), 20)}"
    if count > 1:
        where += f", failed {count}x"
    lesson_id = lesson["id"] if lesson else failure["lesson_id"]
    firsts = [f"- [{lesson_id}] {where}: {failure_line(failure, *squeeze)}"
              for squeeze in SQUEEZES]
    lines = [f"Hint: {neutralize(text)}"] if (text := hint(lesson, failure)) else []
    escalation = ""
    if failure["resolution"]:  # fixed since: no call for a different fix
        lines.append(FIXED + neutralize(failure["resolution"]))
    elif shown_failed >= escalate_after:
        escalation = (f"REPEATED FAILURE: shown this, it failed the same way {shown_failed}x"
                      " in this run; try a different fix.")
        lines.append(escalation)
    return bounded(firsts, lines, RECENT_ITEM_TOKENS, whole=escalation)


def trigger_line(failure: FailureRow, message_chars: int = MESSAGE_CHARS) -> str:
    """When a lesson learnt from ``failure`` applies: its program failing with its error.
    Another run's command line is its own, not the trigger: it is left out."""
    what = error_line(failure, message_chars)
    program = commands.shown_program(failure["action"])
    return (f"when {code(clip(neutralize(program), 30))} fails with {what}" if program
            else f"on {what}")


def lesson_item_text(lesson: LessonRow, failure: FailureRow | None, why: str) -> str:
    """A lesson from earlier runs, and why it is shown: its trigger and guidance, for a
    heuristic one those of the failure it was learnt from (a model's or a person's lesson
    and a taught or imported one say their own)."""
    if failure is not None and lesson["kind"] == "heuristic":
        firsts = [f"- [{lesson['id']}] {why}: {trigger_line(failure, m)}" for _, m in SQUEEZES]
        lines = [f"Hint: {neutralize(text)}"] if (text := hint(lesson, failure)) else []
    else:
        firsts = [f"- [{lesson['id']}] When {neutralize(lesson['trigger'])} ({why}):"]
        lines = [neutralize(lesson["guidance"])] if lesson["guidance"] else []
    resolution = shown_fix(failure["resolution"] if failure is not None
                           else lesson.get("resolution") or "")
    if resolution:
        lines.append(f"What worked: {neutralize(resolution)}")
    return bounded(firsts, lines, LESSON_ITEM_TOKENS)


def house_header(earlier: int, project: bool) -> str:
    """The house rules' header: how many earlier runs they are from, and whose."""
    return f"{HOUSE_HEADER} (from {earlier} earlier runs{' of this project' if project else ''}):"


def house_item_text(lesson: LessonRow, failure: FailureRow, failures: list[FailureRow],
                    why: str, record: Sequence[Record], members: int = 0) -> tuple[str, str]:
    """A house rule: the lesson of a family of mistakes, counted by ``why``, standing for
    ``failures`` (the family's latest in this scope, ``failure`` first); ``record``: what
    the family's runs in this scope did about it. Its count is the family's, so unless its
    trigger line is true of each of them (one cause may hold other numbers: `assert 3 == 2`,
    `assert 5 == 4`) it speaks at the family's level: its error with the subject masked.
    It says what to do: the fix that got most of this project's runs past it, with how
    many (``worked.what_worked``; in a scope of several members, a fix of ``members`` of
    them, and by how many), else the hint most of its failures give (a family's fix and
    hint: those of its failures of ``failure``'s kind, ``_of_kind``), and both, the hint
    first, when the fix only rewrote the script it ran; "" when it has neither: nothing to
    say is no house rule. With the text, the failure whose fix it tells
    ("" for none), which its provenance must hold."""
    if lesson["kind"] != "heuristic":
        return lesson_item_text(lesson, failure, why), ""
    family_level = len({trigger_line(f) for f in [failure, *failures]}) != 1
    if family_level:
        firsts = [f"- [{lesson['id']}] {why}: on {neutralize(failure['error_type'])}: "
                  f"{quoted(_masked(failure['message']), m)}" for _, m in SQUEEZES]
    else:
        firsts = [f"- [{lesson['id']}] {why}: {trigger_line(failure, m)}" for _, m in SQUEEZES]
    cause = [r for r in record if r["cause"] == failure.get("cause")]
    worked = ((None if family_level else what_worked(cause, False, members))
              or what_worked(_of_kind(record, failure), True, members))
    fix = [] if worked is None else [
        f"What worked in {worked.runs} of the {worked.hit} runs that hit it"
        f"{by(worked.members if members else 0)}: {neutralize(told(worked.text, FIX_CHARS))}"]
    # The fix in place of the hint, unless all it did was rewrite the script it ran: the
    # hint, first, then says what the body no rule shows may have changed.
    if worked is not None and not rewrote_its_script(worked.text):
        lines = fix
    else:
        text = (_family_hint(lesson, _of_kind([failure, *failures], failure)) if family_level
                else hint(lesson, failure))
        lines = [*([f"Hint: {neutralize(text)}"] if text else []), *fix]
    if not lines:
        return "", ""
    return (bounded(firsts, lines, LESSON_ITEM_TOKENS + (len(lines) - 1) * HINT_TOKENS),
            worked.source if worked else "")


def _of_kind(rows: Sequence[_Row], failure: FailureRow) -> list[_Row]:
    """The failures of ``rows`` of ``failure``'s kind (its category), whose fix and hint a
    family's rule tells: a module the run makes is no package to install (`mkdir <name>`
    told for a missing `pytest`), however alike their errors read."""
    return [r for r in rows if r["category"] == failure["category"]]


def _family_hint(lesson: LessonRow, failures: list[FailureRow]) -> str:
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


def bounded(firsts: list[str], lines: list[str], max_tokens: int, whole: str = "") -> str:
    """The item within ``max_tokens``, no word or backticked command cut: its first line
    the longest of ``firsts`` (the failure, its error text and command shorter and
    shorter) that fits, its later ``lines`` each whole or shortened at a word boundary.
    Each line gets what it needs at least (``whole``, fixed wording, all of it; another
    ``MIN_LINE``), then what to do (the second line) all of it, then the first line its
    longer forms, then the other lines the rest."""
    budget = 4 * max_tokens
    firsts = [one_line(line) for line in firsts]
    later = ["  " + one_line(line) for line in lines]
    sizes = [len(text) if line == whole else min(len(text), MIN_LINE)
             for text, line in zip(later, lines, strict=True)]
    while later and budget - sum(size + 1 for size in sizes) < min(len(firsts[-1]), 2 * MIN_LINE):
        later, sizes = later[:-1], sizes[:-1]  # a last resort: the first line's shortest
    spare = budget - len(firsts[-1]) - sum(size + 1 for size in sizes)
    if later:
        sizes[0], spare = _grown(len(later[0]), sizes[0], spare)
    first = next((line for line in firsts if len(line) - len(firsts[-1]) <= spare), "")
    spare -= len(first) - len(firsts[-1])
    for i in range(1, len(later)):
        sizes[i], spare = _grown(len(later[i]), sizes[i], spare)
    room = budget - sum(size + 1 for size in sizes)
    return "\n".join([first or clip(firsts[-1], room, at_word=True),
                      *(clip(text, size, at_word=True)
                        for text, size in zip(later, sizes, strict=True))])


def _grown(length: int, size: int, spare: int) -> tuple[int, int]:
    """A line's size grown toward its ``length`` by what ``spare`` holds, and what is left."""
    more = max(min(length - size, spare), 0)
    return size + more, spare - more


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
