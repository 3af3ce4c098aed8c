"""``reflect rules``: parse, ask the library for the house-rules section, print, write or
check it (``reflect.api.house_file``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reflect.base.output import emit, format_option


def add_rules(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(
        "rules", help="The house rules, for files agents read (AGENTS.md, CLAUDE.md).",
        description="Print the project's house rules as recall shows a new run them, each "
        "saying what to do; --write keeps a marked section of a file agents read without "
        "hooks current (nothing outside its markers changes; a file without them gets the "
        "section at its end); --check exits 1 when a file's section is stale (for a "
        "pre-commit hook or CI).")
    c.set_defaults(handler=cmd_rules)
    what = c.add_mutually_exclusive_group()
    what.add_argument("--write", action="append", metavar="FILE", default=[],
                      help="put the house rules into FILE's marked section (repeatable: "
                      "--write AGENTS.md --write CLAUDE.md)")
    what.add_argument("--check", action="append", metavar="FILE", default=[],
                      help="exit 1 when FILE's section is not the house rules of now "
                      "(repeatable); writes nothing")
    format_option(c)


def cmd_rules(args: argparse.Namespace) -> int:
    from reflect.api.house_file import MarkersBroken, section, stale, write
    from reflect.cli.lessons import open_memory

    with open_memory(args.env) as mem:
        new = section(mem)
    files = [Path(name) for name in args.write or args.check]
    said, code = [], 0
    for path in files:
        try:
            if args.write:
                said.append(f"{path}: house rules written ({len(new.rules)})"
                            if write(path, new) else f"{path}: already current")
            elif why := stale(path, new):
                said.append(f"{path}: stale ({why}): run `reflect rules --write {path}`")
                code = 1
            else:
                said.append(f"{path}: current")
        except MarkersBroken as e:
            print(f"reflect: error: {e}", file=sys.stderr)
            code = 1
    emit(args, {"rules": new.rules, "section": new.text, "files": said},
         "\n".join(said) if files else new.text.rstrip("\n"))
    return code
