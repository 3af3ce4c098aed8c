"""Moving lessons between stores, and into a team's repository as house rules.

``export_lessons`` writes the confident lessons as markdown (for people) or
JSON lines (for ``import_lessons`` in another store). An import file is
untrusted: every line is validated, its texts scrubbed again and checked
against ``review.HOSTILE`` (a hostile lesson is stored quarantined, with the
reason, for a person to release), and a bad line is reported by number while
the rest is imported.

Decisions:

- Scope is exported as it is. A project scope is a hash of the repository's
  remote ``owner/name``, so the same repository cloned elsewhere has the same
  scope and its lessons stay with it; ``global`` lessons apply everywhere.
- A fingerprint has one active lesson, and the rules of ``reflect.base.supersession`` say
  what an imported one does to it, as they do for a model's lesson. One that
  says what the active one says, and is of no higher kind, is merged into it
  (``lessons.merges``): evidence adds up, confidence is the higher one.
  Otherwise it supersedes the active lesson unless that lesson is pinned, taught
  or of a higher kind (``lessons.may_supersede``; taught > model > heuristic):
  a person's or a model's lesson is never replaced by a file; the imported one
  is then ``skipped``, as is one that says what a quarantined lesson of its
  fingerprint says.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

from reflect.base.choices import EXPORT_FORMATS
from reflect.base.records import LessonRow, RankedLessonRow, new_lesson
from reflect.base.supersession import KIND_RANK
from reflect.base.text import clip, counted, one_line
from reflect.capture.heuristics import CATEGORIES, GUIDANCE_MAX, SEVERITIES, TRIGGER_MAX
from reflect.capture.review import reviewed_texts
from reflect.index import atomic
from reflect.store.protocol import LessonStore

if TYPE_CHECKING:
    from reflect.base.answers import Measured

__all__ = ["FORMATS", "ImportReport", "export_lessons", "import_lessons", "write_atomically"]

FORMATS = EXPORT_FORMATS  # defined with the CLI's other choices
TEXT_MAX = 1000  # resolution and error text: a line, not a log
LINE_MAX = 20_000  # characters of one JSON line: bounds the work on a hostile file
_FINGERPRINT = re.compile(r"(?:taught:)?[0-9a-f]{16}")  # taught lessons: by trigger
_SCOPE = re.compile(r"global|project:[0-9a-f]{12,64}")


# -- export ---------------------------------------------------------------------


def export_lessons(store: LessonStore, fmt: str, min_confidence: float = 0.5,
                   verdicts: dict[str, Measured] | None = None,
                   shown: Sequence[str] = ()) -> str:
    """The active lessons with confidence >= ``min_confidence``, plus every pinned or
    taught one and those of ``shown`` (ids: the house rules a recall shows first), best
    first; each says something (a hint or what worked); the same store always gives the
    same text. ``verdicts`` (lesson id -> ``holdout.Effect.to_dict``): the holdout's
    promoted lessons are the house rules, first, with what they were measured to change;
    its demoted ones are left out."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    verdicts = verdicts or {}
    proven = {i: v for i, v in verdicts.items() if v["verdict"] == "promoted"}
    rows = [r for r in store.confident_lessons(min_confidence, sorted({*proven, *shown}))
            if (r["id"] not in verdicts or verdicts[r["id"]]["verdict"] != "demoted")
            and (r["guidance"] or r["resolution"])]
    if fmt != "markdown":
        return "".join(_json_line(r) for r in rows)
    return _markdown([r for r in rows if r["id"] not in proven],
                     [(r, proven[r["id"]]) for r in rows if r["id"] in proven])


def _json_line(row: LessonRow) -> str:
    keys = ("fingerprint", "trigger", "guidance", "category", "severity", "kind", "confidence",
            "prior", "evidence", "resolution", "scope", "created", "updated")
    columns: Mapping[str, Any] = row
    record = {k: columns[k] for k in keys}
    record["pinned"] = bool(row["pinned"])
    record["error_text"] = row["error_text"]  # the error's words help keyword search there
    return json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n"


def _markdown(rows: list[RankedLessonRow],
              proven: list[tuple[RankedLessonRow, Measured]] | None = None) -> str:
    out = ["# Lessons from failures", "",
           "Exported by reflect: what coding agents learnt from their own failures, "
           "best first.", ""]
    if proven:
        out += ["## House rules: proven by the holdout", ""]
        for r, effect in sorted(proven, key=lambda pair: -pair[1]["effect"]):
            out.append(f"- **When** {one_line(r['trigger'])}: {one_line(r['guidance'])}")
            lo, _ = effect["effect_interval"]
            out.append(f"  `{r['id']}` · its cause followed in "
                       f"{100 * effect['withheld']['rate']:.0f}% of "
                       f"{effect['withheld']['runs']} runs without it, "
                       f"{100 * effect['shown']['rate']:.0f}% of {effect['shown']['runs']} "
                       f"with it (at least {100 * lo:.0f} points fewer)")
        out.append("")
    if not rows and not proven:
        out += ["No confident lessons yet.", ""]
    for category in sorted({r["category"] for r in rows}):
        out += [f"## {category.capitalize()}", ""]
        for r in (r for r in rows if r["category"] == category):
            out.append(f"- **When** {one_line(r['trigger'])}: {one_line(r['guidance'])}")
            notes = [f"`{r['id']}`"]
            if r["runs"]:  # an imported lesson may not have failed here yet
                notes.append(f"seen in {counted(r['runs'], 'run')}")
            notes.append(f"confidence {r['confidence']:.2f}")
            if r["pinned"]:
                notes.append("pinned")
            if r["kind"] == "taught":
                notes.append("taught")
            if r["resolution"]:
                notes.append(f"what worked: `{one_line(r['resolution']).replace('`', '')}`")
            out.append(f"  {' · '.join(notes)}")
        out.append("")
    return "\n".join(out)


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all, even if the process dies midway."""
    try:
        # A house-rules file is for the team to read, not private like a temporary file.
        atomic.write_atomically(path, text, new_mode=0o644)
    except OSError as e:
        raise OSError(f"cannot write {path}: {e.strerror or e}") from e


# -- import ---------------------------------------------------------------------


@dataclass
class ImportReport:
    imported: int = 0
    merged: int = 0
    skipped: int = 0
    quarantined: int = 0  # hostile: stored for a person to see, never recalled
    errors: list[tuple[int, str]] = field(default_factory=list)  # (line number, message)


class _Invalid(ValueError):
    pass


NOT_JSON = "not JSON"


def import_lessons(store: LessonStore, path: Path, scrub: Callable[[str], tuple[str, int]],
                   now: float) -> ImportReport:
    """Import a JSON-lines export into ``store`` in one transaction."""
    report = ImportReport()
    lessons: list[LessonRow] = []
    if not stat.S_ISREG(os.stat(path).st_mode):  # /dev/zero, a FIFO: may never end
        raise OSError(f"{path} is not a regular file; import a file written by "
                      "`reflect export --format jsonl -o FILE`")
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(_lines(f), 1):
            if not line.strip():
                continue
            try:
                lessons.append(_validate(line, scrub, now))
            except _Invalid as e:
                report.errors.append((number, str(e)))
    if not lessons and report.errors and all(e.startswith(NOT_JSON) for _, e in report.errors):
        raise _Invalid(f"{path} is not a JSON-lines export of lessons: `reflect import` takes"
                       " the file `reflect export --format jsonl -o FILE` writes (the markdown"
                       " export is for people to read)")
    for outcome in store.import_lessons(lessons, now):
        setattr(report, outcome, getattr(report, outcome) + 1)
    return report


def _lines(f: TextIO) -> Iterator[str]:
    """The file's lines, each read at most LINE_MAX + 1 characters deep: a longer one
    is cut there (and refused), the rest of it skipped."""
    while line := f.readline(LINE_MAX + 1):
        if len(line) > LINE_MAX and not line.endswith("\n"):
            while (rest := f.readline(LINE_MAX)) and not rest.endswith("\n"):
                pass
        yield line


def _validate(line: str, scrub: Callable[[str], tuple[str, int]], now: float) -> LessonRow:
    if len(line) > LINE_MAX:
        raise _Invalid(f"line longer than {LINE_MAX} characters")
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise _Invalid(f"{NOT_JSON} ({e.msg})") from None
    if not isinstance(data, dict):
        raise _Invalid(f"not a JSON object but {type(data).__name__}")
    fingerprint = _get(data, "fingerprint", str, None)
    if not _FINGERPRINT.fullmatch(fingerprint):
        raise _Invalid("fingerprint must be 16 lowercase hex characters (or taught: and 16)")
    scope = _get(data, "scope", str, "global")
    if not _SCOPE.fullmatch(scope):
        raise _Invalid("scope must be 'global' or 'project:<hex>'")
    kind = _get(data, "kind", str, "heuristic")
    if kind not in KIND_RANK:
        raise _Invalid(f"kind must be one of {', '.join(KIND_RANK)}")
    # What worked is shown to the agent as a lesson is: reviewed with it.
    texts, reason, _ = reviewed_texts({
        "trigger": (_get(data, "trigger", str, None), TRIGGER_MAX),
        "guidance": (_get(data, "guidance", str, ""), GUIDANCE_MAX),
        "resolution": (_get(data, "resolution", str, ""), TEXT_MAX)}, scrub)
    trigger, guidance = texts["trigger"], texts["guidance"]
    if not trigger or not (guidance or texts["resolution"]):  # a lesson says what to do
        raise _Invalid("trigger and guidance (or resolution: what worked) must not be empty")
    category = _get(data, "category", str, "general")
    severity = _get(data, "severity", str, "medium")
    confidence = _unit(_get(data, "confidence", float, 0.5), "confidence")
    evidence = _get(data, "evidence", int, 1)
    if evidence < 1:
        raise _Invalid("evidence must be at least 1")
    return new_lesson(
        fingerprint=fingerprint, trigger=trigger, guidance=guidance,
        category=category if category in CATEGORIES else "general",
        severity=severity if severity in SEVERITIES else "medium",
        kind=kind, confidence=confidence, now=now, scope=scope,
        prior=_unit(_get(data, "prior", float, confidence), "prior"), evidence=evidence,
        resolution=texts["resolution"],
        error_text=_clean(_get(data, "error_text", str, ""), scrub, TEXT_MAX),
        pinned=_get(data, "pinned", bool, False),
        # A lesson is as old as it is where it was learnt (recall's freshness decay).
        created=min(_get(data, "created", float, now), now),
        updated=min(_get(data, "updated", float, now), now),
        quarantine=reason, origin="imported")


_T = TypeVar("_T")


def _get(data: dict[str, Any], key: str, kind: type[_T], default: _T | None) -> _T:
    """``data[key]`` of type ``kind`` (an int is a float; a bool is neither), or
    ``default``; a missing field with no default is an error."""
    value = data.get(key)
    if value is None:
        if default is None:
            raise _Invalid(f"missing {key}")
        return default
    ok = {float: (int, float), int: (int,)}.get(kind, (kind,))
    if isinstance(value, bool) is not (kind is bool) or not isinstance(value, ok):
        raise _Invalid(f"{key} must be {'a number' if kind is float else kind.__name__}")
    if kind is float:
        number = cast(float, value)  # an int or a float: checked above
        if not math.isfinite(number):
            raise _Invalid(f"{key} must be a finite number")
        return cast(_T, float(number))
    return cast(_T, value)  # of type kind: checked above


def _unit(value: float, key: str) -> float:
    if not 0.0 <= value <= 1.0:
        raise _Invalid(f"{key} must be between 0 and 1")
    return value


def _clean(text: str, scrub: Callable[[str], tuple[str, int]], limit: int) -> str:
    # Scrub the whole text before trimming, so a cut cannot split a secret past a rule.
    return clip(one_line(scrub(text)[0]), limit, at_word=True)
