"""``reflect eval``: subcommands registered on the main parser."""

from __future__ import annotations

import argparse


def add_eval_command(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("eval", help="Evaluate failure memory on recorded or live runs.")
    c.add_subparsers(dest="what", required=True, metavar="convert|replay|compare|ab")
