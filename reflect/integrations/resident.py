"""The resident helper: one process per store that answers hook events with the library
already imported, so that a hook process pays Python's start and little more.

A hook (``reflect hook …``, a process per tool call) is a client: it connects to the
socket ``helper.sock`` in the store directory (private, the socket 0600, the peer checked
to be this user), waits for the helper's child to say it is there, then hands over its
event and environment and prints what comes back. The helper forks a child per request,
so requests run side by side and each starts from the same state; the child runs the
command exactly as the cold process would (``reflect.cli.main``, with the client's
environment, working directory, umask and event on its standard input).

Nothing is lost to the helper: whenever the socket is absent, stale or slow, or the child
dies before answering, the client answers the event itself, in process, from the bytes
it still holds (a child killed after its capture was committed leaves it stored twice
at worst, never lost). A cold hook starts the helper for the next one; the helper exits
when idle, when its socket is taken away, or when the code it loaded changes.
``REFLECT_HELPER=off`` turns it off.
"""

from __future__ import annotations

import _socket
import marshal
import os
import struct
import sys
from pathlib import Path

TYPE_CHECKING = False  # typing's flag (mypy knows it): the client's path loads no typing
if TYPE_CHECKING:  # what the client's path never loads
    import socket
    from collections.abc import Mapping

SOCKET_NAME = "helper.sock"
LOCK_NAME = "helper.lock"
IDLE_SECONDS = 300.0  # a helper nobody asked for this long exits
CHECK_SECONDS = 5.0  # how often an idle helper checks its socket is still its own
READY_SECONDS = 0.5  # a child that has not said it is there by then: the hook goes cold
ANSWER_SECONDS = 9.0  # a child answers within the hook's own budget (hooks.TIME_BUDGET)
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes
READY = b"R"
# The commands an agent runs a process for at each step or tool call, answered by a helper
# that is up; only a hook starts one (capture and recall start no process of their own).
HELPED = frozenset({"hook", "capture", "recall", "outcome"})
STARTS = frozenset({"hook"})
REPLY = struct.Struct("!iI")  # exit code, bytes of stdout; then stdout, then stderr


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("REFLECT_HELPER", "").strip().lower() not in {"off", "0", "false", "no"}


def run(argv: list[str]) -> int:
    """Answer ``reflect <argv>`` through the helper when one answers, else in this process
    (and, for a hook, start a helper for the next one)."""
    from reflect.home import default_home

    home = default_home()
    client, missing = connect(home / SOCKET_NAME)
    if client is None:
        code = cold(argv)
        from reflect import config  # loaded by the command already

        if argv[0] in STARTS and missing and config.enabled():
            start(home)
        return code
    data, fd = None, 0  # a loop command reads its own stdin, if at all (--error-file -)
    try:
        if argv[0] == "hook":  # the event is held here, for the cold answer
            data = read_stdin()
            fd = event_fd(data)
        answered = ask(client, argv, fd)
    finally:
        client.close()
        if fd:
            os.close(fd)
    if answered is None:  # the helper failed us: the command runs here
        return cold(argv, data)
    code, out, err = answered
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    sys.stderr.buffer.write(err)
    sys.stderr.flush()
    return code


def cold(argv: list[str], data: bytes | None = None) -> int:
    """The command in this process; ``data``: the event already read from stdin."""
    if data is not None:
        os.dup2(event_fd(data), 0)  # what the command reads as its stdin, from the start
    from reflect.cli import main

    return main(argv)


def connect(path: Path) -> tuple[_socket.socket | None, bool]:
    """A connection to the helper, or None and whether a helper should be started (none
    listens there; False: the path cannot be a socket, or it is in use)."""
    name = os.fsencode(path)
    if len(name) > MAX_SOCKET_PATH:
        return None, False
    # _socket: the socket module's enums cost a hook ~2 ms to import
    client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    client.settimeout(READY_SECONDS)
    try:
        client.connect(name)
    except (FileNotFoundError, ConnectionRefusedError):
        client.close()
        return None, path.parent.is_dir()
    except OSError:
        client.close()
        return None, False
    return client, False


def read_stdin() -> bytes:
    """The event, read as a hook reads it (bounded in time and size), kept for the cold
    answer should the helper fail."""
    from reflect.capture.reading import STREAM_BYTES, read_bounded

    try:
        data, _ = read_bounded("-", STREAM_BYTES, tail=False, stdin=sys.stdin)
    except (OSError, ValueError):
        return b""
    return data


def event_fd(data: bytes) -> int:
    """A file holding ``data``, at its start: a child's stdin, or this process's."""
    fd = os.memfd_create("reflect-event")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def ask(client: _socket.socket, argv: list[str], stdin: int
        ) -> tuple[int, bytes, bytes] | None:
    """The child's exit code, stdout and stderr, ``stdin`` its standard input; None when
    it did not answer in full."""
    umask = os.umask(0o077)
    os.umask(umask)
    # marshal: built in, and both ends run the same interpreter (the child checks)
    request = marshal.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
                             "umask": umask, "executable": sys.executable})
    try:
        if client.recv(1) != READY:
            return None
        client.settimeout(ANSWER_SECONDS)
        client.sendmsg([b"E"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                 struct.pack("i", stdin))])
        client.sendall(request)
        client.shutdown(_socket.SHUT_WR)
        reply = receive_all(client)
    except OSError:
        return None
    if len(reply) < REPLY.size:
        return None
    code, size = REPLY.unpack_from(reply)
    body = reply[REPLY.size:]
    if len(body) < size:
        return None
    return code, body[:size], body[size:]


def receive_all(conn: _socket.socket) -> bytes:
    parts = []
    while part := conn.recv(65536):
        parts.append(part)
    return b"".join(parts)


def start(home: Path) -> None:
    """Start a helper for ``home``, detached: it outlives this hook, which does not wait."""
    import contextlib

    devnull = os.devnull
    with contextlib.suppress(OSError):  # none started: the next hook goes cold again
        os.posix_spawn(sys.executable, [sys.executable, "-m", __name__, str(home)], os.environ,
                       file_actions=[(os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0)],
                       setsid=True)


# -- the helper ---------------------------------------------------------------------------

def serve(home: Path, idle: float = IDLE_SECONDS) -> None:
    """Listen on ``home``'s socket until idle for ``idle`` seconds; one helper a store."""
    import fcntl
    import select
    import signal
    import socket

    os.umask(0o077)
    lock = open(home / LOCK_NAME, "a")  # noqa: SIM115 (held for the helper's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another helper serves this store
    warm_up()
    import gc

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
    waited = 0.0
    try:
        while waited < idle:
            if not select.select([listener], [], [], min(CHECK_SECONDS, idle))[0]:
                waited += min(CHECK_SECONDS, idle)
                if not ours(path, own):
                    return
                continue
            waited = 0.0
            conn, _ = listener.accept()
            if not (ours(path, own) and sources() == loaded):
                conn.close()  # the client answers itself; a new helper loads the new code
                return
            if peer_uid(conn) != os.getuid():
                conn.close()
                continue
            if os.fork() == 0:
                listener.close()
                lock.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                try:
                    handle(conn)
                finally:
                    os._exit(0)
            conn.close()
    finally:
        listener.close()
        if ours(path, own):
            path.unlink(missing_ok=True)


def warm_up() -> None:
    """Run a session's hooks on a throwaway store (twice: a failure seen again renders
    more), so that a child starts with the library imported and its patterns compiled."""
    import tempfile

    import reflect.cli  # noqa: F401
    from reflect import lazy
    from reflect.integrations import claude_code, codex, hooks  # noqa: F401 (codex: imported)

    failed: dict[str, object] = {
        "tool_name": "Bash", "tool_input": {"command": "python -m pytest tests/"},
        "error": "Exit code 1\nTraceback (most recent call last):\n  File \"/srv/app/report.py\","
                 " line 3, in <module>\nModuleNotFoundError: No module named 'yaml'"}
    events: list[dict[str, object]] = [{"hook_event_name": "SessionStart"},
              {"hook_event_name": "UserPromptSubmit", "prompt": "make the tests pass"},
              {"hook_event_name": "PreToolUse", **failed},
              {"hook_event_name": "PostToolUseFailure", **failed},
              {"hook_event_name": "PostToolUse", **failed}]
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="reflect-warm-up-") as tmp:
        os.environ.update(REFLECT_HOME=tmp, REFLECT_WORKER="off")
        try:
            for _ in range(2):
                for raw in events:
                    hooks.respond(claude_code.parse({"session_id": "warm-up", **raw}))
        finally:
            os.environ.clear()
            os.environ.update(saved)
    lazy.compile_all()


def sources() -> dict[str, float]:
    """The modification times of the reflect modules this process loaded (this one runs
    as ``__main__``)."""
    package = os.path.dirname(os.path.dirname(__file__))
    times = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.startswith(package):
            try:
                times[path] = os.stat(path).st_mtime
            except OSError:
                times[path] = -1.0
    return times


def ours(path: Path, own: int) -> bool:
    try:
        return os.stat(path).st_ino == own
    except OSError:
        return False


def peer_uid(conn: _socket.socket) -> int:
    creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    uid: int = struct.unpack("3i", creds)[1]  # struct ucred: pid, uid, gid
    return uid


def handle(conn: socket.socket) -> None:
    """One request in a child: the command run as the cold process would, its output
    sent back once it is all there (a child that dies sends nothing, and the client
    answers itself)."""
    import socket

    conn.settimeout(ANSWER_SECONDS)
    try:
        conn.sendall(READY)
        _, fds, _, _ = socket.recv_fds(conn, 1, 1)
        request = marshal.loads(receive_all(conn))
    except (OSError, ValueError, EOFError, TypeError):
        return
    if not isinstance(request, dict):
        return
    if len(fds) != 1 or request.get("executable") != sys.executable:
        return  # another interpreter's client: it answers itself
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    import tempfile  # loaded already (the warm-up): chosen again from the client's TMPDIR

    tempfile.tempdir = None
    out, err = os.memfd_create("reflect-out"), os.memfd_create("reflect-err")
    os.dup2(fds[0], 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    from reflect.cli import main

    try:
        code = main(request["argv"])
    except SystemExit as e:  # argparse's exit on misuse
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    sys.stdout.flush()
    sys.stderr.flush()
    stdout, stderr = (os.pread(fd, os.fstat(fd).st_size, 0) for fd in (out, err))
    conn.sendall(REPLY.pack(code, len(stdout)) + stdout + stderr)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), *(float(a) for a in sys.argv[2:3]))
