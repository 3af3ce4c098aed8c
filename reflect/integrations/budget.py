"""One time budget for a hook, from its process's start to its answer, through the resident
helper or not (``reflect install`` gives a hook 10 s): what a hook process has left."""

from __future__ import annotations

import atexit
import os
import sys
import time

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's thin client loads no typing
if TYPE_CHECKING:
    from typing import NoReturn

_signal = __import__("_signal")  # the C module: signal's enums cost a hook ~2 ms to import


def process_start(stat: str = "/proc/self/stat") -> float:
    """When this process started, on ``time.monotonic``'s clock: its start time as /proc
    shows it (clock ticks since boot), not when Python got this far, which on a loaded
    machine can be seconds later; now, where /proc says nothing."""
    try:
        with open(stat, "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of proc(5); the fields after the name start at 3
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - max(0.0, age)


STARTED = process_start()
SECONDS = 6.0  # of the 10 s `reflect install` gives: a loaded machine takes seconds to end a hook
STDIN_SECONDS = 3.0  # of it, reading an event whose client neither writes nor closes
# When this process must have answered: set by the ``reflect`` command (``reflect.cli.launch``);
# None in a library's process, and in a helper's child, whose client answers in time and
# leaves the child to finish what it was given.
until: float | None = None


def leave(code: int) -> NoReturn:
    """Exit with ``code`` once the answer is out (and the store closed): the exit handlers
    run, the interpreter's teardown of the modules loaded is skipped, which the client,
    waiting for the process to end, would wait for (~3 ms of a hook the helper answered,
    ~9 ms of one answered cold; ~0.2 s of an MCP server, the SDK's)."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def left() -> float | None:
    """Seconds this process has left to answer, or None: no limit."""
    return None if until is None else until - time.monotonic()


def given() -> float:
    """The seconds this process was given, from its start (``SECONDS`` when no limit is set)."""
    return SECONDS if until is None else until - STARTED


# In the child that records a hook's event after the hook answered (``let_go``): no one
# reads what it says, and it has no time to keep.
answered = False
SPENT = ("its event goes on to be recorded after the answer, if it is one a hook records"
         " (a failure, an outcome)")


def arm() -> None:
    """From now on, a hook still loading (its modules, the helper's answer) when ``until``
    comes answers then: ``{}``, and a line saying what becomes of its event. Set by the
    ``reflect`` command for a hook as soon as it starts, before its modules load: on a
    loaded machine they can take longer than the whole budget. Until the event is parsed
    nothing here holds a store or a lock, so the work is not cut short but goes on in a
    child, which records the event if it is one to record (``hooks.run`` takes over the
    alarm from there)."""
    if until is None:
        return
    _signal.signal(_signal.SIGALRM, _spent)
    _signal.setitimer(_signal.ITIMER_REAL, max(until - time.monotonic(), 0.001))


def _spent(signum: int, frame: object) -> None:
    os.write(2, f"reflect: warning: hook: no answer within {given():g} s; {SPENT}\n".encode())
    os.write(1, b"{}\n")
    let_go()  # and what was being done goes on in the child


def let_go() -> None:
    """Once the ``reflect`` command's hook has answered: its standard output and error
    point nowhere from now on, so that the client, which reads them to their end, has the
    answer now, not once a child made after (holding them until a loaded machine runs it)
    lets go of them; then the process forks, and the parent exits at once. Returns in the
    child, which goes on without a budget, in a session of its own, behind the hooks
    still in time."""
    global until, answered
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    held, gone = os.pipe()  # closed when the parent has exited, its memory released
    if os.fork() != 0:
        os._exit(0)  # nothing is left to say, and a loaded machine's teardown is slow
    os.close(gone)
    # Only then does the child go on, behind the hooks still in time: touching memory it
    # shares with the parent, at a low priority, would slow the parent's exit in turn.
    os.read(held, 1)
    os.close(held)
    until, answered = None, True
    os.setsid()
    os.nice(10)
