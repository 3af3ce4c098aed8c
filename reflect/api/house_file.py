"""The house rules where every agent already reads: a marked section of a file such as
AGENTS.md or CLAUDE.md, kept current by ``reflect rules --write`` and checked by ``--check``.

Agents without hooks (and Codex where its hooks are not trusted) read these files at no
cost per call. The section holds the house rules as recall shows a new run of the project
them: the same selection and rendering (``learn.house_block``), each saying what to do,
scrubbed and reviewed as every text that reaches a prompt, and scrubbed once more here,
since the file is committed. It stands between two marker lines, and nothing outside them
is ever changed: a file without them gets the section at its end; one whose markers are
broken (one without the other, out of order, twice) is refused and left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reflect.api.exchange import write_atomically

if TYPE_CHECKING:
    from reflect.api.memory import Memory

BEGIN = "<!-- reflect:house-rules -->"
END = "<!-- /reflect:house-rules -->"
INTRO = ("What earlier agent runs of this project hit most, and what to do about each, "
         "from its failure memory (`reflect rules --write` keeps this section current; "
         "edit outside its markers).")
NONE_YET = "No house rules yet: a mistake becomes one once two runs of the project hit it."


class MarkersBroken(ValueError):
    """A file's markers do not enclose one section: the file is left as it was."""


@dataclass(frozen=True)
class Section:
    text: str  # the section, markers included, lines ending in "\n"
    rules: list[str]  # each house rule's item, as recall shows it


def section(mem: Memory) -> Section:
    """The section for the house rules a new run of ``mem``'s project is shown first."""
    from reflect.api.learn import house_block
    from reflect.api.memory import port

    inside = port(mem)
    rec = house_block(mem, inside)
    block = inside.scrubber.scrub(rec.text)[0] if rec.text else NONE_YET
    text = "\n".join([BEGIN, "## House rules", "", INTRO, "", block, END]) + "\n"
    return Section(text, [inside.scrubber.scrub(item.text)[0] for item in rec.items])


def write(path: Path, new: Section) -> bool:
    """Put the section into the file at ``path`` (made when missing); False when it
    already held it. Raises ``MarkersBroken`` and changes nothing when its markers are."""
    old = _read(path)
    text = _placed(path, old or "", new.text)
    if text == old:
        return False
    write_atomically(path, text)
    return True


def stale(path: Path, new: Section) -> str:
    """Why the file's section is not ``new``'s ("" when it is current). Raises
    ``MarkersBroken`` when its markers are."""
    old = _read(path)
    if old is None:
        return "no such file"
    if _span(path, old) is None:
        return "no house-rules section"
    return "" if _placed(path, old, new.text) == old else "its house rules are out of date"


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as f:  # its line endings as they are
            return f.read()
    except FileNotFoundError:
        return None


def _placed(path: Path, text: str, new: str) -> str:
    """``text`` with ``new`` in place of its section (after it when it has none), in the
    file's own line endings."""
    if "\r\n" in text:
        new = new.replace("\n", "\r\n")
    span = _span(path, text)
    if span is not None:
        lines = text.splitlines(keepends=True)
        begin, end = span
        return "".join([*lines[:begin], new, *lines[end + 1:]])
    if not text:
        return new
    newline = "\r\n" if "\r\n" in text else "\n"
    return text + ("" if text.endswith("\n") else newline) + newline + new


def _span(path: Path, text: str) -> tuple[int, int] | None:
    """The lines (0-based) of the section's markers; None when there are none."""
    lines = text.splitlines()
    begins = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if not begins and not ends:
        return None
    if len(begins) == 1 and len(ends) == 1 and begins[0] < ends[0]:
        return begins[0], ends[0]
    found = ", ".join([*(f"{BEGIN} on line {i + 1}" for i in begins),
                       *(f"{END} on line {i + 1}" for i in ends)])
    raise MarkersBroken(
        f"{path}: its reflect markers do not enclose one section ({found}); leave one "
        f"{BEGIN} line and one {END} line after it (or neither, and the section is added "
        "at the end), then run this again; the file was not changed")
