"""Captures and outcomes that could not reach the store: kept in a file, replayed by the
next capture.

The file sits beside the store, or, when even the store directory cannot be
written, in the temp directory under a name derived from the store's path, so
it is replayed into the store it was meant for. That spare place,
``$TMPDIR/reflect-<uid>/``, is used only while it is the user's own and private
(checked before every read and write: another user could make it first), and
a record read back from either place is reviewed as a new capture is
(``reflect.capture.entry.kept_rows``): a file is as untrusted as an error text.

Exactly once, whatever happens between: a replay claims a file by renaming it
(``pending.jsonl.<pid>.<random>``) and removes it only once every record is in the
store. A claimed file left behind (the store was locked, the process was killed)
is claimed again by the next replay; a record already stored is recognized by its
failure id. Writers and replayers lock the file, so a record appended to a file
just claimed is either read by the replay or written again to a new file.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reflect.base import config
from reflect.base.digest import sha256
from reflect.base.member import FORM
from reflect.base.records import FailureRow, LessonRow
from reflect.store import Rejected, prepare_home
from reflect.store.health import foreign_home
from reflect.store.protocol import FailureStore

PENDING_FILE = "pending.jsonl"
REJECTED_SUFFIX = ".rejected"  # records no store accepts: kept for a person, never replayed


def places(home: Path, make: bool = False) -> list[Path]:
    """Where captures are kept for ``home``: beside it while no one else owns or can write
    it (``foreign_home``), and the spare place while it is private (``private``; with
    ``make``, made so when absent)."""
    spare = spare_file(home, Path(tempfile.gettempdir()))
    return [*([home / PENDING_FILE] if not foreign_home(home) else []),
            *([spare] if private(spare.parent, make) else [])]


def spare_file(home: Path, temp: Path) -> Path:
    """The file that keeps ``home``'s captures in the temporary directory ``temp``: this
    user's directory there, a file a store."""
    key = sha256(str(home.resolve()).encode()).hexdigest()[:16]
    return temp / f"reflect-{os.getuid()}" / f"pending-{key}.jsonl"


_said: set[str] = set()  # the spare places said to be unsafe: once a process


def private(directory: Path, make: bool = False) -> bool:
    """Whether ``directory`` is a directory of this user's that no one else can read or
    write (``make``: made so when absent); one warning a process when it is not."""
    if make:
        with contextlib.suppress(OSError):  # there already (checked below), or not made
            os.mkdir(directory, 0o700)
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not mode & 0o077:
        return True
    if str(directory) not in _said:
        _said.add(str(directory))
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a directory"
        config.warn(f"{directory} is {kind} of uid {info.st_uid}, mode {mode:04o}: not this"
                    " user's private one, so no capture is kept in it or read from it")
    return False


def keep(home: Path, failure: FailureRow, lesson: LessonRow, *, reflect: bool, embed: bool,
         credit: bool, member: str) -> Path:
    """A capture the store could not take, with what its ``add_failure`` was to be asked
    (its jobs, its credit, its member): the replay stores exactly what the capture would
    have."""
    return _keep(home, {"failure": failure, "lesson": lesson, "reflect": reflect,
                        "embed": embed, "credit": credit, "member": member})


def keep_outcome(home: Path, outcome: dict[str, Any]) -> Path:
    """An outcome the store could not take (its write lock held): the arguments of
    ``Store.resolve``, what it resolved read while the store could still be read."""
    return _keep(home, {"outcome": outcome})


def _keep(home: Path, record: dict[str, Any]) -> Path:
    line = json.dumps(record) + "\n"
    full = False
    for path in places(home, make=True):
        try:
            if path.parent == home:
                prepare_home(home)
            _append(path, line)
            return path
        except OSError as e:
            full = full or e.errno in (errno.ENOSPC, errno.EDQUOT)
            continue
    if full:
        raise OSError(f"the disk is full: cannot write {PENDING_FILE} beside {home} nor in"
                      " the temp directory; free some space or point REFLECT_HOME at another disk")
    raise OSError(f"cannot write {PENDING_FILE} beside {home} nor in the temp directory")


def _append(path: Path, line: str) -> None:
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path).st_ino
            except FileNotFoundError:
                current = None
            if current == os.fstat(fd).st_ino:  # not claimed by a replay meanwhile
                os.write(fd, line.encode())
                os.fsync(fd)  # a capture that returns has kept its failure
                return
        finally:
            os.close(fd)


# What a record read back becomes before it is stored or shown: the caller's capture rule
# (``capture.entry.kept_rows``: scrubbed and reviewed as a new capture; for an outcome
# ``capture.entry.kept_outcome``), since a file on disk is as untrusted as an error text,
# and the store derives nothing itself.
Redo = Callable[[FailureRow, LessonRow], tuple[FailureRow, LessonRow]]
RedoOutcome = Callable[[dict[str, Any]], dict[str, Any]]


def replay(home: Path, store: FailureStore, redo: Redo, redo_outcome: RedoOutcome) -> None:
    """Move kept captures and outcomes into the store, once, each made again by ``redo``
    or ``redo_outcome``; raises what the store raises when it cannot be written (the files
    stay for the next replay)."""
    for path in places(home):
        for candidate in _candidates(path):
            # A random part: a stale claim of a process whose pid is reused is never overwritten.
            claimed = path.with_name(f"{path.name}.{os.getpid()}.{os.urandom(6).hex()}")
            try:
                os.rename(candidate, claimed)  # atomic: one process holds a claim at a time
            except OSError:
                continue
            _replay_file(claimed, path.with_name(path.name + REJECTED_SUFFIX), store,
                         (redo, redo_outcome))


def waiting(home: Path) -> tuple[int, int]:
    """Records kept aside for this store and not yet replayed, and records rejected
    (kept for a person)."""
    kept = rejected = 0
    for path in places(home):
        kept += sum(_records(candidate) for candidate in _candidates(path))
        rejected += _records(path.with_name(path.name + REJECTED_SUFFIX))
    return kept, rejected


def kept(home: Path, redo: Redo) -> list[tuple[FailureRow, LessonRow]]:
    """The captures kept aside for this store and not yet replayed, as (failure, lesson)
    made again by ``redo``, newest first: what recall has that the store has not."""
    found: list[tuple[FailureRow, LessonRow]] = []
    for path in places(home):
        for candidate in _candidates(path):
            try:
                with open(candidate, encoding="utf-8", errors="replace") as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            for line in lines:
                try:
                    record = json.loads(line)
                    found.append(redo(record["failure"], record["lesson"]))
                except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
                    continue  # torn or foreign: replay rejects it
    return sorted(found, key=lambda r: r[0].get("ts", 0), reverse=True)


def _records(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


def _candidates(path: Path) -> list[Path]:
    """The pending file and the claims a replay left behind."""
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    claims = sorted(n for n in names
                    if n.startswith(f"{path.name}.") and not n.endswith(REJECTED_SUFFIX))
    return [path.parent / n for n in (path.name, *claims) if n in names]


def _replay_file(claimed: Path, rejected: Path, store: FailureStore,
                 redo: tuple[Redo, RedoOutcome]) -> None:
    with open(claimed, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # a writer that opened it before the claim finishes first
        lines = f.read().decode("utf-8", errors="replace").splitlines()
        for line in lines:
            if line.strip():
                _replay_line(line, rejected, store, redo)
        claimed.unlink(missing_ok=True)  # another replay may have claimed it from us meanwhile


def _replay_line(line: str, rejected: Path, store: FailureStore,
                 redo: tuple[Redo, RedoOutcome]) -> None:
    redo_capture, redo_outcome = redo
    try:
        record = json.loads(line)
        if "outcome" in record:
            o = redo_outcome(record["outcome"])
            store.resolve(o["run"], o["iteration"], o["action"], o["resolutions"], o["ts"],
                          reflect=o["reflect"], credit_outcome=o["credit"],
                          step=o["step"])
        elif store.failure(record["failure"]["id"]) is None:  # else replayed already
            failure, lesson = redo_capture(record["failure"], record["lesson"])
            # A record kept by a version that did not say: the store's defaults.
            store.add_failure(failure, lesson, reflect=record.get("reflect", False),
                              embed=record.get("embed", False),
                              credit_outcome=record.get("credit", True),
                              member=_member(record.get("member")))
    except (Rejected, ValueError, KeyError, TypeError, OverflowError, AttributeError):
        _reject(rejected, line)  # torn or foreign: it must not block the records after it


def _member(kept: object) -> str:
    """A kept record's member, when it is one (``base.member.FORM``); else of none."""
    return kept if isinstance(kept, str) and FORM.fullmatch(kept) else ""


def _reject(rejected: Path, line: str) -> None:
    with open(rejected, "a", encoding="utf-8") as f:
        f.write(line + "\n")
