"""Other readings of a text, in which a secret that the text cut or encoded is whole again:
lines a terminal or a tool wrapped, joined; percent-escapes decoded. The scrubber scans a
view with its rules and redacts what it finds where it lies in the text itself.

A view is a list of pieces: runs copied from the text as they are, and characters that
stand for more of the text than they show (a decoded escape) or that join two runs across
what was left out (the newline of a wrap)."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from reflect import lazy

# A terminal wraps a long line wherever its width ends, maybe inside a token; a tool may
# lead the continuation with an indent, or end the line with a backslash. A full line that
# runs straight into the next, no space either side, may hold half a secret.
_TOKEN_CHAR = r"[\w+/=.:@~%-]"
_JOINT = lazy.compile(rf"(?<={_TOKEN_CHAR})(?:\\)?\r?\n[ \t]*(?={_TOKEN_CHAR})")
_NEWLINE = lazy.compile(r"\\?\r?\n")
_ESCAPE = lazy.compile(r"%[0-9A-Fa-f]{2}|\+")
_HAS_ESCAPE = lazy.compile(r"%[0-9A-Fa-f]{2}")


@dataclass(frozen=True)
class Wraps:
    """Which lines are taken for wrapped: a line at least ``min_width`` columns long
    (narrower ones ended for a reason of their own); and in a block of lines of one
    width, every line but the last, even where the cut fell beside a space."""

    min_width: int = 20


@dataclass
class View:
    text: str  # the text this view reads
    seen: list[str] = field(default_factory=list)  # the view's pieces
    starts: list[int] = field(default_factory=list)  # where each piece starts in the view
    sources: list[tuple[int, int]] = field(default_factory=list)  # its span in the text
    size: int = 0

    def add(self, piece: str, start: int, end: int) -> None:
        if piece:
            self.seen.append(piece)
            self.starts.append(self.size)
            self.sources.append((start, end))
            self.size += len(piece)

    def joined(self) -> str:
        return "".join(self.seen)

    def _piece(self, i: int) -> int:
        return bisect.bisect_right(self.starts, i) - 1

    def _copied(self, k: int) -> bool:
        a, b = self.sources[k]
        return b - a == len(self.seen[k]) and self.text[a:b] == self.seen[k]

    def span(self, start: int, end: int) -> tuple[int, int, bool]:
        """The text's span for the view's [start, end), and whether the view reads it
        otherwise than the text does (across a joint, or through an escape)."""
        first, last = self._piece(start), self._piece(end - 1)
        a = self.sources[first][0] + (start - self.starts[first] if self._copied(first) else 0)
        b = (self.sources[last][0] + end - self.starts[last] if self._copied(last)
             else self.sources[last][1])
        differs = first != last or not self._copied(first)
        return a, b, differs


def unwrapped(text: str, wraps: Wraps) -> View | None:
    """The text with its wrapped lines joined; None when no line looks wrapped."""
    if "\n" not in text:
        return None
    joints = [m for m in _JOINT.finditer(text) if _line_width(text, m.start()) >= wraps.min_width]
    joints += _block_joints(text, wraps, {m.start() for m in joints})
    if not joints:
        return None
    joints.sort(key=lambda m: m.start())
    view, done = View(text), 0
    for m in joints:
        view.add(text[done:m.start()], done, m.start())
        done = m.end()
    view.add(text[done:], done, len(text))
    return view


def _line_width(text: str, end: int) -> int:
    return end - text.rfind("\n", 0, end) - 1


def _block_joints(text: str, wraps: Wraps, taken: set[int]) -> list[re.Match[str]]:
    """The newlines of a block of lines of one width (two or more), whatever stands
    beside them: a tool that cuts at a fixed width cuts beside a space too."""
    newlines = list(_NEWLINE.finditer(text))
    widths = [_line_width(text, m.start()) for m in newlines]
    after = [*widths[1:], len(text) - newlines[-1].end()]
    return [m for i, (m, w) in enumerate(zip(newlines, widths, strict=True))
            if w >= wraps.min_width and m.start() not in taken
            and ((i and widths[i - 1] == w) or after[i] == w)]


def percent_decoded(text: str) -> View | None:
    """The text with its percent-escapes (and a form's `+` for a space) decoded; None
    when it holds no escape. An escape of a byte past ASCII stays as it is."""
    if _HAS_ESCAPE.search(text) is None:
        return None
    view, done = View(text), 0
    for m in _ESCAPE.finditer(text):
        char = " " if m[0] == "+" else chr(int(m[0][1:], 16))
        if not char.isascii():
            continue
        view.add(text[done:m.start()], done, m.start())
        view.add(char, m.start(), m.end())
        done = m.end()
    view.add(text[done:], done, len(text))
    return view
