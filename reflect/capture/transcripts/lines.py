"""A client's JSONL session file, read a line at a time in bounded memory.

A line that is not a JSON object is skipped and counted; so is a line longer than
``MAX_LINE`` (read through, never held). A last line without its newline is a line the
client is still writing: the file is read up to its last complete line. A file is read to
``MAX_LINES`` lines at most (blank ones too), so the work a file costs is bounded whatever
it holds; what was left is said.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from reflect.base import config
from reflect.capture.numbers import whole_number

MAX_LINE = 32 * 1024 * 1024  # a tool's output of this size is not a failure's message
CHUNK = 1024 * 1024
MAX_LINES = 1_000_000  # of one file: a long session writes tens of thousands

# Why a line was not read: the keys of ``Skipped``, as the summary says them.
MALFORMED = "lines that are not JSON (damaged)"
TOO_LONG = "lines too long for a tool call (read through, not held)"
UNFINISHED = "unfinished last lines (a session still being written: read up to them)"
UNREADABLE = "files that could not be read (each named in a warning)"
NOT_A_TRANSCRIPT = "files that are not a transcript (no JSON record)"


class Skipped(Counter[str]):
    """What was not read, by reason: lines, files and tool calls; and the files that
    could not be read, each said once."""

    def __init__(self) -> None:
        super().__init__()
        self.unreadable: set[Path] = set()

    def cannot_read(self, path: Path, error: OSError) -> None:
        """A file a read of failed: one warning line names it (a disk error names no
        file), and it is counted once however often it is tried."""
        if path not in self.unreadable:
            self.unreadable.add(path)
            self[UNREADABLE] += 1
            config.warn(f"cannot read {path} ({error.strerror or error}); skipped it")


def records(path: Path, skipped: Skipped, max_line: int = MAX_LINE,
            max_lines: int = MAX_LINES) -> Iterator[dict[str, Any]]:
    """Each complete line of ``path`` that is a JSON object, in order, within its first
    ``max_lines`` lines."""
    with open(path, "rb") as f:
        for _ in range(max_lines):
            line = f.readline(max_line + 1)
            if not line:
                return
            if not line.endswith(b"\n"):
                if len(line) <= max_line:  # the end of the file, mid-line
                    skipped[UNFINISHED] += 1
                    return
                while line and not line.endswith(b"\n"):  # read through, keep nothing
                    line = f.readline(CHUNK)
                skipped[TOO_LONG] += 1
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line, parse_int=whole_number)  # past int()'s 4300 digits
            except (ValueError, RecursionError):
                skipped[MALFORMED] += 1
                continue
            if isinstance(data, dict):
                yield data
            else:
                skipped[MALFORMED] += 1
        if f.read(1):
            skipped[f"files read only to their first {max_lines:,} lines (the rest not "
                    "learned)"] += 1
