"""A reader that closed its end of the pipe (``reflect recall | head -1``): the command
exits quietly, whether it answered in process or through the resident helper."""

from __future__ import annotations

import os
import sys


def closed_pipe() -> int:
    """Exit quietly, as ``git log | head`` does: what is left to print goes nowhere (not a
    second error as Python flushes stdout at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0
