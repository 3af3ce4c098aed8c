"""The thin client of the resident helper: all that the process of a step (a hook, a
capture, a recall, an outcome) runs while a helper answers it. It imports the standard
library and three small modules of reflect that need nothing else (where the store is, the
hook's time budget, a bounded read of standard input): the library, the CLI and the store
are the helper's to load (``reflect.cli.resident``), or this process's only when it
answers cold.

It talks only to its own user's helper (the store directory and the socket owned by the
user and writable by no one else, the peer's uid checked by ``SO_PEERCRED``, and the
peer's process: this interpreter running the helper for this store, as /proc shows it),
waits for the helper's child to say it is there, then hands over its event and the
environment the answer needs (reflect's settings, the locale, where home and temp are;
never the API keys), and prints what comes back once it is a well-formed answer, received
in full within the hook's time budget and ``MAX_REPLY`` bytes. Whenever the socket is
absent, stale or slow, or the child dies before answering, the command runs here, cold,
from the bytes this process still holds.
"""

from __future__ import annotations

import _json
import _socket
import marshal
import os
import stat
import struct
import sys
import time

from reflect.base.home import home_dir
from reflect.integrations import budget

TYPE_CHECKING = False  # typing's flag (mypy knows it): the client's path loads no typing
if TYPE_CHECKING:  # what the client's path never loads
    from collections.abc import Mapping

SOCKET_NAME = "helper.sock"
READY_SECONDS = 0.5  # a child that has not said it is there by then: the hook goes cold
ANSWER_SECONDS = 4.0  # the most of the hook's budget a child is waited for; the rest is
# the cold answer's, should the child not answer
MAX_REPLY = 4 * 2**20  # bytes: a hook's answer is at most ~10k characters, a block a few k
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes
READY = b"R"
# The commands an agent runs a process for at each step or tool call, answered by a helper
# that is up; only a hook starts one (capture and recall start no process of their own).
HELPED = frozenset({"hook", "capture", "recall", "outcome"})
STARTS = frozenset({"hook"})
REPLY = struct.Struct("!iI")  # exit code, bytes of stdout; then stdout, then stderr
# The environment a child answers with: reflect's settings, the store's (PostgreSQL's
# own variables), the locale, the time zone and where home and temp are. The rest (API
# keys above all) is never sent: a child that starts a worker gives it the helper's own.
SENT_NAMES = frozenset({"HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE", "PATH", "USER", "LOGNAME"})
SENT_PREFIXES = ("REFLECT_", "LC_", "PG", "XDG_")
NEVER_SENT = frozenset({"REFLECT_API_KEY"})
LATE = "late"  # the child has the event but no answer yet: it finishes it; none goes cold


def enabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("REFLECT_HELPER", "").strip().lower() not in {"off", "0", "false", "no"}


def run(argv: list[str]) -> int:
    """Answer ``reflect <argv>`` through the helper when one answers, else in this process
    (and, for a hook, start a helper for the next one)."""
    try:
        home = home_dir(os.environ, os.getcwd())  # the launcher's process: a boundary
    except OSError:  # the working directory is gone: the command says so itself
        return cold(argv)
    client, missing = connect(home)
    if client is None:
        code = cold(argv)
        from reflect.base import config  # loaded by the command already

        if argv[0] in STARTS and missing and config.enabled(os.environ):
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
    if isinstance(answered, str):  # LATE: the child has the request, but no answer yet
        if argv[0] == "hook":  # recorded here too: the call's id makes both records one step
            return cold(argv, data)
        warn(f"the resident helper did not answer within {ANSWER_SECONDS:g} s; it goes on"
             " recording without an answer")
        return 0
    code, out, err = answered
    try:
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
    except BrokenPipeError:  # as the cold command: the reader had what it wanted
        from reflect.cli.pipe import closed_pipe

        code = closed_pipe()
    sys.stderr.buffer.write(err)
    sys.stderr.flush()
    return code


def cold(argv: list[str], data: bytes | None = None) -> int:
    """The command in this process; ``data``: the event already read from stdin."""
    if data is not None:
        os.dup2(event_fd(data), 0)  # what the command reads as its stdin, from the start
    return command(argv)


def command(argv: list[str], env: Mapping[str, str] | None = None) -> int:
    """``reflect <argv>`` in this process, in the environment ``env`` (the process's by
    default): a hook's command line as an install writes it answered without the command
    line's parser (``reflect.cli.hook``), any other by the CLI. The cold process and the
    resident helper's child both run it."""
    from reflect.cli import hook

    if hook.installed(argv):
        return hook.answer(argv[1], os.environ if env is None else env)
    from reflect.cli.main import main

    return main(argv, env)



def connect(home: str | os.PathLike[str]) -> tuple[_socket.socket | None, bool]:
    """A connection to this user's helper, or None and whether a helper should be started
    (none listens there; False: the path cannot be a socket, is in use, or is not this
    user's alone, which is said on stderr)."""
    path = os.path.join(home, SOCKET_NAME)
    name = os.fsencode(path)
    if len(name) > MAX_SOCKET_PATH:
        return None, False
    try:
        info = os.lstat(path)
    except OSError:
        return None, private(home)
    why = untrusted(home, info)
    if why:
        warn(f"{why}: the hook is answered without the resident helper")
        return None, False
    # _socket: the socket module's enums cost a hook ~2 ms to import
    client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    client.settimeout(READY_SECONDS)
    try:
        client.connect(name)
        pid, peer = peer_credentials(client)
    except (FileNotFoundError, ConnectionRefusedError):
        client.close()
        return None, True  # a helper that was killed left its socket: start another
    except OSError:
        client.close()
        return None, False
    if peer != os.getuid():
        client.close()
        warn(f"{path} is served by uid {peer}, not this user: the hook is answered"
             " without the resident helper")
        return None, False
    stranger = not_the_helper(pid, home)
    if stranger:  # the user's own process, but not ours: it is sent nothing, its reply unread
        client.close()
        warn(f"{path} is served by {stranger}, not the resident helper reflect starts: the"
             " hook is answered without it")
        return None, False
    return client, False


def helper_argv(home: str | os.PathLike[str]) -> list[str]:
    """The command line ``start`` runs the helper for ``home`` with (a test or bench may
    add its idle seconds)."""
    return [sys.executable, "-m", "reflect.cli.resident", os.fspath(home)]


def this_interpreter(path: str) -> bool:
    """Whether ``path`` runs this interpreter as this install: any of its names in the
    same directory (a venv's python and python3: a hook's script runs one, a person or a
    bench may start the helper with the other); another directory is another install."""
    return (os.path.dirname(path) == os.path.dirname(sys.executable)
            and os.path.realpath(path) == os.path.realpath(sys.executable))


def not_the_helper(pid: int, home: str | os.PathLike[str]) -> str:
    """What process ``pid`` is when it is not the helper ``start`` starts for ``home`` (this
    interpreter, run with ``helper_argv``), as /proc shows it; "" when it is. The peer's
    uid alone would trust any process of the user's listening at the socket."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [os.fsdecode(a) for a in f.read().split(b"\0")[:-1]]
    except OSError as e:
        return f"pid {pid}, which /proc does not show ({e.strerror})"
    expected = helper_argv(home)
    if exe == os.path.realpath(sys.executable) and argv and this_interpreter(argv[0]) \
            and argv[1:len(expected)] == expected[1:] \
            and len(expected) <= len(argv) <= len(expected) + 1:
        return ""
    return f"pid {pid} ({' '.join(argv)[:200] or exe})"


def private(home: str | os.PathLike[str]) -> bool:
    """Whether ``home`` is this user's directory and no one else can write in it: only
    there does a helper listen."""
    try:
        info = os.stat(home)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and not untrusted(home, info, directory=True)


def untrusted(home: str | os.PathLike[str], info: os.stat_result, directory: bool = False) -> str:
    """Why the socket (``info``; with ``directory``, the store directory's) is not this
    user's helper's alone, or "" when it is: owned by the user, written by no one else."""
    if not directory:
        if not stat.S_ISSOCK(info.st_mode):
            return f"{os.path.join(home, SOCKET_NAME)} is not a socket"
        try:
            why = untrusted(home, os.stat(home), directory=True)
        except OSError as e:
            return f"{home}: {e.strerror}"
        if why:
            return why
    named = home if directory else os.path.join(home, SOCKET_NAME)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != os.getuid():
        return f"{named} is owned by uid {info.st_uid}, not this user (mode {mode:04o})"
    if mode & 0o022:
        return f"{named} is mode {mode:04o}: others can write in it (chmod go-w)"
    return ""


def warn(message: str) -> None:
    """A warning as the CLI words it, without loading the CLI."""
    sys.stderr.write(f"reflect: warning: {message}\n")
    sys.stderr.flush()


def read_stdin() -> bytes:
    """The event, read as a hook reads it (bounded in time and size), kept for the cold
    answer should the helper fail."""
    from reflect.capture.reading import STREAM_BYTES, read_bounded

    try:
        data, _ = read_bounded("-", STREAM_BYTES, tail=False, stdin=sys.stdin,
                               seconds=budget.STDIN_SECONDS)
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


def sent(env: Mapping[str, str]) -> dict[str, str]:
    """What of ``env`` a child answers with (``SENT_NAMES``)."""
    return {k: v for k, v in env.items()
            if (k in SENT_NAMES or k.startswith(SENT_PREFIXES)) and k not in NEVER_SENT}


def ask(client: _socket.socket, argv: list[str], stdin: int, until: float | None = None
        ) -> tuple[int, bytes, bytes] | str | None:
    """The child's exit code, stdout and stderr, ``stdin`` its standard input; ``LATE``
    when it has the request but has not answered by ``until`` (``time.monotonic``;
    ``ANSWER_SECONDS`` after the process started); None when it did not take it, or died,
    or its answer is not one the command gives, or is longer than ``MAX_REPLY`` bytes."""
    umask = os.umask(0o077)
    os.umask(umask)
    try:
        cwd = os.getcwd()
    except OSError:  # removed: the child runs where it can, as the cold process would
        cwd = "/"
    # marshal: built in, and both ends run the same interpreter (the child checks)
    request = marshal.dumps({"argv": argv, "cwd": cwd, "env": sent(os.environ),
                             "umask": umask, "executable": sys.executable,
                             "terminal": sys.stderr.isatty()})
    until = budget.STARTED + ANSWER_SECONDS if until is None else until
    try:
        client.settimeout(max(0.001, min(READY_SECONDS, until - time.monotonic())))
        if client.recv(1) != READY:
            return None
        client.settimeout(max(0.001, until - time.monotonic()))
        client.sendmsg([b"E"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                 struct.pack("i", stdin))])
        client.sendall(request)
        client.shutdown(_socket.SHUT_WR)
    except OSError:
        return None
    try:
        reply = receive_all(client, until, MAX_REPLY)
    except TimeoutError:
        return LATE
    except OSError:
        return None
    if reply is None or len(reply) < REPLY.size:
        return None
    code, size = REPLY.unpack_from(reply)
    body = reply[REPLY.size:]
    if len(body) < size or not answers(argv, code, body[:size]):
        return None
    return code, body[:size], body[size:]


def answers(argv: list[str], code: int, out: bytes) -> bool:
    """Whether ``out`` and ``code`` are what ``reflect <argv>`` answers: an exit code a
    process can have, text; for a hook, exit 0 and one JSON object (or a misuse's exit 2
    and nothing)."""
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if not 0 <= code <= 255:
        return False
    if argv[0] != "hook":
        return True
    if code != 0:
        return code == 2 and not out
    # The scanner raises StopIteration when no value starts at 0, and for a malformed one
    # a ValueError, or under Python 3.11 a SystemError, as it reports it through
    # json.decoder, which it does not load. The stub wants a scanner as the context.
    try:
        value, end = _json.make_scanner(Decoding)(text, 0)  # type: ignore[arg-type]
    except (StopIteration, ValueError, SystemError):
        return False
    return isinstance(value, dict) and text[end:] == "\n" and text.count("\n") == 1


class Decoding:
    """What the C scanner of ``json`` reads of its decoder, as ``json.loads`` sets it: the
    scanner alone, since the ``json`` package loads ``re`` (~9 ms of a hook's process where
    nothing else has)."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int, parse_constant = float, int, float  # NaN, Infinity: floats


def receive_all(conn: _socket.socket, until: float, limit: int) -> bytes | None:
    """What ``conn`` sends until it closes, or None when that is more than ``limit``
    bytes; raises TimeoutError when it is not closed by ``until`` (``time.monotonic``)."""
    parts: list[bytes] = []
    got = 0
    while True:
        wait = until - time.monotonic()
        if wait <= 0:
            raise TimeoutError
        conn.settimeout(wait)
        part = conn.recv(min(65536, limit + 1 - got))
        if not part:
            return b"".join(parts)
        parts.append(part)
        got += len(part)
        if got > limit:
            return None


def start(home: str | os.PathLike[str]) -> None:
    """Start a helper for ``home``, detached: it outlives this hook, which does not wait."""
    import contextlib

    devnull = os.devnull
    with contextlib.suppress(OSError):  # none started: the next hook goes cold again
        os.posix_spawn(sys.executable, helper_argv(home), os.environ,
                       file_actions=[(os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0)],
                       setsid=True)



def peer_credentials(conn: _socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end of ``conn`` (for a client: the
    process that listens)."""
    creds = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)  # struct ucred: pid, uid, gid
    return pid, uid
