"""The ``reflect`` command's entry point: a hook event, a capture, a recall or an outcome
goes to the resident helper (``reflect.cli.resident``), every other command
straight to ``reflect.cli.main``. Apart from the CLI, so that a command the helper answers
imports neither it nor the library."""

from __future__ import annotations

import sys


def main() -> int:
    argv = sys.argv[1:]
    from reflect.cli import resident
    from reflect.integrations import budget

    budget.until = budget.STARTED + budget.SECONDS  # a hook answers by then
    if argv[:1] and argv[0] in resident.HELPED and resident.enabled():
        return resident.run(argv)
    from reflect.cli.main import main as cli_main

    return cli_main(argv)
