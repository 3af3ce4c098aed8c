"""Learn from the sessions a client kept on disk, as a live capture would have.

Each session is one run (the session id its hooks carry), its first prompt the goal, its
project the scope, the time each call finished the clock. Its tool calls go through the
path the hooks take (``integrations/hooks.py``): a failure is captured (the same scrub,
benign exits, fingerprint, review and heuristic lesson), and while a failure is open a
success that did something is an outcome (a step of its fix, or the step that got past it:
``resolution``).

Learning the same session twice adds nothing, and neither does learning one that was
captured live, nor learns and hooks of one session at once: each call is recorded with its
id, as the hooks record it (``Memory.capture``'s ``step``), and the store keeps a step once.
A session still being written is learned up to its last complete line now and the rest
next time. Steps a store holds without an id (recorded before steps had one) are matched
by their number in the run, as they were then: that many of the run's first failed calls
and successes are passed over.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reflect.base.choices import LEARN_CLIENTS
from reflect.capture import tool_calls
from reflect.capture.scope import scope_of
from reflect.capture.transcripts import Session, Skipped, TranscriptError, claude_code, codex

if TYPE_CHECKING:
    from reflect.api.memory import Memory, Port
    from reflect.base.records import Recall, RecallItem

NEW_SESSION = "(a new session)"  # the run a preview of the house rules recalls for; not stored


@dataclass
class LearnReport:
    client: str
    sessions: int = 0  # read
    learned: int = 0  # that added failures or fixes
    failures: int = 0  # captured (benign exits apart)
    benign: int = 0
    resolved: int = 0  # failures a later command resolved
    lessons: int = 0  # new in the store
    house_rules: list[str] = field(default_factory=list)  # what a new session is shown first
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> lines, files or calls

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def sessions(client: str, paths: Iterable[str | os.PathLike[str]] = (),
             skipped: Skipped | None = None, cwd: Path | None = None) -> list[Session]:
    """The client's sessions under ``paths``; with none given, those of the project at
    ``cwd`` in the client's own place."""
    if client not in LEARN_CLIENTS:
        raise TranscriptError(f"unknown client {client!r}; choose one of "
                              f"{', '.join(LEARN_CLIENTS)}")
    skipped = Skipped() if skipped is None else skipped
    paths = list(paths)
    cwd = Path.cwd() if cwd is None else cwd
    if client == "claude-code":
        found = claude_code.sessions(paths or claude_code.default_paths(cwd), skipped)
    else:
        found = codex.sessions(paths or codex.default_paths(), skipped,
                               within=None if paths else cwd)
    if not found and skipped.unreadable:
        raise TranscriptError(f"no session could be read: {len(skipped.unreadable)} file(s)"
                              " could not be read (named above); check them, or the disk")
    return found


def learn(mem: Memory, inside: Port, client: str,
          paths: Iterable[str | os.PathLike[str]] = (),
          progress: Callable[[int, int], None] | None = None) -> LearnReport:
    """``Memory.learn``, through the memory's public methods and ``inside``, its port."""
    if not mem.enabled:
        raise TranscriptError("failure memory is switched off (REFLECT_FAILURE_MEMORY=0): "
                              "nothing would be recorded; unset it to learn")
    skipped = Skipped()
    found = sessions(client, paths, skipped)
    report = LearnReport(client, sessions=len(found))
    before = _lesson_count(mem)
    here = mem.scope
    try:
        for n, session in enumerate(found, 1):
            mem.scope = _scope(inside, session.cwd) or here
            if _learn_session(mem, inside, session, skipped, report):
                report.learned += 1
            if progress is not None:
                progress(n, len(found))
    finally:
        mem.scope = here
    report.lessons = _lesson_count(mem) - before
    report.house_rules = [item.text for item in house_rules(mem, inside)]
    report.skipped = dict(skipped.most_common())
    return report


def _learn_session(mem: Memory, inside: Port, session: Session, skipped: Skipped,
                   report: LearnReport) -> bool:
    """Replay one session's calls; True when it added anything."""
    now = [session.start or 0.0]
    with inside.clocked(lambda: now[0]):  # the session's own times
        return _learn_calls(mem, inside, session, skipped, report, now)


def _learn_calls(mem: Memory, inside: Port, session: Session, skipped: Skipped,
                 report: LearnReport, now: list[float]) -> bool:
    # A session is a run from its start, failures or not, as its first recall made it live.
    query = inside.query(run=session.run, goal=session.goal)
    run = query.run
    inside.store.register_run(run, query.goal, mem.scope, now[0], member=mem.context.member)
    stored = inside.store.stored_steps(run)
    captured, reported = inside.store.unkeyed_steps(run)
    open_failures: list[str] = []
    added = False
    steps = 0  # the session's steps, numbered as its hooks number them
    for call in session.calls(skipped):
        now[0] = max(now[0], call.ts or now[0])
        action = inside.scrubber.scrub(call.action)[0]
        known = tool_calls.step_key(run, call.id) in stored
        if tool_calls.is_step(session.client, call.tool, call.failed):
            steps += 1
        if call.failed:
            if captured > 0:
                captured -= 1
            elif not known:
                entry = mem.capture(run=session.run, iteration=steps, goal=session.goal,
                                    phase=call.tool.lower(), action=call.action,
                                    exit_code=call.exit_code, error_text=call.error_text,
                                    step=call.id)
                if entry is not None and entry.source == "benign":
                    report.benign += 1
                else:
                    report.failures += 1
                added = True
            open_failures = [*open_failures, action][-tool_calls.KEEP_OPEN:]
        elif tool_calls.reported(open_failures, action):
            if reported > 0:
                reported -= 1
            elif not known:
                report.resolved += len(mem.outcome(run=session.run, iteration=steps,
                                                   success=True, action=call.action,
                                                   step=call.id))
                added = True
            open_failures = tool_calls.still_open(open_failures, action)
    return added


def _scope(inside: Port, cwd: str) -> str | None:
    """The scope of the session's project, as its hooks found it; the current one when
    the directory is gone."""
    if cwd and Path(cwd).is_dir():
        return scope_of(Path(cwd), inside.store)
    return None


def _lesson_count(mem: Memory) -> int:
    return len(mem.lessons(limit=10**9))


def house_rules(mem: Memory, inside: Port) -> list[RecallItem]:
    """The lessons a new session of this project is shown first (nothing is logged)."""
    return list(house_block(mem, inside).items)


def house_block(mem: Memory, inside: Port) -> Recall:
    """The block a new session of this project is shown first, the house rules, as recall
    gives it; nothing is logged and no run registered."""
    from reflect.recall import block

    query = replace(inside.query(run=NEW_SESSION, sections=("lessons",)), scope=mem.scope,
                    embed=False)
    return block.build(inside.store, inside.vectors, query, inside.predictor, inside.holdout)
