"""One hook event in, one JSON answer out: what the Claude Code and Codex hooks share.

A client module turns its event into an ``Event``; ``respond`` records it through
``Memory`` and returns what the model should read beside it. What a session carries
between events (its prompt as the goal, its last tool call, failed commands not yet
rerun, digests of the lessons it was shown) and the programs found missing in the project
live in small JSON files in the store directory, so a ``PreToolUse`` hook never opens the
store. A client runs hooks of one session in parallel: each change to those files is a
read-modify-write under one lock. What they hold is scrubbed first, like the store.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from reflect.base import config
from reflect.base.digest import sha256
from reflect.base.named import NamedTuple
from reflect.base.text import clip, format_error
from reflect.capture import tool_calls
from reflect.capture.tool_calls import action_of
from reflect.index.atomic import write_atomically
from reflect.integrations import budget, event_json
from reflect.integrations.rerun import OUTSIDE, before_command, programs, refusal, told
from reflect.integrations.shown import unseen

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import IO, Any

    from reflect import ErrorEntry, Memory, Recall
    from reflect.capture.scrub import Scrubber

MAX_CONTEXT = 10_000  # both clients cut longer strings
TIME_BUDGET = budget.SECONDS  # from the process's start; installed hooks get 10 s
# A client writes its event at once and closes stdin: one that does neither is read this
# long and this far (what came is the event), leaving the rest of the budget to answer.
STDIN_SECONDS = budget.STDIN_SECONDS
STDIN_BYTES = 8 * 1024 * 1024
# The events a hook records (a failure, an outcome): kept past the budget, not dropped.
RECORDED = frozenset({"PostToolUse", "PostToolUseFailure"})
STATE_DIR = "hooks"
MISSING_FILE = "missing.json"
HEARD_FILE = "heard.json"  # client -> when one of its hooks first ran for this store
LOCK_FILE = ".lock"
SHOWN_KEPT = 200  # digests of the items a session was shown, newest kept
STALE_SECONDS = 7 * 86400  # session files unused this long are removed at a session start


class OutOfTime(BaseException):
    """The hook's budget is spent: a BaseException, as KeyboardInterrupt is, so that no
    ``except Exception`` on the way (capture's guard of its parser; a TimeoutError is an
    OSError, which reading and the store take as their own) swallows it and goes on."""


class Event(NamedTuple):
    """One event as a client module reads it (a named tuple: see ``config.ModelSettings``)."""

    name: str  # SessionStart | UserPromptSubmit | PreToolUse | PostToolUse | PostToolUseFailure
    session: str
    tool: str = ""
    action: str = ""  # a Bash command, else the tool and its target
    failed: bool | None = None  # after a tool call; None: interrupted, or the client cannot tell
    exit_code: int | None = None
    error_text: str = ""
    prompt: str = ""
    call: str = ""  # the client's id of the tool call: the step a transcript names too
    source: str = ""  # a SessionStart's: startup, resume, clear, compact


def base_event(raw: dict[str, Any], hooks: Collection[str]) -> Event:
    """The fields every client's event carries: its name (one of ``hooks``), the session
    as the run, the tool, its action and the prompt."""
    name = str(raw.get("hook_event_name") or "")
    if name not in hooks:
        raise ValueError(f"unknown event {name!r}")
    tool = str(raw.get("tool_name") or "")
    return Event(name, str(raw.get("session_id") or ""), tool=tool,
                 action=action_of(tool, raw.get("tool_input")),
                 prompt=str(raw.get("prompt") or ""), call=str(raw.get("tool_use_id") or ""),
                 source=str(raw.get("source") or ""))


def run(parse: Callable[[dict[str, Any]], Event | None], stdin: IO[str] = sys.stdin,
        stdout: IO[str] = sys.stdout, env: Mapping[str, str] = os.environ,
        left: Callable[[], float | None] = budget.left, client: str = "") -> int:
    """Read one event, print its answer (``{}`` when there is nothing to say), exit 0
    whatever happens: bad input, an unknown event or a locked store cost one line on
    stderr, and the answer comes within ``TIME_BUDGET`` seconds of the process's start
    (``left``: the seconds this process has left, ``budget.left``). ``client``: whose hook
    this is, recorded the first time one of its hooks runs (``reflect status``)."""
    def give_up(signum: int, frame: FrameType | None) -> None:
        raise OutOfTime(f"no answer within {budget.given():g} s")

    raw: Any = None
    recorded: list[str] = []
    previous = None
    late: Callable[[], object] | None = None  # what is recorded after the answer
    try:
        # Read and parsed under the alarm the ``reflect`` command set (``budget.arm``),
        # if any: nothing here holds a store or a lock yet.
        raw = parsed(*read_event(stdin))
        if not isinstance(raw, dict):
            raise ValueError("the event on stdin is not a JSON object")
        if budget.answered and raw.get("hook_event_name") not in RECORDED:
            return 0  # answered already, and nothing to record
        previous = signal.signal(signal.SIGALRM, give_up)
        seconds = left()
        if seconds is not None:
            if seconds <= 0:
                give_up(signal.SIGALRM, None)
            signal.setitimer(signal.ITIMER_REAL, seconds)
        answer = respond(parse(raw), raw.get("cwd"), recorded, env, client)
        signal.setitimer(signal.ITIMER_REAL, 0)  # a budget spent now is caught here, not later
    except (Exception, OutOfTime) as e:
        signal.setitimer(signal.ITIMER_REAL, 0)  # saying so must not be cut short in turn
        answer = {}
        if (isinstance(e, OutOfTime) and isinstance(raw, dict)  # a slow machine
                and raw.get("hook_event_name") in RECORDED and not recorded):
            event = raw
            late = lambda: respond(parse(event), event.get("cwd"), recorded, env, client)  # noqa: E731
        config.warn(f"hook: {e}; {what_became(recorded, late is not None)}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if previous is not None:
            signal.signal(signal.SIGALRM, previous)
    stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
    if late is not None:
        stdout.flush()
        detached(late)
    return 0


def what_became(recorded: list[str], late: bool) -> str:
    """What a hook that could not answer says of its event: only what is true of it."""
    if recorded:  # stored or kept before the hook broke: the agent must not think it lost
        return f"{' and '.join(recorded)}, the agent goes on"
    if late:
        return "the event is recorded after the answer"
    return "nothing recorded, the agent goes on"


def detached(work: Callable[[], object]) -> None:
    """``work`` in a child process of its own, which outlives this one, once the answer is
    out: the hook answers within its budget, and the failure it was given is still
    recorded (everything the timeout interrupted has been unwound: no store or file lock
    is held here). The ``reflect`` command's hook (it has a budget) lets go of the
    client's pipes and exits (``budget.let_go``); any other process goes on."""
    if budget.until is not None:
        budget.let_go()
    elif os.fork() != 0:
        return
    else:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the agent's pipes are the parent's alone
            os.dup2(devnull, fd)
    try:
        work()
    finally:
        os._exit(0)


def read_event(stdin: IO[str]) -> tuple[str, bool]:
    """The event on stdin, read in bounded time and size as capture reads its input
    (reflect/capture/reading.py), and whether there was more; invalid UTF-8 becomes
    U+FFFD."""
    from reflect.capture.reading import read_bounded

    data, _ = read_bounded("-", STDIN_BYTES, tail=False, stdin=stdin, seconds=STDIN_SECONDS)
    return data[:STDIN_BYTES].decode("utf-8", "replace"), len(data) > STDIN_BYTES


def parsed(text: str, cut: bool) -> Any:
    """The event: any number of digits (Python's int() stops at 4300; bounded where it is
    used), and one past the size read or too deep for json read as far as it goes."""
    size = f"larger than {STDIN_BYTES // 2**20} MB"
    try:
        raw, left_out = event_json.loads(text, cut)
    except ValueError as e:
        raise ValueError(f"the event on stdin is {size}, and {e}" if cut else str(e)) from e
    if left_out:
        size = f"; it is {size}" if cut else ""
        config.warn(f"hook: the event is read in part ({left_out}{size})")
    return raw


def respond(event: Event | None, cwd: str | None = None, recorded: list[str] | None = None,
            env: Mapping[str, str] = os.environ, client: str = "") -> dict[str, Any]:
    """The answer to ``event``; ``recorded`` is told what became of what it stored (a
    capture, an outcome: recorded, or kept aside) as soon as it is stored. ``env``: the
    hook's environment, read here and by the run context its ``Memory`` is made with,
    nowhere else. ``client``: whose hook it is ("": none to record, as for the resident
    helper's warm-up)."""
    if event is None or not config.enabled(env):
        return {}
    if not event.session:  # a client that names no session: the default run
        event = event._replace(session=config.default_run(env))
    # The session's project: its store, scope and repository; a directory the session
    # removed stands for the nearest one left (its repository's, most often).
    place = cwd or env.get("PWD")
    if place:
        os.chdir(nearest(place))
    else:
        try:
            os.getcwd()
        except OSError:  # removed, and nothing says where it was
            os.chdir("/")
    state = State(config.default_home(env), event.session)
    if client and client not in state.heard:
        state.first_heard(client)
    if event.name == "PreToolUse":
        seen = before_command(event, state)
        if seen is not None and seen.refuse:
            return {"hookSpecificOutput": {"hookEventName": event.name,
                                           "permissionDecision": "deny",
                                           "permissionDecisionReason": refusal(seen)}}
        text = "" if seen is None else told(seen)
    elif event.name in ("PostToolUse", "PostToolUseFailure"):
        text = after_tool(event, state, [] if recorded is None else recorded, env)
    else:
        text = before_turn(event, state, env)
    if not text:
        return {}
    return {"hookSpecificOutput": {"hookEventName": event.name,
                                   "additionalContext": clip(text, MAX_CONTEXT)}}


def nearest(path: str) -> str:
    """``path``, or its nearest parent that is a directory still."""
    path = os.path.abspath(path)
    while not os.path.isdir(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    return path


def memory(env: Mapping[str, str]) -> Memory:
    # Imported here: a PreToolUse hook answers from the state files alone.
    from reflect import Memory, Settings
    from reflect.api.context import RunContext

    settings = Settings(embed_here=False, busy_timeout=config.STEP_BUSY_TIMEOUT)
    return Memory(context=RunContext.from_env(env, settings=settings))


def before_turn(event: Event, state: State, env: Mapping[str, str]) -> str:
    """SessionStart and UserPromptSubmit: the block, with the prompt as the goal, less the
    items this session was already shown (a SessionStart begins a new context, a start, a
    clear, a compaction, unless it resumes one: that context holds what it was shown)."""
    if event.name == "SessionStart":
        state.prune()
    goal = state.scrub(event.prompt) or state.goal
    with memory(env) as mem:
        rec = mem.recall(run=event.session, goal=goal)
    with state.changing():
        state.goal = goal
        if event.name == "SessionStart" and event.source != "resume":
            state.shown = []
        return state.unseen(rec)


def after_tool(event: Event, state: State, recorded: list[str], env: Mapping[str, str]) -> str:
    """A failure is captured and answered with the run's block, less the items this session
    was already shown; while a failure is open, a success that did something is an
    outcome (a step of a fix, or the step that got past the failure). Each call the hooks
    are told ended (not one interrupted) is a step of the session, numbered in its order:
    its iteration, as ``reflect learn`` numbers it (``tool_calls.is_step``)."""
    action = state.scrub(event.action)
    if event.failed:
        step = state.next_step()
        with memory(env) as mem:
            entry = mem.capture(run=event.session, iteration=step, goal=state.goal,
                                phase=event.tool.lower(), action=event.action,
                                exit_code=event.exit_code, error_text=event.error_text,
                                step=event.call)
            became = stored_as(entry)
            if became:
                recorded.append(became)
            mem.ensure_worker()
            rec = mem.recall(run=event.session, goal=state.goal, phase=event.tool.lower())
            # Decided here, where the run context is made: a PreToolUse hook reads it from
            # the state files alone.
            refusing = mem.settings.refuse_repeats
        error, sure = "", False
        if entry is not None and entry.source != "benign":  # its fields are scrubbed already
            error = format_error(entry.error_type, (entry.message or "\n").splitlines()[0])
            sure = entry.category not in OUTSIDE
        with state.changing():
            state.steps = max(state.steps, step or 0)  # counted before the store was there
            if entry is not None and entry.error_type == "CommandNotFound":
                state.missing.add(entry.message.removesuffix(": command not found"))
            state.ran(action, error, sure, refuse=sure and refusing)
            state.open.append(action)
            return state.unseen(rec)
    resolved, number = False, None  # the step's number, when the store is told of it
    if event.failed is False and state.reported(action):
        number = state.next_step()
        with memory(env) as mem:
            mem.outcome(run=event.session, iteration=number, success=True,
                        action=event.action, step=event.call)
            recorded.append("the outcome is recorded")
        resolved = True
    with state.changing():
        if number is not None:
            state.steps = max(state.steps, number)
        elif event.failed is False and not resolved:  # one the store is not told of
            state.steps += 1
        state.ran(action, "")
        if event.failed is False and event.tool == "Bash":
            state.missing -= set(programs(action))
            if resolved:
                state.open = tool_calls.still_open(state.open, action)
    return ""


def stored_as(entry: ErrorEntry | None) -> str:
    """What became of a capture, as a hook cut short says it: stored (a place in the
    store's order; a benign exit, its id), kept aside (a failure the store could not
    take), or "" (none made; a benign exit not kept, which loses no failure)."""
    if entry is None:
        return ""
    if entry.source == "benign":
        return "the capture is recorded" if entry.failure_id else ""
    return ("the capture is recorded" if entry.seq
            else "the capture is kept aside until the store can take it")


class State:
    """A session's memory between hook processes, and the project's missing programs.
    Written only once the store directory exists: it is private and ignored by git."""

    def __init__(self, home: Path, session: str):
        self.home = home
        self.dir = home / STATE_DIR
        self.path = self.dir / session_file(session)
        self._scrubber: Scrubber | None = None
        self.load()

    def load(self) -> None:
        data = read_json(self.path)
        self.goal: str = data.get("goal", "")
        self.last: dict[str, Any] | None = data.get("last")  # the latest tool call: action, error
        self.open: list[str] = data.get("open", [])  # failed commands no success reran yet
        self.shown: list[str] = data.get("shown", [])  # digests of the items shown
        self.steps: int = data.get("steps", 0)  # the session's calls that ended, counted
        self.missing: set[str] = set(read_json(self.dir / MISSING_FILE).get("programs", []))
        self.heard: dict[str, Any] = read_json(self.dir / HEARD_FILE)

    def scrub(self, text: str) -> str:
        """``text`` as the store would keep it: what these files hold never needs the
        secrets a command line or a prompt carried."""
        if not text:
            return text
        if self._scrubber is None:
            from reflect.capture.scrub import for_store

            self._scrubber = for_store(self.home)
        return self._scrubber.scrub(text)[0]

    def unseen(self, rec: Recall) -> str:
        """The block of the items of ``rec`` this session has not been shown, which it has
        been from now on (called while ``changing``)."""
        text, digests = unseen(rec, set(self.shown))
        self.shown = (self.shown + digests)[-SHOWN_KEPT:]
        return text

    def ran(self, action: str, error: str, sure: bool = False, refuse: bool = False) -> None:
        self.last = {"action": action, "error": error, "sure": sure, "refuse": refuse}

    def reported(self, command: str) -> bool:
        """Whether a success is the session's outcome (``tool_calls.reported``)."""
        return tool_calls.reported(self.open, command)

    def prune(self) -> None:
        cutoff = time.time() - STALE_SECONDS
        for path in self.dir.glob("*.json"):
            if path.name != MISSING_FILE and path.stat().st_mtime < cutoff:
                path.unlink(missing_ok=True)

    def next_step(self) -> int | None:
        """The number of the session's call that just ended, counted under the lock: hooks
        of one session run at once. None when the files cannot be written: the store
        numbers the step, and what the hook records is never lost to its count."""
        try:
            with self.changing():
                self.steps += 1
        except OSError:
            return None
        return self.steps

    def first_heard(self, client: str) -> None:
        """Record that a hook of ``client`` ran for this store, the first time one does:
        installed hooks that never ran are then told apart (``integrations.heard``)."""
        if not self.home.is_dir():
            return
        self.dir.mkdir(mode=0o700, exist_ok=True)
        with open(self.dir / LOCK_FILE, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            heard = read_json(self.dir / HEARD_FILE)
            if client not in heard:
                _write(self.dir / HEARD_FILE, {**heard, client: time.time()})

    @contextmanager
    def changing(self) -> Iterator[None]:
        """Reread, change and write the files under the lock, so that another hook of
        the session, running at the same time, loses none of its change."""
        if not self.home.is_dir():
            yield
            return
        self.dir.mkdir(mode=0o700, exist_ok=True)
        with open(self.dir / LOCK_FILE, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.load()
            missing = set(self.missing)
            yield
            _write(self.path, {"goal": self.goal, "last": self.last,
                               "open": self.open[-tool_calls.KEEP_OPEN:], "shown": self.shown,
                               "steps": self.steps})
            if self.missing != missing:  # the project's file: most calls leave it as it was
                _write(self.dir / MISSING_FILE, {"programs": sorted(self.missing)})


def session_file(session: str) -> str:
    """A session's state file: its id made safe to read, and a digest of the id itself, so
    two sessions never share a file (``team/alice``, ``team:alice``) and none is the
    project's file of missing programs."""
    digest = sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    readable = re.sub(r"[^\w.-]", "_", session)[:80]
    return f"session-{readable}-{digest}.json"


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: dict[str, Any]) -> None:
    # Not flushed to disk: a hook writes these files at every tool call. A crash of the
    # machine may empty one, which is read as {}, as a session's file pruned after a week
    # is: the hooks that follow start it again, as the store may lose its last commits
    # (``synchronous=NORMAL``).
    write_atomically(path, json.dumps(data, ensure_ascii=False), durable=False)
