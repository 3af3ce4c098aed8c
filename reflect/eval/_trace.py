"""The trace format: JSONL, one record per iteration, in the order it happened.

Fields (every line a JSON object):

- ``run`` (string): one agent run, e.g. one task; runs may not interleave
  iteration numbers (within a run, ``iteration`` strictly increases).
- ``iteration`` (integer >= 0): the iteration's number within its run.
- ``goal``, ``phase``, ``action`` (strings): what the harness knew before the
  iteration and the command it ran ("" when the source has none).
- ``exit_code`` (integer or null): null when the source records none.
- ``error_text`` (string): the failure's output ("" on success, or when the
  source keeps no error text).
- ``success`` (boolean): whether the iteration succeeded; must agree with a
  non-null ``exit_code`` (success exactly when it is 0).
- ``ts`` (number or null): Unix time in seconds, null when the source has none.
- ``project`` (string, optional): what the run worked on (for SWE-bench, the
  instance's repository); a replay gives each project a scope of its own, as a
  store scoped by project would have it. "" or absent: one scope for all.

Unknown fields are an error (a misspelt field would otherwise be dropped in
silence). Outputs are written atomically: a temporary file, then a rename.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from reflect.index.atomic import write_atomically

FIELDS = ("run", "iteration", "goal", "phase", "action", "exit_code", "error_text", "success",
          "ts", "project")
REQUIRED = ("run", "iteration", "success")


class TraceError(ValueError):
    """A trace that cannot be read; the message names the file and line and the fix."""


@dataclass
class TraceRecord:
    run: str
    iteration: int
    goal: str = ""
    phase: str = ""
    action: str = ""
    exit_code: int | None = None
    error_text: str = ""
    success: bool = False
    ts: float | None = None
    project: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def record_from_dict(data: object) -> TraceRecord:  # noqa: C901 - a check per field, in order
    """Validate one decoded line; raises ValueError saying what is wrong."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)}; the fields are "
                         f"{', '.join(FIELDS)}")
    missing = [name for name in REQUIRED if name not in data]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}")
    run, iteration, success = data["run"], data["iteration"], data["success"]
    if not isinstance(run, str) or not run:
        raise ValueError("'run' must be a non-empty string")
    if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 0:
        raise ValueError(f"'iteration' must be an integer >= 0, got {iteration!r}")
    if not isinstance(success, bool):
        raise ValueError(f"'success' must be true or false, got {success!r}")
    texts = {}
    for name in ("goal", "phase", "action", "error_text", "project"):
        value = data.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"'{name}' must be a string, got {type(value).__name__}")
        texts[name] = value or ""
    exit_code = data.get("exit_code")
    if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
        raise ValueError(f"'exit_code' must be an integer or null, got {exit_code!r}")
    if exit_code is not None and success != (exit_code == 0):
        raise ValueError(f"'success' is {str(success).lower()} but 'exit_code' is {exit_code}")
    ts = data.get("ts")
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, int | float)):
        raise ValueError(f"'ts' must be a number (Unix seconds) or null, got {ts!r}")
    return TraceRecord(run=run, iteration=iteration, exit_code=exit_code, success=success,
                       ts=float(ts) if ts is not None else None, **texts)


def read_trace(path: str | os.PathLike[str]) -> list[TraceRecord]:
    """Every record of a trace file, validated; TraceError names the bad line."""
    path = Path(path)
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115 - `with handle` below
    except OSError as e:
        raise TraceError(f"cannot read trace {path}: {e.strerror or e}; check the path "
                         "(`reflect eval convert` writes one)") from e
    records: list[TraceRecord] = []
    last: dict[str, int] = {}
    with handle:
        for number, line in enumerate(_lines(handle, path), 1):
            if not line.strip():
                continue
            try:
                record = record_from_dict(json.loads(line))
            except (ValueError, RecursionError) as e:
                raise TraceError(f"{path}:{number}: {e}; each line must be one JSON object "
                                 "with the trace fields (see `reflect eval convert --help`)"
                                 ) from None
            previous = last.get(record.run)
            if previous is not None and record.iteration <= previous:
                raise TraceError(f"{path}:{number}: run {record.run!r} iteration "
                                 f"{record.iteration} does not follow iteration {previous}; "
                                 "a run's iterations must increase in file order")
            last[record.run] = record.iteration
            records.append(record)
    return records


def _lines(handle: TextIO, path: Path) -> Iterator[str]:
    try:
        yield from handle
    except UnicodeDecodeError as e:
        raise TraceError(f"{path}: not UTF-8 text ({e}); a trace is JSONL in UTF-8") from None


def write_trace(path: str | os.PathLike[str], records: Iterable[TraceRecord]) -> int:
    """Write records as JSONL atomically; returns how many were written."""
    lines = [json.dumps(r.to_dict(), ensure_ascii=False) for r in records]
    write_text(path, "".join(line + "\n" for line in lines))
    return len(lines)


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[dict[str, Any]]) -> None:
    write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


def write_json(path: str | os.PathLike[str], data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def write_text(path: str | os.PathLike[str], text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """A whole file or nothing (``reflect.index.atomic``), its folder made if need be."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)
