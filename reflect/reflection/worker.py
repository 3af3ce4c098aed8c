"""The job runner: leases jobs from the store and runs them; reflection is one kind.

It runs as a daemon thread in a process whose ``Memory`` has ``Settings(worker_thread=True)``,
as ``reflect worker`` for a long-running process, or detached, started by
``reflect capture``. Several may run at once: the store hands each job to one.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from reflect.base import config
from reflect.base.config import ModelSettings
from reflect.base.limits import Limits
from reflect.base.records import DONE, Job, Verdict
from reflect.base.text import counted
from reflect.capture import scrub
from reflect.capture.resolution import counted_fixes
from reflect.reflection import consolidation
from reflect.reflection.consolidation import Upkeep
from reflect.reflection.model_lock import ModelLock, lock_path
from reflect.reflection.queue import POLL, Retries
from reflect.store import Store, StoreUnavailable, open_store

# While another worker of this user has the embedding model loaded (reflect.reflection.model_lock):
# how often an embedding job looks again, and how long a worker with nothing else to do
# waits for it before it exits (the job stays queued for the next worker).
MODEL_RETRY = 5.0
MODEL_PATIENCE = 600.0
# A worker idle this long lets go of the model (and of the lock), however long it runs on.
MODEL_KEEP = 60.0
EARLIER_FAILURES = 5
CHECKED_FAILURES = 20  # latest failures of a fingerprint a model lesson must hold for
FIXES_TOLD = 3  # the fixes that worked in most runs, told a reflection prompt
WORKER_LOG = "worker.log"
DEFAULT_UPKEEP = Upkeep()
DEFAULT_RETRIES = Retries()


class Worker:
    def __init__(self, home: Path, url: str, model: ModelSettings | None,
                 embeddings: str | None, *, clock: Callable[[], float] = time.time,
                 busy_timeout: float = 30.0, upkeep: Upkeep = DEFAULT_UPKEEP,
                 retries: Retries = DEFAULT_RETRIES, poll: float = POLL,
                 model_lock: Path | None = None, model_keep: float = MODEL_KEEP,
                 open_store: Callable[[Path, str, float], Store] = open_store):
        """``url``: the store (open_store's); ``model`` writes lessons (None: no reflection
        jobs are taken); ``embeddings`` is the REFLECT_EMBEDDINGS spec (None: no embedding
        jobs are taken); ``poll``: seconds between looks at an empty queue, and at a
        running job's lease; ``model_lock``: the user's lock of the embedding model (None:
        its place in the user's runtime directory, ``reflect.reflection.model_lock.lock_path``), let
        go of after ``model_keep`` idle seconds; ``open_store`` opens the store (a test's
        fake; by default ``reflect.store.open_store``)."""
        self.store = open_store(home, url, busy_timeout)
        self.model = model
        self.clock = clock
        self.upkeep, self.retries, self.poll = upkeep, retries, poll
        self.model_keep = model_keep
        self.scrubber = scrub.for_store(home)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        from reflect.reflection.embedding import (
            Vectors,  # numpy: only in the worker, not on capture
        )

        self.vectors = Vectors(self.store, embeddings, clock,
                               ModelLock(model_lock or lock_path()))
        self.handlers = {}
        if model is not None:
            self.handlers["reflect"] = self._reflect
        if embeddings is not None:
            self.handlers["embed"] = self._embed

    def close(self) -> None:
        self.vectors.close()
        self.store.retire(self.owner)
        self.store.close()

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Run every job that is due now (until ``stop`` is set); returns how many were taken."""
        done = 0
        while self.handlers and not (stop is not None and stop.is_set()):
            job = self.store.lease(self.owner, os.getpid(), socket.gethostname(), self.clock(),
                                   self._lease_seconds(), tuple(self.handlers),
                                   self.retries.max_attempts)
            if job is None:
                break
            with self._renewing(job):
                try:
                    self.handlers[job.kind](job)
                except Exception as e:  # e.g. a broken prompt template: counts as an attempt
                    config.warn(f"job {job.id} ({job.kind}) failed: {e!r}")
                    now = self.clock()
                    self.store.settle(job, self.owner, now,
                                      self.retries.retry(job, now, f"{e!r}"[:200]))
            if not (job.kind == "embed" and self.vectors.waiting):  # put back: not taken
                done += 1
        return done

    def run(self, stop: threading.Event, idle_exit: float | None = None) -> None:
        """Work until ``stop`` is set, or until idle for ``idle_exit`` seconds."""
        idle_since = time.monotonic()
        while not stop.is_set():
            if consolidation.due(self.store, self.clock()):  # once a day, whichever worker is first
                consolidation.consolidate(self.store, self.clock(), self.upkeep)
            if self.run_once(stop):
                idle_since = time.monotonic()
            elif idle_exit is not None and time.monotonic() - idle_since >= (
                    max(idle_exit, MODEL_PATIENCE) if self.vectors.waiting else idle_exit):
                return
            elif self.vectors.loaded and time.monotonic() - idle_since >= self.model_keep:
                self.vectors.close()  # another store's worker may load it now
            stop.wait(self.poll)

    def _lease_seconds(self) -> float:
        # Longer than one model call or a model load, so a live worker keeps its job.
        return (self.model.timeout if self.model else 0) + 60.0

    @contextmanager
    def _renewing(self, job: Job) -> Iterator[None]:
        """Keep the lease on ``job`` while its work runs, however long a call or a model
        load takes: renewed by a thread each time a third of it has passed on the
        worker's clock (looked at every ``poll`` seconds), until another worker holds it."""
        seconds, done = self._lease_seconds(), threading.Event()

        def renew() -> None:
            renewed = self.clock()
            while not done.wait(self.poll):
                now = self.clock()
                if now - renewed < seconds / 3:
                    continue
                try:
                    if not self.store.renew_lease(job, self.owner, now, now + seconds):
                        return  # the lease ran out meanwhile and another worker took the job
                except StoreUnavailable:
                    continue  # busy: two thirds of the lease are left for the next try
                renewed = now

        thread = threading.Thread(target=renew, name="reflect-lease", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()

    def _embed(self, job: Job) -> None:
        if self.vectors.embedder() is None and self.vectors.waiting:
            now = self.clock()  # another worker of this user has the model loaded
            self.store.settle(job, self.owner, now, Verdict(
                "queued", "waiting for the embedding model another worker holds",
                now + MODEL_RETRY, attempt=False))
            return
        self.vectors.embed_pending()
        self.vectors.index()  # rebuilt now: cold CLI recalls map the file
        self.store.settle(job, self.owner, self.clock(), DONE)

    # -- reflection --------------------------------------------------------------

    def _reflect(self, job: Job) -> None:
        from reflect.capture.review import MalformedLesson, review
        from reflect.reflection.gateway import ProviderError, complete, endpoint, provider_of

        model = self.model
        if model is None:  # never: only a worker with a model takes reflect jobs
            raise RuntimeError("a reflect job reached a worker without a model")
        # Two local servers behind one provider fail independently.
        provider = provider_of(model.model) + (f"@{endpoint(model.api_base)}"
                                               if model.api_base else "")
        limits = Limits(provider, model.max_cost_usd, model.max_calls_per_run,
                        self.retries.breaker_threshold, self.retries.breaker_cooldown)
        if not self.store.gate_job(job, self.owner, self.clock(), limits):
            return  # put back (breaker open, spend cap) or skipped (the run's cap)
        context = self.store.reflection_context(job.target, EARLIER_FAILURES,
                                                CHECKED_FAILURES)
        if context is None:  # its failures were cleared meanwhile
            self.store.settle(job, self.owner, self.clock(),
                              Verdict("skipped", "failure no longer stored"))
            return
        try:
            messages = self._messages(context, model.prompts)
            completion = complete(model.model, messages, timeout=model.timeout,
                                  max_tokens=model.max_tokens, temperature=model.temperature,
                                  api_base=model.api_base, api_key=model.api_key)
        except ProviderError as e:
            now = self.clock()
            if e.retryable:  # an outage counts toward the breaker; a bad key does not
                self.store.settle_call(job, self.owner, now, limits, None, False,
                                       self.retries.retry(job, now, e.reason, e.retry_after))
            else:
                self.store.settle_call(job, self.owner, now, limits, None, None,
                                       Verdict("failed", e.reason))
            return
        now = self.clock()
        try:
            reviewed = review(completion.text, self.scrubber.scrub, context["failures"])
        except MalformedLesson as e:
            self.store.settle_call(job, self.owner, now, limits, completion.cost_usd, True,
                                   self.retries.retry(job, now, f"malformed lesson: {e}"))
            return
        lesson = {
            "trigger": reviewed.trigger, "guidance": reviewed.guidance,
            "category": reviewed.category, "confidence": reviewed.confidence,
            "quarantine": reviewed.quarantine,
            "model": model.model, "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "cost_usd": completion.cost_usd,
        }
        # Written only while the job is still ours.
        self.store.settle_call(job, self.owner, now, limits, completion.cost_usd, True,
                               DONE, lesson)

    @staticmethod
    def _messages(context: dict[str, Any], prompts: str) -> list[dict[str, str]]:
        from reflect.reflection.prompting import reflection_messages

        failure, lesson = context["failure"], context["lesson"]
        fields = ("error_type", "message", "signature", "phase", "goal", "action")
        return reflection_messages(
            {k: failure[k] for k in fields},
            context["earlier"],
            {k: lesson.get(k, "") for k in ("trigger", "guidance", "category")},
            told_fixes(context["fixes"]),
            prompts,
        )


def told_fixes(fixes: list[tuple[str, str]]) -> str:
    """What got a cause's runs past it, as a reflection prompt is told it: each fix (scrubbed
    when stored, reviewed: ``resolution.counted_fixes``) with the runs it worked in."""
    ranked = counted_fixes(fixes, FIXES_TOLD)
    if len(ranked) == 1 and ranked[0][1] == 1:
        return ranked[0][0]
    return "\n".join(f"{fix} (worked in {counted(n, 'run')})" for fix, n in ranked)


def start_detached(home: Path, context: Mapping[str, str], idle_exit: float = 60.0) -> None:
    """Start ``reflect worker`` in its own session for a shell harness: its stdio goes to a
    log in the store directory (never the caller's pipes), at a lowered priority, and it
    exits once idle. ``context``: the variables of the caller's run context
    (``RunContext.environ``), which the worker's own is made from, in place of the
    process's (a key the caller holds stays in its environment: it is not on the command
    line, which other users can read)."""
    argv = [sys.executable, "-m", "reflect", "worker", "--idle-exit", str(idle_exit),
            "--nice", "10"]
    with open(home / WORKER_LOG, "ab") as log:
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, close_fds=True,
                         env={**os.environ, **context})


def start_thread(home: Path, url: str, model: ModelSettings | None, embeddings: str | None,
                 clock: Callable[[], float], upkeep: Upkeep, retries: Retries,
                 poll: float, open_store: Callable[[Path, str, float], Store] = open_store
                 ) -> tuple[threading.Thread, threading.Event]:
    """A daemon worker thread: it never keeps the agent's process alive."""
    stop = threading.Event()

    def work() -> None:
        worker = Worker(home, url, model, embeddings, clock=clock, upkeep=upkeep,
                        retries=retries, poll=poll, open_store=open_store)
        try:
            worker.run(stop)
        except Exception as e:  # the agent goes on; the job's lease runs out and it is retried
            config.warn(f"reflection worker stopped ({e!r}); jobs stay queued")
        finally:
            worker.close()

    thread = threading.Thread(target=work, name="reflect-worker", daemon=True)
    thread.start()
    return thread, stop
