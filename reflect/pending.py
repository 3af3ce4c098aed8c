"""Captures that could not reach the store: kept in a file, replayed by the next capture.

The file sits beside the store, or, when even the store directory cannot be
written, in the temp directory under a name derived from the store's path, so
it is replayed into the store it was meant for.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
from pathlib import Path

from reflect.store import SQLiteStore, prepare_home

PENDING_FILE = "pending.jsonl"


def places(home: Path) -> tuple[Path, Path]:
    key = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:16]
    spare = Path(tempfile.gettempdir()) / f"reflect-{os.getuid()}" / f"pending-{key}.jsonl"
    return home / PENDING_FILE, spare


def keep(home: Path, failure: dict, lesson: dict) -> Path:
    line = json.dumps({"failure": failure, "lesson": lesson}) + "\n"
    for path in places(home):
        try:
            prepare_home(path.parent)
            with open(path, "a", encoding="utf-8") as f:
                f.write(line)
            return path
        except OSError:
            continue
    raise OSError(f"cannot write {PENDING_FILE} beside {home} nor in the temp directory")


def replay(home: Path, store: SQLiteStore) -> None:
    """Move kept captures into the store, once."""
    for path in places(home):
        if not path.exists():
            continue
        claimed = path.with_name(f"{path.name}.{os.getpid()}")
        try:
            os.rename(path, claimed)  # atomic: only one process replays a file
        except OSError:
            continue
        for line in claimed.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            try:
                store.add_failure(record["failure"], record["lesson"])
            except sqlite3.IntegrityError:  # already replayed
                pass
        claimed.unlink()
