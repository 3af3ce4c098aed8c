"""``reflect doctor``: what is wrong with a store and how to recover; ``--repair`` does it.

A damaged or foreign ``reflect.db`` makes every capture keep its failure aside,
never lost but never recalled. The diagnosis looks at the file (its header and
SQLite's quick check), its schema, the disk, the captures kept aside and the
size bound, and says what to do about each. The repair keeps the damaged file
(renamed ``reflect.db.damaged-<UTC time>``, with its WAL), starts a new store and
replays into it what was kept aside. With a shared PostgreSQL store (REFLECT_STORE) the
diagnosis is of the database (reachable, its schema, its size) and of what stays on this
machine (the disk, the captures kept aside), and the repair replays those into it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from reflect.capture import pending
from reflect.store import (
    DB_NAME,
    SQLiteStore,
    Store,
    StoreUnavailable,
    open_store,
    store_url,
)
from reflect.store.base import NewerSchema
from reflect.store.sqlite_health import (
    LOW_SPACE,
    DiskFull,
    check,
    free_bytes,
    move_aside,
)
from reflect.store.sqlite_migrations import MIGRATIONS


@dataclass(frozen=True)
class Finding:
    what: str  # "store", "disk", "kept aside", "size"
    ok: bool
    text: str  # what was found, and when not ok what to do

    def to_dict(self) -> dict:
        return asdict(self)


class CannotRepair(Exception):
    pass


def diagnose(home: Path, max_failures: int | None) -> list[Finding]:
    if store_url():
        return _shared(home, max_failures)
    db = home / DB_NAME
    health = check(db)
    findings = [_store(health)]
    free = free_bytes(home)
    if free is not None and free < LOW_SPACE and "disk is full" not in health.problem:
        findings.append(Finding("disk", False, str(DiskFull(db, free))))
    elif free is not None and free >= LOW_SPACE:
        findings.append(Finding("disk", True, f"{_size(free)} free"))
    findings += _kept(home, health.problem == "")
    if health.exists and not health.problem:
        findings.append(_bound(health.bytes, health.failures, max_failures))
    return findings


def _shared(home: Path, max_failures: int | None) -> list[Finding]:
    """A PostgreSQL store: can it be reached and read, and what waits on this machine."""
    try:
        store = open_store(home)
        try:
            size = store.footprint()
        finally:
            store.close()
    except StoreUnavailable as e:
        return [Finding("store", False, str(e)), *_kept(home, False)]
    return [Finding("store", True, f"{size['path']}: reachable, schema up to date"),
            *_kept(home, True), _bound(size["bytes"], size["failures"], max_failures)]


def _kept(home: Path, writable: bool) -> list[Finding]:
    kept, rejected = pending.waiting(home)
    findings = []
    if kept:
        findings.append(Finding(
            "kept aside", writable,
            f"{kept} capture(s) wait to be replayed; the next capture that can write the"
            " store takes them in (`reflect doctor --repair` does it now)"))
    if rejected:
        findings.append(Finding(
            "kept aside", True, f"{rejected} record(s) no store accepts, kept for a person in "
            f"{pending.PENDING_FILE}{pending.REJECTED_SUFFIX}; never replayed"))
    return findings


def _bound(size: int, failures: int, max_failures: int | None) -> Finding:
    bound = f"of at most {max_failures:,}" if max_failures else "(no bound)"
    over = max_failures is not None and failures > max_failures
    return Finding("size", True, f"{_size(size)}, {failures:,} failure(s) {bound}"
                   " (REFLECT_MAX_FAILURES)"
                   + ("; `reflect consolidate` drops the oldest" if over else ""))


def _store(health) -> Finding:
    where = str(health.path)
    if not health.exists:
        return Finding("store", True, f"{where}: none yet (the first capture creates it)")
    if health.damaged:
        return Finding("store", False,
                       f"{where} is {health.problem}: `reflect doctor --repair` keeps it as"
                       f" {DB_NAME}.damaged-<time> and starts a new store, which takes in"
                       " what was kept aside")
    if health.problem:
        return Finding("store", False, f"{where}: {health.problem}")
    if health.schema > len(MIGRATIONS):
        return Finding("store", False, str(NewerSchema(health.schema, len(MIGRATIONS))))
    behind = len(MIGRATIONS) - health.schema
    return Finding("store", True, f"{where}: sound, schema {health.schema}"
                   + (f" ({behind} migration(s) to apply on next use)" if behind else ""))


def repair(home: Path, now: float) -> list[str]:
    """Move a damaged store aside, start a new one and replay what was kept aside; what
    was done, one line each. Raises ``CannotRepair`` when the trouble is not damage. A
    shared store is never moved: only what was kept aside here is replayed into it."""
    if store_url():
        try:
            return _replay(home, open_store(home)) or ["nothing to repair"]
        except StoreUnavailable as e:
            raise CannotRepair(f"nothing repaired: {e}") from e
    db = home / DB_NAME
    health = check(db)
    done = []
    if health.damaged:
        aside = move_aside(db, now)
        done.append(f"kept the damaged store as {aside}")
    elif health.problem:
        raise CannotRepair(f"nothing repaired: {db}: {health.problem}")
    elif health.schema > len(MIGRATIONS):
        raise CannotRepair(f"nothing repaired: {NewerSchema(health.schema, len(MIGRATIONS))}")
    if health.damaged:
        done.append(f"started a new store {db}")
    return done + _replay(home, SQLiteStore(home)) or ["nothing to repair"]


def _replay(home: Path, store: Store) -> list[str]:
    """Replay what was kept aside into ``store`` (closed after); what was done."""
    kept, _ = pending.waiting(home)
    try:
        before = store.footprint()["failures"]
        pending.replay(home, store)
        replayed = store.footprint()["failures"] - before
    finally:
        store.close()
    done = []
    if kept or replayed:
        done.append(f"replayed {replayed} kept-aside capture(s) into it")
    left, _ = pending.waiting(home)
    if left:
        done.append(f"{left} capture(s) still kept aside: the store could not take them")
    return done


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6)):
        if n >= scale / 10:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 1e3:.1f} kB"
