"""One time budget for a hook, from its process's start to its answer, through the resident
helper or not (``reflect install`` gives a hook 10 s): what a hook process has left."""

from __future__ import annotations

import os
import time


def process_start(stat: str = "/proc/self/stat") -> float:
    """When this process started, on ``time.monotonic``'s clock: its start time as /proc
    shows it (clock ticks since boot), not when Python got this far, which on a loaded
    machine can be seconds later; now, where /proc says nothing."""
    try:
        with open(stat, "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of proc(5); the fields after the name start at 3
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - max(0.0, age)


STARTED = process_start()
SECONDS = 8.0
STDIN_SECONDS = 3.0  # of it, reading an event whose client neither writes nor closes
# When this process must have answered: set by the ``reflect`` command (``reflect.cli.launch``);
# None in a library's process, and in a helper's child, whose client answers in time and
# leaves the child to finish what it was given.
until: float | None = None


def left() -> float | None:
    """Seconds this process has left to answer, or None: no limit."""
    return None if until is None else until - time.monotonic()
