"""Turn whatever a harness hands us into the fields of an error entry.

Sources, in order of preference for the error itself: a Python exception, raw
error output, a crash record, and, when none of them says anything, a
synthesized entry from phase and exit code. Nothing here is stored or
scrubbed yet: ``Memory.capture`` does both.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Any, TypedDict, cast

from reflect.base import lazy
from reflect.base.records import FailureRow, LessonRow, new_id, new_lesson
from reflect.base.text import clip, format_error
from reflect.capture.extract import MAX_MESSAGE, Extracted, extract_exception, extract_text
from reflect.capture.fingerprint import cause, family, fingerprint
from reflect.capture.heuristics import (
    CATEGORIES,
    GUIDANCE_MAX,
    SEVERITIES,
    TRIGGER_MAX,
    heuristic_lesson,
)
from reflect.capture.numbers import bounded, whole_number
from reflect.capture.reading import read_bounded
from reflect.capture.review import reviewed_texts
from reflect.capture.scrub import Scrubber
from reflect.capture.tool_calls import STEP_KEY, step_key

MAX_ERROR_BYTES = 64 * 1024  # a tail this long always holds the error that ended the run
MAX_FIELD = 4000
HEURISTIC_CONFIDENCE = 0.5

# Crash records carry much more (environment, argv, paths); only these survive.
CRASH_FIELDS = {
    "error_class": "error_type",
    "errorClass": "error_type",
    "error_type": "error_type",
    "stack_signature": "signature",
    "stackSignature": "signature",
    "phase": "phase",
    "friction_kind": "friction",
    "frictionKind": "friction",
    "exit_code": "exit_code",
    "exitCode": "exit_code",
    "fingerprint": "fingerprint",
}


# `a > b > c`, not the arrow of code (`=>`, `->`): splitting `'api_secret' => '…'` would
# part a secret from its key before the scrub.
_FRAME_SEPARATOR = lazy.compile(r"(?<![=-])>")


@dataclass
class Parsed:
    source: str  # crash | text | exception | synthesized
    error: Extracted
    phase: str
    exit_code: int | None
    friction: str = ""
    harness_fingerprint: str = ""


def whitelist_crash(record: object) -> dict[str, Any]:
    """Keep the whitelisted fields of a crash record, with our names; drop the rest."""
    if not isinstance(record, dict):
        raise ValueError(f"a crash record must be a JSON object, got {type(record).__name__}")
    kept: dict[str, int | str] = {}
    for key, name in CRASH_FIELDS.items():
        value = record.get(key)
        if value is None or name in kept:
            continue
        if name == "exit_code":
            if (number := whole_number(value)) is not None:
                kept[name] = number  # bounded by parse, with the exit code given directly
        else:
            kept[name] = str(value)  # the file is bounded; the capture scrubs, then cuts
    return kept


def parse(
    *,
    phase: str,
    exit_code: int | None,
    error_text: str | None = None,
    crash: dict[str, Any] | None = None,
    exc: BaseException | None = None,
) -> Parsed:
    crash = whitelist_crash(crash) if crash else {}
    phase = phase or crash.get("phase", "")
    if exit_code is None:
        exit_code = crash.get("exit_code")
    exit_code = bounded(exit_code, "exit code")
    friction = crash.get("friction", "")
    harness_fp = crash.get("fingerprint", "")

    def parsed(source: str, error: Extracted) -> Parsed:
        return Parsed(source, error, phase, exit_code, friction, harness_fp)

    if exc is not None:
        return parsed("exception", extract_exception(exc))
    found = extract_text(error_text) if error_text else None
    if found is not None:
        return parsed("text", found)
    if crash.get("error_type"):
        frames = tuple(f.strip() for f in _FRAME_SEPARATOR.split(crash.get("signature", ""))
                       if f.strip())
        described = friction and f" ({friction})"
        error = Extracted(
            error_type=crash["error_type"],
            message=f"{crash['error_type']}{described} in {phase or 'an iteration'}",
            frames=frames,
        )
        return parsed("crash", error)
    return parsed("synthesized", synthesize(phase, exit_code, friction))


def nothing_said(error_text: str | None, exit_code: object, crash: dict[str, Any]) -> bool:
    """Whether a capture was given nothing that says a step failed, or how: no error text,
    no exit code, no crash record (``reflect capture </dev/null``). Recorded, it would
    become a failure of no cause, and several of them a house rule."""
    return not (error_text or "").strip() and exit_code is None and not crash


def synthesize(phase: str, exit_code: int | None, friction: str = "") -> Extracted:
    """The entry for a failure that left no error text (telemetry off, silent crash)."""
    code = "an unknown exit code" if exit_code is None else f"exit code {exit_code}"
    detail = f" ({friction})" if friction else ""
    return Extracted(
        error_type="Synthesized",
        message=f"{phase or 'iteration'} failed with {code}{detail} and no error output",
    )


def tail_of(data: bytes, limit: int = MAX_ERROR_BYTES) -> bytes:
    """At most the last ``limit`` bytes of output, from the first whole line when it had to
    be cut: what the cut left of the line it fell in could be the end of a secret its
    pattern no longer finds (a password without its URL's ``://``)."""
    return data if len(data) <= limit else data[-limit:].partition(b"\n")[2]


def decode_tail(data: bytes) -> tuple[str, list[str]]:
    """Decode the bounded tail of error output; report what had to be mended."""
    problems = []
    if len(data) > MAX_ERROR_BYTES:
        data = tail_of(data)
        problems.append(f"error output over {MAX_ERROR_BYTES // 1024} KB: kept its last part")
    if b"\x00" in data:
        data = data.replace(b"\x00", b"")
        problems.append("error output looks binary: kept its text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        problems.append("error output is not valid UTF-8: undecodable bytes replaced")
    return text, problems


def read_error_file(path: str, stdin: IO[Any] | None = None) -> tuple[str | None, list[str]]:
    """Read the tail of an error file (``-`` is stdin), in bounded time and memory."""
    try:
        data, notes = read_bounded(path, MAX_ERROR_BYTES, tail=True, stdin=stdin)
    except OSError as e:
        return None, [f"cannot read error file {path}: {e.strerror or e}; recorded without it"]
    text, problems = decode_tail(data)
    return text, [f"error file {path}: {note}" for note in notes] + problems


def read_crash_file(path: str) -> tuple[dict[str, Any], list[str]]:
    try:
        raw, _ = read_bounded(path, MAX_ERROR_BYTES, tail=False)
    except OSError as e:
        return {}, [f"cannot read crash file {path}: {e.strerror or e}; recorded without it"]
    if len(raw) > MAX_ERROR_BYTES:
        return {}, [f"crash file {path} is over {MAX_ERROR_BYTES // 1024} KB; recorded without it"]
    try:
        record = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as e:
        return {}, [f"crash file {path} is not valid JSON ({e}); recorded without it"]
    if not isinstance(record, dict):
        return {}, [f"crash file {path} is not a JSON object; recorded without it"]
    return record, []


def scrubbed(scrubber: Scrubber, text: str | None, limit: int = MAX_FIELD) -> tuple[str, int]:
    """``text`` as a capture keeps it, and its redactions: scrubbed, then cut (a cut first
    could hide a secret from its pattern: a URL's ``@host``, a key block's END line)."""
    clean, n = scrubber.scrub(text or "")
    return clip(clean, limit), n


class Causes(TypedDict):
    cause: str
    family: str


def causes(error_type: str, message: str) -> Causes:
    """The failure's cause and family (``reflect.capture.fingerprint``): the store counts
    how widely a mistake recurs by them."""
    return {"cause": cause(error_type, message), "family": family(error_type, message)}


def entry_rows(parsed: Parsed, *, run: str, iteration: int | None, goal: str, action: str,
               scrubber: Scrubber, scope: str, now: float,
               own_module: bool = False, step: str | None = None) -> tuple[FailureRow, LessonRow]:
    """The failure and heuristic-lesson rows: every field scrubbed, the scrubbed error
    fingerprinted, the lesson written from the error's own details (``own_module``: the
    module it could not import is the run's own, ``reflect.capture.own_module``); ``step``
    the client's id of the call, which the store knows it by."""
    redactions = 0

    def scrub(text: str, limit: int = MAX_FIELD) -> str:
        nonlocal redactions
        clean, n = scrubbed(scrubber, text, limit)
        redactions += n
        return clean

    error = parsed.error
    fields = {
        "goal": scrub(goal),
        "phase": scrub(parsed.phase),
        "action": scrub(action),
        "error_type": scrub(error.error_type),
        "message": scrub(error.message, MAX_MESSAGE),
        "signature": scrub(error.signature),
        "friction": scrub(parsed.friction),
    }
    frames = tuple(f for f in fields["signature"].split(" > ") if f)
    if parsed.harness_fingerprint:  # the harness already knows which failures are one
        frames = (scrub(parsed.harness_fingerprint),)
    fp = fingerprint(fields["error_type"], fields["message"], frames)
    hint = heuristic_lesson(
        fields["error_type"], fields["message"], fields["action"], fields["phase"],
        parsed.exit_code, own_module,
    )
    # It quotes the error and the action: reviewed as every other lesson is, so a hostile
    # one is stored quarantined, never recalled in another run.
    texts, quarantine, _ = reviewed_texts(
        {"trigger": (hint.trigger, TRIGGER_MAX), "guidance": (hint.guidance, GUIDANCE_MAX)},
        scrubber.scrub)
    lesson = new_lesson(
        fingerprint=fp, trigger=texts["trigger"], guidance=texts["guidance"],
        category=hint.category, severity=hint.severity, kind="heuristic",
        confidence=HEURISTIC_CONFIDENCE, now=now, scope=scope,
        error_text=format_error(fields["error_type"], fields["message"]),
        quarantine=quarantine)
    found = causes(fields["error_type"], fields["message"])
    failure: FailureRow = {
        "id": new_id("F"),
        "run": scrub(run),
        "iteration": iteration,
        "ts": now,
        "goal": fields["goal"],
        "phase": fields["phase"],
        "action": fields["action"],
        "error_type": fields["error_type"],
        "message": fields["message"],
        "signature": fields["signature"],
        "friction": fields["friction"],
        "exit_code": parsed.exit_code,
        "fingerprint": fp,
        "cause": found["cause"],
        "family": found["family"],
        "source": parsed.source,
        "redactions": redactions,
        "category": hint.category,
        "severity": hint.severity,
    }
    failure["step"] = step_key(failure["run"], step)
    return failure, lesson


# The failure's texts a capture scrubs (entry_rows' fields, and the run).
SCRUBBED = ("run", "goal", "phase", "action", "error_type", "message", "signature", "friction")


def kept_rows(failure: FailureRow, lesson: LessonRow,
              scrubber: Scrubber) -> tuple[FailureRow, LessonRow]:
    """A capture kept aside (``reflect.store.pending``), as ``entry_rows`` would have made
    it: a file on disk is read as untrusted as an error text. Every text scrubbed again,
    the lesson's reviewed (a hostile one quarantined) and made a heuristic lesson again,
    whatever else the record claims (a kind, a pin, a confidence)."""
    texts = {key: scrubbed(scrubber, str(failure.get(key) or ""))[0] for key in SCRUBBED}
    failure = cast(FailureRow, {**failure, **texts})
    key = failure.get("step")
    failure["step"] = key if isinstance(key, str) and STEP_KEY.fullmatch(key) else None
    found = causes(failure["error_type"], failure["message"])
    failure["cause"], failure["family"] = found["cause"], found["family"]
    texts, quarantine, _ = reviewed_texts(
        {"trigger": (str(lesson.get("trigger") or ""), TRIGGER_MAX),
         "guidance": (str(lesson.get("guidance") or ""), GUIDANCE_MAX)}, scrubber.scrub)
    category, severity = lesson.get("category"), lesson.get("severity")
    reviewed = new_lesson(
        fingerprint=failure["fingerprint"], trigger=texts["trigger"],
        guidance=texts["guidance"], kind="heuristic", confidence=HEURISTIC_CONFIDENCE,
        category=category if category in CATEGORIES else "general",
        severity=severity if severity in SEVERITIES else "medium",
        now=float(failure["ts"]), scope=str(lesson.get("scope") or "global"),
        error_text=format_error(failure["error_type"], failure["message"]),
        quarantine=quarantine or str(lesson.get("quarantine") or ""))
    return failure, {**reviewed, "id": str(lesson["id"])}


def kept_outcome(outcome: dict[str, Any], scrubber: Scrubber) -> dict[str, Any]:
    """An outcome kept aside (``reflect.store.pending``), read back as untrusted as an error
    text: its run and action scrubbed and cut as ``Memory.outcome`` makes them, and each
    text of what worked reviewed and scrubbed as a lesson's (a live one is made of the
    run's own scrubbed commands; a file could say anything): a hostile one is left out."""
    def scrub(key: str) -> str:
        return clip(scrubber.scrub(str(outcome.get(key) or ""))[0], MAX_FIELD)

    worked = {}
    for failure_id, text in dict(outcome["resolutions"]).items():
        texts, quarantine, _ = reviewed_texts({"resolution": (str(text), MAX_FIELD)},
                                              scrubber.scrub)
        if not quarantine:
            worked[str(failure_id)] = texts["resolution"]
    step = outcome.get("step")
    return {**outcome, "run": scrub("run"), "action": scrub("action"), "resolutions": worked,
            "step": step if isinstance(step, str) and STEP_KEY.fullmatch(step) else None}
