"""The ``reflect`` command's entry point: a hook event goes to the resident helper
(``reflect.integrations.resident``), every other command straight to ``reflect.cli``.
Apart from the CLI, so that a hook the helper answers imports neither it nor the library."""

from __future__ import annotations

import sys


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from reflect.integrations import resident

        if resident.enabled():
            return resident.run(argv)
    from reflect.cli import main as cli_main

    return cli_main(argv)
