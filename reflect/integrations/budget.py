"""One time budget for a hook, from its process's start to its answer, through the resident
helper or not (``reflect install`` gives a hook 10 s): what a hook process has left."""

from __future__ import annotations

import time

STARTED = time.monotonic()  # imported by the entry point first: the process's start, near enough
SECONDS = 8.0
STDIN_SECONDS = 3.0  # of it, reading an event whose client neither writes nor closes
# When this process must have answered: set by the ``reflect`` command (``reflect.cli.launch``);
# None in a library's process, and in a helper's child, whose client answers in time and
# leaves the child to finish what it was given.
until: float | None = None


def left() -> float | None:
    """Seconds this process has left to answer, or None: no limit."""
    return None if until is None else until - time.monotonic()
