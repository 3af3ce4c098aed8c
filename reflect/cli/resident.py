"""The resident helper: one process per store that answers hook events with the library
already imported, so that a hook process pays Python's start and little more.

A hook (``reflect hook …``, a process per tool call) is a client (``reflect.cli.client``,
which imports nothing of the library): it talks only to its
own user's helper (the store directory and the socket owned by the user and writable by
no one else, the peer's uid checked by ``SO_PEERCRED`` on both ends, and, by the client,
the peer's process: this interpreter running the helper for this store), waits for the
helper's child to say it is there, then hands over its event and the environment the
answer needs (reflect's settings, the locale, where home and temp are; never the API
keys), and prints what comes back once it is a well-formed answer, received in full
within the hook's time budget and ``MAX_REPLY`` bytes. The helper forks a child per request,
so requests run side by side and each starts from the same state; the child runs the
command exactly as the cold process would (``reflect.cli.client.command``, with the client's
environment, working directory, umask and event on its standard input).

Nothing is lost to the helper: whenever the socket is absent, stale or slow, or the child
dies before answering, the client answers the event itself, in process, from the bytes
it still holds, as it does when the child has not answered within the hook's budget (a
call's id makes the two records of it one step; a capture with none may be stored twice
at worst, never lost). A cold hook starts the helper for the next one; the helper exits
when idle, when its socket is taken away, or when the code it loaded changes.
``REFLECT_HELPER=off`` turns it off.
"""

from __future__ import annotations

import io
import marshal
import os
import sys
import time
from pathlib import Path

from reflect.cli.client import (
    MAX_REPLY,
    READY,
    READY_SECONDS,
    REPLY,
    SOCKET_NAME,
    command,
    peer_credentials,
    private,
    receive_all,
    sent,
    this_interpreter,
)
from reflect.integrations import budget

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Iterable, Mapping
    from typing import IO, Protocol

    class Closable(Protocol):
        def close(self) -> None: ...

LOCK_NAME = "helper.lock"
IDLE_SECONDS = 300.0  # a helper nobody asked for this long exits
CHECK_SECONDS = 5.0  # how often an idle helper checks its socket is still its own
# No request for this long is a pause (``Children``): a tool call's PostToolUse comes
# some 10 to 60 ms after its PreToolUse was answered, and finds the spare forked at the
# pause ready (at 50 ms it did not: bench/hook_pairs.py).
PAUSE_SECONDS = 0.01


# -- the helper ---------------------------------------------------------------------------

def serve(home: Path, idle: float = IDLE_SECONDS) -> None:
    """Listen on ``home``'s socket until idle for ``idle`` seconds; one helper a store."""
    import fcntl
    import shutil
    import tempfile

    os.umask(0o077)
    if not private(home):
        return  # a socket others could replace or read: the hooks go cold
    lock = open(home / LOCK_NAME, "a")  # noqa: SIM115 (held for the helper's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another helper serves this store
    place = Path(tempfile.mkdtemp(prefix="reflect-warm-up-"))  # the rehearsals' store
    try:
        warm_up(place)
        listen(home, lock, place, idle)
    finally:
        shutil.rmtree(place, ignore_errors=True)


def listen(home: Path, lock: IO[str], place: Path, idle: float) -> None:
    """Answer each request on ``home``'s socket in a child of its own (``Children``);
    ``place``: the warm-up's store."""
    import gc
    import select
    import signal
    import socket

    gc.freeze()  # what the warm-up made is never scanned again: no copy-on-write for it
    loaded = sources()
    path = home / SOCKET_NAME
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(os.fsencode(path))
    os.chmod(path, 0o600)
    listener.listen(64)
    own = os.stat(path).st_ino
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the socket goes with it
    children = Children(home, place, (listener, lock))
    waited = 0.0
    try:
        while waited < idle:
            wait = min(CHECK_SECONDS if children.spare else PAUSE_SECONDS, idle)
            if not select.select([listener], [], [], wait)[0]:
                waited += wait
                if not ours(path, own):
                    return
                children.pause()
                continue
            waited = 0.0
            conn, _ = listener.accept()
            if not (ours(path, own) and unchanged(loaded)):
                conn.close()  # the client answers itself; a new helper loads the new code
                return
            if peer_credentials(conn)[1] != os.getuid():
                conn.close()
                continue
            children.answer(conn)
    finally:
        listener.close()
        children.close()
        if ours(path, own):
            path.unlink(missing_ok=True)


class Children:
    """The helper's children: the keeper of the store's file, the spare, and a child forked
    for each request the spare was not there for. A pause in the requests, and the keeper
    checkpoints what they wrote and a new spare is forked (by then most requests' children
    have done their work: a ``PostToolUseFailure``'s takes ~8 ms)."""

    def __init__(self, home: Path, place: Path, helpers: tuple[Closable, ...]) -> None:
        self.environ = dict(os.environ)  # a command's, less what its client sends
        self.place = place
        self.helpers = helpers
        self.keeper = Keeper(home, helpers)
        self.spare: Spare | None = None
        self.written = False  # a request was answered since the last checkpoint

    def pause(self) -> None:
        if self.written:
            self.keeper.checkpoint()
            self.written = False
        if self.spare is None:
            self.spare = Spare(self.environ, self.place, self.held())

    def answer(self, conn: socket.socket) -> None:
        """Hand ``conn`` to the spare when it is ready, else to a child forked for it."""
        self.written = True
        taken = self.spare.take(conn) if self.spare else None
        if taken is not False:
            self.spare = None  # it took the request, or it is gone
        if not taken:
            fork(conn, self.environ, self.held())
        conn.close()

    def held(self) -> tuple[Closable, ...]:
        """What of the helper's a child closes: its listener, lock and lines."""
        return (*self.helpers, self.keeper.line, *([self.spare.line] if self.spare else []))

    def close(self) -> None:
        """The spare, waiting, leaves; the keeper closes the store's file last."""
        for line in (self.keeper.line, *([self.spare.line] if self.spare else [])):
            line.close()


def fork(conn: socket.socket, environ: Mapping[str, str], held: Iterable[Closable]) -> None:
    """Answer ``conn`` in a child forked for it."""
    if os.fork() == 0:
        child(held)
        try:
            handle(conn, environ)
        finally:
            os._exit(0)


def child(held: Iterable[Closable]) -> None:
    """A child's start: it holds none of the helper's ``held`` (its listener, lock and
    lines to its other children), and takes signals as any process does."""
    import signal

    for f in held:
        f.close()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Spare:
    """A child forked ahead of the next request. A forked child copies each page of the
    helper's memory it first writes (Python writes an object's count as it reads it):
    some 1,200 pages, 4 ms, for a ``PostToolUseFailure``. The spare pays that before any
    request comes, by rehearsing one on the warm-up's store, then says it is ready and
    waits for a request's connection."""

    def __init__(self, environ: Mapping[str, str], place: Path,
                 held: Iterable[Closable]) -> None:
        import socket

        self.line, theirs = socket.socketpair()
        self.ready = False
        if os.fork():
            theirs.close()
            return
        child((*held, self.line))
        try:
            rehearse(place, REHEARSAL)
            theirs.sendall(READY)
            _, fds, _, _ = socket.recv_fds(theirs, 1, 1)
            if fds:  # none: the helper has left
                handle(socket.socket(fileno=fds[0]), environ)
        finally:
            os._exit(0)

    def take(self, conn: socket.socket) -> bool | None:
        """Hand ``conn`` to the spare: True when it took it, False when it is not ready
        yet, None when it is gone."""
        import socket

        try:
            if not self.ready:
                said = self.line.recv(len(READY), socket.MSG_DONTWAIT)
                if said != READY:
                    raise ConnectionError("the spare left")
                self.ready = True
            socket.send_fds(self.line, [b"."], [conn.fileno()])
        except BlockingIOError:
            return False
        except OSError:
            self.line.close()
            return None
        self.line.close()
        return True


class Keeper:
    """A child that keeps the store's SQLite file open while the helper lives
    (``reflect.store.sqlite.hold``), so that a step's child no longer checkpoints and
    removes the WAL as it closes, nor makes it again as it opens: two ``fdatasync`` calls
    and ~2 ms a step. It checkpoints when the helper says the requests paused, so what a
    step wrote reaches the disk a pause later at most; its own close, when the helper
    leaves, is the last."""

    def __init__(self, home: Path, held: Iterable[Closable]) -> None:
        import socket

        from reflect.store.sqlite import hold

        self.line, theirs = socket.socketpair()
        if os.fork():
            theirs.close()
            return
        child((*held, self.line))
        try:
            hold(home, lambda: bool(theirs.recv(1)))  # nothing: the helper has left
        finally:
            os._exit(0)

    def checkpoint(self) -> None:
        import contextlib

        with contextlib.suppress(OSError):  # the keeper is gone: the children checkpoint
            self.line.send(b".")


# A session's hooks, as the warm-up runs them; a spare rehearses the one that does most.
FAILED: dict[str, object] = {
    "tool_name": "Bash", "tool_input": {"command": "python -m pytest tests/"},
    "error": "Exit code 1\nTraceback (most recent call last):\n  File \"/srv/app/report.py\","
             " line 3, in <module>\nModuleNotFoundError: No module named 'yaml'"}
EVENTS: tuple[dict[str, object], ...] = (
    {"hook_event_name": "SessionStart"},
    {"hook_event_name": "UserPromptSubmit", "prompt": "make the tests pass"},
    {"hook_event_name": "PreToolUse", **FAILED},
    {"hook_event_name": "PostToolUseFailure", **FAILED},
    {"hook_event_name": "PostToolUse", **FAILED})
# A call's id: each rehearsal is the same step, stored once, so the store does not grow.
REHEARSAL = {**EVENTS[3], "tool_use_id": "toolu_rehearsal"}


def warm_up(place: Path) -> None:
    """Run a session's hooks on ``place``, a throwaway store (twice: a failure seen again
    renders more), so that a child starts with the library imported and its patterns
    compiled. None of reflect's settings of the hook that started the helper reaches
    it: a ``REFLECT_STORE`` would have it write into a real store."""
    import reflect.cli.main
    from reflect.base import lazy
    from reflect.capture import scrub
    from reflect.cli import hook  # noqa: F401 (imported, as every hook's child would)
    from reflect.integrations import codex  # noqa: F401 (imported, as a hook of Codex would)

    for _ in range(2):
        for raw in EVENTS:
            rehearse(place, raw)
    lazy.compile_all()
    scrub.compile_all()
    for name in ("hook", "capture", "recall", "outcome"):  # and what argparse loads
        reflect.cli.main.parser(name).format_usage()
    # and what it compiles as it parses: a capture, a recall or an outcome the helper
    # answers goes through the parser (an installed hook's command line does not)
    reflect.cli.main.parser("recall").parse_args(["recall", "--goal", "warm-up"])


def rehearse(place: Path, raw: Mapping[str, object]) -> None:
    """Answer the hook event ``raw`` on the store in ``place``, as a hook's command would."""
    from reflect.integrations import claude_code, hooks

    env = {**{k: v for k, v in os.environ.items() if not k.startswith("REFLECT_")},
           "REFLECT_HOME": str(place), "REFLECT_WORKER": "off", "REFLECT_HELPER": "off"}
    hooks.respond(claude_code.parse({"session_id": "warm-up", **raw}), env=env)


Sources = dict[str, tuple[tuple[int, int, int, int], bytes]]


def sources() -> Sources:
    """The reflect modules this process loaded (this one runs as ``__main__``): each
    file's identity (inode, size, modification and change times) and a digest of its
    content."""
    from reflect.base.digest import sha256

    package = os.path.dirname(os.path.dirname(__file__))
    found: Sources = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.startswith(package):
            try:
                with open(path, "rb") as f:
                    found[path] = (identity(os.fstat(f.fileno())),
                                   sha256(f.read()).digest())
            except OSError:
                found[path] = ((0, 0, 0, 0), b"")
    return found


def identity(info: os.stat_result) -> tuple[int, int, int, int]:
    return info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def unchanged(loaded: Sources) -> bool:
    """Whether the modules on disk are those loaded, by content: a file whose identity
    changed (a copy that kept the modification time still changes the change time) is
    read again, and counts as changed only when its content did."""
    for path, (known, digest) in loaded.items():
        try:
            if identity(os.stat(path)) == known:
                continue
        except OSError:
            return False
        from reflect.base.digest import sha256

        try:
            with open(path, "rb") as f:
                if sha256(f.read()).digest() != digest:
                    return False
        except OSError:
            return False
    return True


def ours(path: Path, own: int) -> bool:
    try:
        return os.stat(path).st_ino == own
    except OSError:
        return False


class Terminal(io.TextIOWrapper):
    """A child's stderr when its client's is a terminal: what a command says to a person
    there (an empty recall's note) it says through the helper too."""

    def isatty(self) -> bool:
        return True


def handle(conn: socket.socket, base: Mapping[str, str]) -> None:
    """One request in a child: the command run as the cold process would, its output
    sent back once it is all there (a child that dies sends nothing, and the client
    answers itself). Its environment: ``base`` (the helper's own), with what the client
    sent (``sent``) in place of the same names; it runs to its end, whenever that is: the
    client, which answers within the hook's budget, has left the event to it."""
    import contextlib
    import socket

    conn.settimeout(READY_SECONDS)
    try:
        conn.sendall(READY)
        _, fds, _, _ = socket.recv_fds(conn, 1, 1)
        request = marshal.loads(receive_all(conn, time.monotonic() + READY_SECONDS,
                                            MAX_REPLY) or b"")
    except (OSError, ValueError, EOFError, TypeError):  # TimeoutError: an OSError
        return
    if not isinstance(request, dict):
        return
    if len(fds) != 1 or not this_interpreter(str(request.get("executable"))):
        return  # another interpreter's client: it answers itself
    budget.until = None
    env = {**{k: v for k, v in base.items() if not sent({k: v})}, **request["env"]}
    # The command takes ``env`` as its run context's; the process's environment is set to
    # it too, once, as a new process's would be: what is not reflect's reads it (the
    # temporary directory, the home directory, a git config).
    os.environ.clear()
    os.environ.update(env)
    try:
        os.chdir(request["cwd"])
    except OSError:
        os.chdir("/")  # the client's is gone: the command says what it can without it
    os.umask(request["umask"])
    import tempfile  # loaded already (the warm-up): chosen again from the client's TMPDIR

    tempfile.tempdir = None
    out, err = os.memfd_create("reflect-out"), os.memfd_create("reflect-err")
    os.dup2(fds[0], 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    if request.get("terminal"):
        sys.stderr = Terminal(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                              encoding=sys.stderr.encoding, errors="backslashreplace",
                              line_buffering=True)
    try:
        code = command(request["argv"], env)
    except SystemExit as e:  # argparse's exit on misuse
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    sys.stdout.flush()
    sys.stderr.flush()
    stdout, stderr = (os.pread(fd, os.fstat(fd).st_size, 0) for fd in (out, err))
    conn.settimeout(None)
    with contextlib.suppress(OSError):  # the client went on without the answer
        conn.sendall(REPLY.pack(code, len(stdout)) + stdout + stderr)
    conn.close()  # the end of the reply now, not once this process is torn down


if __name__ == "__main__":
    serve(Path(sys.argv[1]), *(float(a) for a in sys.argv[2:3]))
