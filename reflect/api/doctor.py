"""``reflect doctor``: what is wrong with a store and how to recover; ``--repair`` does it.

A damaged or foreign store makes every capture keep its failure aside, never lost but
never recalled. The store says what is wrong with itself (``Store.health``: for the
SQLite file its header, pages and tables; for a shared PostgreSQL store whether it can be
reached and its tables; the disk of this machine either way) and repairs what it can
(``Store.repair``: the SQLite file, damaged, is kept aside and a new one started; a
shared database is never moved). The doctor adds what waits on this machine (the
captures kept aside, replayed by the repair) and the size bound (applied by the repair,
as ``reflect consolidate`` applies it).
"""

from __future__ import annotations

from pathlib import Path

from reflect.capture.entry import kept_outcome, kept_rows
from reflect.capture.scrub import for_store
from reflect.store import (
    CannotRepair,
    Finding,
    Store,
    StoreUnavailable,
    backend,
    open_store,
    pending,
)
from reflect.store.health import size

__all__ = ["CannotRepair", "Finding", "diagnose", "repair"]


def diagnose(home: Path, url: str, max_failures: int | None) -> list[Finding]:
    """Each finding once: the store's (``url``'s, else the SQLite file in ``home``), the
    captures kept aside, the size bound."""
    try:
        health = backend(url).health(home, url)
    except StoreUnavailable as e:  # REFLECT_STORE names a store this reflect cannot open
        return [Finding("store", False, str(e)), *_kept(home, False)]
    findings = [*health.findings, *_kept(home, health.writable)]
    if health.failures is not None:
        findings.append(_bound(health.bytes, health.failures, max_failures))
    return findings


def _kept(home: Path, writable: bool) -> list[Finding]:
    kept, rejected = pending.waiting(home)
    findings = []
    if kept and writable:
        findings.append(Finding(
            "kept aside", True,
            f"{kept} capture(s) wait to be replayed; the next capture takes them in"
            " (`reflect doctor --repair` does it now)"))
    elif kept:  # the store's finding says what to do: said once, there
        findings.append(Finding(
            "kept aside", True, f"{kept} capture(s) wait for the store; none is lost"))
    if rejected:
        findings.append(Finding(
            "kept aside", True, f"{rejected} record(s) no store accepts, kept for a person in "
            f"{pending.PENDING_FILE}{pending.REJECTED_SUFFIX}; never replayed"))
    return findings


def _bound(bytes_: int, failures: int, max_failures: int | None) -> Finding:
    if max_failures is None:
        return Finding("size", True, f"{size(bytes_)}, {failures:,} failure(s) (no bound,"
                                     " REFLECT_MAX_FAILURES)")
    if failures <= max_failures:
        return Finding("size", True, f"{size(bytes_)}, {failures:,} failure(s) of at most"
                                     f" {max_failures:,} (REFLECT_MAX_FAILURES)")
    return Finding("size", False, (
        f"{size(bytes_)}, {failures:,} failure(s), past the bound of {max_failures:,}"
        " (REFLECT_MAX_FAILURES): the bound is applied by `reflect consolidate`, by a worker"
        " on its schedule, or now by `reflect doctor --repair`, each dropping the oldest"))


def repair(home: Path, url: str, now: float, max_failures: int | None = None) -> list[str]:
    """What the store can repair (``Store.repair``), then what was kept aside replayed
    into it and the size bound applied; what was done, one line each. Raises
    ``CannotRepair`` when the trouble is not one a repair mends."""
    try:
        done = backend(url).repair(home, now, url)
        store = open_store(home, url)
    except StoreUnavailable as e:
        raise CannotRepair(f"nothing repaired: {e}") from e
    try:
        done += _replay(home, store)
        done += _apply_bound(store, now, max_failures)
    finally:
        store.close()
    return done or ["nothing to repair"]


def _replay(home: Path, store: Store) -> list[str]:
    """Replay what was kept aside into ``store``; what was done."""
    kept, _ = pending.waiting(home)
    before = store.footprint()["failures"]
    scrubber = for_store(home)
    pending.replay(home, store, lambda failure, lesson: kept_rows(failure, lesson, scrubber),
                   lambda outcome: kept_outcome(outcome, scrubber))
    replayed = store.footprint()["failures"] - before
    done = []
    if kept or replayed:
        done.append(f"replayed {replayed} kept-aside capture(s) into it")
    left, _ = pending.waiting(home)
    if left:
        done.append(f"{left} capture(s) still kept aside: the store could not take them")
    return done


def _apply_bound(store: Store, now: float, max_failures: int | None) -> list[str]:
    """The oldest failures past the bound dropped, as ``reflect consolidate`` drops them
    (its other rows with them: ``Store.prune``)."""
    if max_failures is None or store.footprint()["failures"] <= max_failures:
        return []
    dropped, _ = store.prune([], now, float("-inf"), max_failures)
    store.purge()
    return [f"dropped the {dropped:,} oldest failure(s) past the bound of {max_failures:,}"]
