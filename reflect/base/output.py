"""How the CLI prints: one JSON object, or text for a person."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping

from reflect.base.choices import OUTPUT_FORMATS
from reflect.base.text import clip

Handler = Callable[[argparse.Namespace], int]  # a command: its parsed arguments to its exit code


def format_option(c: argparse.ArgumentParser) -> None:
    """``--format json``: the API object's fields at the top level of one JSON object."""
    c.add_argument("--format", choices=OUTPUT_FORMATS, default="text",
                   help="text for a person (default), or json: one JSON object")


def emit(args: argparse.Namespace, data: Mapping[str, object], text: str) -> None:
    if args.format == "json":
        print(json.dumps(data, ensure_ascii=False))
    elif text:
        print(text)


def when(ts: float) -> str:
    from datetime import UTC, datetime  # not at import: a capture never prints a date

    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def first_line(text: str, limit: int) -> str:
    return clip(text.splitlines()[0] if text else "", limit)
