"""Other readings of a text, in which a secret that the text cut or encoded is whole again:
lines a terminal or a tool wrapped, joined; percent-escapes decoded. The scrubber scans a
view with its rules and redacts what it finds where it lies in the text itself.

A view is a list of pieces: runs copied from the text as they are, and characters that
stand for more of the text than they show (a decoded escape) or that join two runs across
what was left out (the newline of a wrap)."""

from __future__ import annotations

import bisect
import re

from reflect.base import lazy
from reflect.base.named import NamedTuple

# A terminal wraps a long line wherever its width ends, maybe inside a token; a tool may
# lead the continuation with an indent, or end the line with a backslash. A full line that
# runs straight into the next, no space either side, may hold half a secret (a URL's `&`
# and `?` are part of what a cut may fall inside; a bracket only beside a digit, as in a
# telephone number's `(415) 555-0132`: code's lines end in brackets).
_TOKEN_CHAR = r"[\w+/=.:@~%$&?\"'>\\-]"
_TOKEN = lazy.compile(_TOKEN_CHAR)
_NEWLINE = lazy.compile(r"(\\?)\r?\n")
_ESCAPE = lazy.compile(r"%[0-9A-Fa-f]{2}|\+")
_HAS_ESCAPE = lazy.compile(r"%[0-9A-Fa-f]{2}")
_SPACE = lazy.compile(r"\s")


# A named tuple and a plain class, not dataclasses: a PreToolUse hook scrubs its command,
# and needs nothing else that would load dataclasses (with inspect, ~5 ms).
class Wraps(NamedTuple):
    """Which lines are taken for wrapped: in a block of two or more lines of one width
    (at least ``min_width`` columns), every line but the last, even where the cut fell
    beside a space; elsewhere a line that a token runs out of and into the next, when
    it is at least ``min_cut`` columns long, or ``min_width`` and the next line no wider
    (narrower lines ended for a reason of their own)."""

    min_width: int = 20
    min_cut: int = 40


class View:
    def __init__(self, text: str) -> None:
        self.text = text  # the text this view reads
        self.seen: list[str] = []  # the view's pieces
        self.starts: list[int] = []  # where each piece starts in the view
        self.sources: list[tuple[int, int]] = []  # its span in the text
        self.size = 0

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


def unwrapped(text: str, wraps: Wraps) -> list[View]:
    """The text with its wrapped lines joined, read as cut (inside a token, or beside a
    space where a line leads with more than the continuations' indent) and, where one
    line leads with an indent no other shares, as cut beside a space (a lone
    continuation, whose indent cannot tell); none when no line looks wrapped."""
    if "\n" not in text:
        return []
    newlines = list(_NEWLINE.finditer(text))
    starts = [0, *(m.end() for m in newlines)]  # where each line starts
    # a line's width holds its closing backslash
    widths = [m.end(1) - a for m, a in zip(newlines, starts, strict=False)]
    widths.append(len(text) - starts[-1])
    joints: list[tuple[int, int]] = []
    i = 0
    while i < len(newlines):
        # a block: two or more lines of one width, and the line after them
        j = i
        while j < len(newlines) and widths[j] == widths[i] >= wraps.min_width and (
                widths[j + 1] == widths[i] or j > i):
            j += 1
        if j > i:
            # a backslash closes every line of a block it continues; else it is text
            kept = 0 if all(m[1] for m in newlines[i:j]) else 1
            joints += [(m.start() + kept * len(m[1]), (_joint(text, m) or m.span())[1])
                       for m in newlines[i:j]]
            i = j
            continue
        # one line cut in two: the cut one is wide, or narrower but the rest no wider
        # (a terminal's continuation never is)
        if widths[i] >= wraps.min_cut or wraps.min_width <= widths[i] >= widths[i + 1]:
            joint = _joint(text, newlines[i])
            if joint is not None:
                joints.append(joint)
        i += 1
    if not joints:
        return []
    indents = [len(text[a:b]) - len(text[a:b].rstrip(" \t")) for a, b in joints]
    lead = min((n for n in indents if n >= 2), default=0)  # the continuations' own indent
    as_cut = [" " if lead and n > lead else "" for n in indents]
    # An indent no other cut shares may hold the space the cut fell beside: read both ways
    # (a traceback's indents repeat, and are read once).
    once = {n for n in indents if indents.count(n) == 1}
    spaced = [" " if n >= 2 and n in once else sep for n, sep in zip(indents, as_cut, strict=True)]
    views = [_joined(text, joints, as_cut)]
    return views if spaced == as_cut else [*views, _joined(text, joints, spaced)]


def _joined(text: str, joints: list[tuple[int, int]], seps: list[str]) -> View:
    """The text with each joint's span read as its separator."""
    view, done = View(text), 0
    for (a, b), sep in zip(joints, seps, strict=True):
        view.add(text[done:a], done, a)
        view.add(sep, a, b)
        done = b
    view.add(text[done:], done, len(text))
    return view


def _leading(text: str, start: int) -> str:
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _joint(text: str, newline: re.Match[str]) -> tuple[int, int] | None:
    """The span a wrap left at this newline, if it looks like one: a token runs on
    either side, or one space stands beside it (the cut fell next to a space, which
    the text keeps). Two or more spaces (or a tab) after it are a continuation's
    indent."""
    before = text[newline.start() - 1:newline.start()]
    indent = _leading(text, newline.end())
    after = text[newline.end() + len(indent):newline.end() + len(indent) + 1]
    if _runs_on(before, after):
        return newline.start(), newline.end() + (0 if indent == " " else len(indent))
    if before == " " and indent != " " and _runs_on(
            text[newline.start() - 2:newline.start() - 1], after):
        return newline.start(), newline.end() + len(indent)
    return None


def _runs_on(before: str, after: str) -> bool:
    """Whether the character before a cut can run on into the one after it: both of a
    token, or a bracket beside a digit."""
    if _TOKEN.fullmatch(before or "\n") and _TOKEN.fullmatch(after or "\n"):
        return True
    pair = before + after
    return len(pair) == 2 and any(c in "()" for c in pair) and any(c.isdigit() for c in pair)


def percent_decoded(text: str) -> View | None:
    """The text with its percent-escapes (and a form's `+` for a space) decoded; None
    when it holds no escape, nor a `+` with no space anywhere (a form's body). An escape
    of a byte past ASCII stays as it is."""
    if _HAS_ESCAPE.search(text) is None and not ("+" in text and _SPACE.search(text) is None):
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
