"""``reflect learn``: parse, call ``Memory.learn``, print the summary."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from reflect.base.choices import LEARN_CLIENTS
from reflect.base.output import emit, format_option

if TYPE_CHECKING:
    from reflect.api.learn import LearnReport

BAR = 30  # characters of the progress bar


def add_learn(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = sub.add_parser(
        "learn", help="Learn from the sessions Claude Code or Codex kept on disk.",
        description="Record the failures of past Claude Code or Codex sessions, each session "
        "a run as a live capture would have made it (its first prompt the goal, the same "
        "scrub, benign exits, fingerprints and lessons; the command that later passed as "
        "the fix). With no PATH, the current project's sessions: Claude Code's in "
        "~/.claude/projects/<project>/, Codex's in ~/.codex/sessions/ whose directory is this "
        "one or under it. Learning a session again adds nothing.")
    c.set_defaults(handler=cmd_learn)
    c.add_argument("client", choices=LEARN_CLIENTS, metavar="CLIENT",
                   help=" | ".join(LEARN_CLIENTS))
    c.add_argument("paths", nargs="*", metavar="PATH",
                   help="session files, directories that hold them, or globs")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    format_option(c)


def cmd_learn(args: argparse.Namespace) -> int:
    from reflect.capture.transcripts import TranscriptError
    from reflect.cli.lessons import open_memory

    bar = progress_bar(sys.stderr) if not args.quiet and sys.stderr.isatty() else None
    try:
        with open_memory(args.env) as mem:
            report = mem.learn(args.client, args.paths, progress=bar)
    except TranscriptError as e:
        print(f"reflect: error: {e}", file=sys.stderr)
        return 1
    finally:
        if bar is not None:
            sys.stderr.write("\n")
    emit(args, report.to_dict(), summary(report))
    return 0


def progress_bar(stream: IO[str]) -> Callable[[int, int], None]:
    """A bar redrawn in place: for a terminal only."""
    def draw(done: int, total: int) -> None:
        filled = BAR * done // max(total, 1)
        stream.write(f"\rlearning [{'#' * filled}{'.' * (BAR - filled)}] {done}/{total} sessions")
        stream.flush()
    return draw


def summary(report: LearnReport) -> str:
    s = "" if report.sessions == 1 else "s"
    lines = [f"{report.client}: read {report.sessions} session{s}, "
             f"{report.learned} with failures or fixes new to the store"]
    if report.learned:
        lines.append(f"  {report.failures} failures recorded"
                     + (f" (and {report.benign} benign exits)" if report.benign else "")
                     + f", {report.resolved} resolved by a later command, "
                     f"{report.lessons} new lessons")
    elif report.sessions:
        lines.append("  nothing new: every session was learned, or captured live, before")
    if report.house_rules:
        lines.append(f"house rules a new session of this project is shown first "
                     f"({len(report.house_rules)}):")
        lines += ["  " + rule.replace("\n", "\n  ") for rule in report.house_rules]
    elif report.sessions:
        lines.append("no house rules yet: a mistake becomes one once two runs of the project"
                     " hit it")
    if report.skipped:
        lines.append("not learned:")
        lines += [f"  {why}: {n}" for why, n in report.skipped.items()]
    return "\n".join(lines)
