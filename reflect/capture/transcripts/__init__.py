"""Sessions a client kept on disk, read as the tool calls its hooks would have seen.

Claude Code keeps a transcript per session (``~/.claude/projects/<project>/<session>.jsonl``,
a subagent's side chain in ``<session>/subagents/``); Codex a rollout per session
(``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, a subagent's in a rollout of its own).
A reader turns them into ``Session``s: the run (the session id the hooks carry, a
subagent's calls in its parent's), the project directory, the first prompt and, streamed
in the order they finished, the ``ToolCall``s a live capture would have been given. What
no hook sees is counted in ``Skipped``, not returned: a call the client refused before it
ran (a failed edit), one interrupted or denied, one a forked session copied from another.
A file from a client version whose format is not known here is reported and skipped.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from reflect.capture.transcripts.lines import Skipped

__all__ = ["Session", "Skipped", "ToolCall", "TranscriptError", "files_under", "readable",
           "timestamp"]

T = TypeVar("T")

# Calls no hook sees, as the summary names them.
REFUSED = "tool calls the client refused before they ran (a failed edit), which no hook sees"
INTERRUPTED = "tool calls interrupted or denied, which no hook sees as failures"
COPIED = "tool calls a forked session copied from the session it forked"


class TranscriptError(ValueError):
    """Sessions that cannot be read (no such path, no sessions where the client keeps
    them) or learned; the message says what to do."""


@dataclass(frozen=True)
class ToolCall:
    ts: float | None  # when it finished (Unix seconds)
    tool: str  # "Bash" for a shell command, in either client, as their hooks name it
    action: str  # the command, else the tool and its target
    failed: bool
    exit_code: int | None = None
    error_text: str = ""
    id: str = ""  # the client's id of the call, which its hooks carry as ``tool_use_id``


@dataclass
class Session:
    client: str
    run: str  # the session id the client's hooks carry
    files: list[Path]  # the session's own file first, then its side chains
    cwd: str = ""
    goal: str = ""  # the first prompt
    start: float | None = None
    reader: Callable[[Path, Skipped], Iterator[ToolCall]] | None = field(default=None,
                                                                        repr=False)

    def calls(self, skipped: Skipped) -> Iterator[ToolCall]:
        """Every call of the session and its side chains, in the order they finished."""
        assert self.reader is not None
        streams = [readable(path, skipped, self.reader(path, skipped)) for path in self.files]
        return heapq.merge(*streams, key=lambda c: c.ts if c.ts is not None else 0.0)


def readable(path: Path, skipped: Skipped, stream: Iterator[T]) -> Iterator[T]:
    """What ``stream`` reads from ``path``, up to an error reading the file: the file is
    named and skipped (``Skipped.cannot_read``), the other files are read on."""
    try:
        yield from stream
    except OSError as e:
        skipped.cannot_read(path, e)


def timestamp(text: object) -> float | None:
    """An ISO 8601 time (``2026-12-03T07:26:19.255Z``) as Unix seconds."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def files_under(paths: Iterable[str | os.PathLike[str]], pattern: str,
                skipped: Skipped) -> list[Path]:
    """Files given as such, found under directories (sorted), or matched by a glob; a
    directory with none is counted in ``skipped``."""
    found: list[Path] = []
    for given in map(str, paths):
        path = Path(given).expanduser()
        if path.is_dir():
            inside = sorted(p for p in path.rglob(pattern) if p.is_file())
            if not inside:
                skipped[f"directories with no session file ({pattern}) in them"] += 1
            found += inside
        elif path.is_file():
            found.append(path)
        elif any(c in given for c in "*?["):
            anchor = Path(given).expanduser()
            root = Path(anchor.anchor) if anchor.is_absolute() else Path()
            found += sorted(p for p in root.glob(str(anchor.relative_to(root)))
                            if p.is_file())
        else:
            raise TranscriptError(f"{given}: no such file or directory; give session files, "
                                  "a directory that holds them, or a glob")
    return list(dict.fromkeys(found))
