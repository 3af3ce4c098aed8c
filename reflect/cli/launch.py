"""The ``reflect`` command's entry point: a hook event, a capture, a recall or an outcome
goes to the resident helper through the thin client (``reflect.cli.client``), every other
command straight to ``reflect.cli.main``. Apart from the CLI, so that a command the helper
answers imports neither it nor the library."""

from __future__ import annotations

import sys


def main(seconds: float | None = None) -> int:
    """``seconds``: a hook's budget from its process's start (``budget.SECONDS``)."""
    argv = sys.argv[1:]
    from reflect.integrations import budget

    budget.until = budget.STARTED + (budget.SECONDS if seconds is None else seconds)
    if argv[:1] == ["hook"]:
        budget.arm()  # before the rest loads: it answers by then, however long that takes
    from reflect.cli import client

    if argv[:1] and argv[0] in client.HELPED:
        # A step's command: its process leaves once it has answered, as the client waits
        # for it to end.
        budget.leave(client.run(argv) if client.enabled() else client.cold(argv))
    return client.cold(argv)
