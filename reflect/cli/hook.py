"""``reflect hook <client>``, the command line an install writes, answered without the
command line's parser: argparse, with the gettext, locale and shutil its parsers load, is
~8 ms of a cold hook's process, and a hook starts one per tool call (docs/speed.md). Any
other form of the command (``--help``, a misspelt client) is the parser's: the cold
process and the resident helper's child both choose through ``reflect.cli.client.command``."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


def installed(argv: list[str]) -> bool:
    """Whether ``argv`` is a hook's command line as an install writes it."""
    if len(argv) != 2 or argv[0] != "hook":
        return False
    from reflect.integrations.clients import CLIENTS  # here: a capture reads no registry

    return argv[1] in CLIENTS


def answer(name: str, env: Mapping[str, str] = os.environ) -> int:
    """Answer the event on stdin of the client ``name`` (a key of ``CLIENTS``)."""
    from reflect.base import config
    from reflect.cli.pipe import closed_pipe
    from reflect.integrations import clients, hooks

    config.log_to_stderr(lazily=True)
    try:
        code = hooks.run(clients.client(name).parse, env=env, client=name)
        sys.stdout.flush()  # a closed pipe is found here, not at exit
    except BrokenPipeError:
        return closed_pipe()
    return code
