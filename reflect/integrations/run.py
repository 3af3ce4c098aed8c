"""``reflect run -- CMD ARGS…``: for harnesses that run a test command (aider's
``--test-cmd``, CI scripts, Makefiles).

The command's output passes through unchanged, as it comes, and its exit code is
kept. On failure the output is captured and the run's block is printed after it;
on success the outcome is reported. Memory trouble costs one line on stderr, never
the command's exit code.

The command runs in a process group of its own, and a signal the wrapper gets
(SIGINT, SIGTERM, SIGHUP, SIGQUIT) is passed on to that whole group, so nothing is left
running; a Ctrl-C exits 130 with no traceback and is no failure. When stdout and stderr
go to one place the command writes both to one stream, in its order; when that place is
a terminal the command gets a terminal of its own (a pty) to write to, so its colours
and line buffering are what they would be without the wrapper.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import signal
import subprocess
import sys
import termios
import threading
from collections.abc import Callable, Mapping
from types import FrameType
from typing import IO, Any, Protocol, cast

from reflect.base import config

KEEP_BYTES = 64 * 1024  # of the output, its end: where the error is; capture reads no more
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
INTERRUPTED = 128 + signal.SIGINT
BINARY_SHARE = 0.1  # of the output's characters, unprintable: binary, summarised


class Chunks(Protocol):
    """What the output is copied from: a pipe's buffered reader, or a pty's ``Reader``."""

    def read1(self, size: int, /) -> bytes: ...


def run(argv: list[str], run: str | None = None, goal: str = "", phase: str = "test",
        env: Mapping[str, str] = os.environ) -> int:
    code, output = execute(argv)
    if code == INTERRUPTED:  # the person stopped it: nothing failed
        return code
    try:
        report(argv, code, output, run, goal, phase, env)
    except Exception as e:
        config.warn(f"run: memory failed ({e}); the command's exit code stands")
    return code


def execute(argv: list[str]) -> tuple[int, str]:
    """Run ``argv``, copying its stdout and stderr through as they come; its exit code
    (128 + N when killed by signal N, as a shell reports it) and the end of its output,
    as text a lesson can quote."""
    stdout, stderr, pty = _streams()
    try:
        proc = subprocess.Popen(argv, process_group=0, stdout=stdout, stderr=stderr)
    except OSError as e:
        for fd in pty:
            os.close(fd)
        message = f"{argv[0]}: command not found" if isinstance(e, FileNotFoundError) \
            else f"{argv[0]}: {e.strerror}"
        print(message, file=sys.stderr)
        return (127 if isinstance(e, FileNotFoundError) else 126), message
    previous = {sig: signal.signal(sig, _forward_to(proc.pid)) for sig in FORWARDED}
    tail, lock = bytearray(), threading.Lock()
    try:
        if pty:
            os.close(pty[1])  # the command's end; the master reads until it is closed
            sources: list[tuple[Chunks | None, IO[bytes]]] = [(Reader(pty[0]), sys.stdout.buffer)]
        else:  # unbuffered=False (the default): the pipes are io.BufferedReader, with read1
            sources = [(cast("Chunks | None", proc.stdout), sys.stdout.buffer),
                       (cast("Chunks | None", proc.stderr), sys.stderr.buffer)]
        threads = [threading.Thread(target=_copy, args=(source, sink, tail, lock), daemon=True)
                   for source, sink in sources if source is not None]
        for t in threads:
            t.start()
        code = _wait(proc)
        for t in threads:
            t.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if pty:
            os.close(pty[0])
    from reflect.capture.entry import tail_of  # here: once the command has finished

    output = tail_of(bytes(tail), KEEP_BYTES)
    return (128 - code if code < 0 else code), describe(output, -code if code < 0 else 0)


def _streams() -> tuple[int, int, tuple[int, ...]]:
    """Where the command writes its stdout and its stderr: a pty of its own when both
    streams go to one terminal, one pipe for both when they go to one other place, else a
    pipe each; and the pty's master and slave, if any."""
    if not _same_file(sys.stdout, sys.stderr):
        return subprocess.PIPE, subprocess.PIPE, ()
    if not sys.stdout.isatty():
        return subprocess.PIPE, subprocess.STDOUT, ()
    master, slave = os.openpty()
    with contextlib.suppress(OSError):  # the same size as the terminal, and no \r added
        fcntl.ioctl(slave, termios.TIOCSWINSZ, fcntl.ioctl(sys.stdout.fileno(),
                                                           termios.TIOCGWINSZ, b"\0" * 8))
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    return slave, slave, (master, slave)


def _same_file(a: IO[Any], b: IO[Any]) -> bool:
    try:
        return os.path.samestat(os.fstat(a.fileno()), os.fstat(b.fileno()))
    except (OSError, ValueError, AttributeError):
        return False


def _forward_to(pgid: int) -> Callable[[int, FrameType | None], None]:
    def forward(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(ProcessLookupError):  # it has exited already
            os.killpg(pgid, signum)
    return forward


def _wait(proc: subprocess.Popen[bytes]) -> int:
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # a handler of the caller's: the group has it already
            continue


class Reader:
    """A pty's master as a file: reading it past the command's exit is an EIO, its end."""

    def __init__(self, fd: int):
        self.fd = fd

    def read1(self, size: int, /) -> bytes:
        try:
            return os.read(self.fd, size)
        except OSError:
            return b""


def _copy(source: Chunks, sink: IO[bytes], tail: bytearray, lock: threading.Lock) -> None:
    for chunk in iter(lambda: source.read1(65536), b""):
        sink.write(chunk)
        sink.flush()
        with lock:
            tail.extend(chunk)
            del tail[:-(KEEP_BYTES + 1)]  # one byte more says it was cut


def describe(output: bytes, signum: int = 0) -> str:
    """The output as text, or a summary of it when it is binary; a command killed by a
    signal (``signum``) says so, by the signal's name."""
    text = output.decode("utf-8", errors="replace")
    unprintable = sum(1 for c in text if c == "\ufffd" or (ord(c) < 32 and c not in "\t\n\r\x1b"))
    if text and unprintable > BINARY_SHARE * len(text):
        text = f"(binary output, {len(output)} bytes, not shown)"
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = "unknown"
        text += f"\nKilled by signal {signum} ({name})"
    return text.strip()


def report(argv: list[str], code: int, output: str, run: str | None, goal: str,
           phase: str, env: Mapping[str, str]) -> None:
    from reflect import Memory, Settings
    from reflect.api.context import RunContext

    if not config.enabled(env):  # the kill switch: the command ran, and nothing is opened
        return
    action = shlex.join(argv)
    context = RunContext.from_env(env, run=run, settings=Settings(embed_here=False))
    with Memory(context=context) as mem:
        if code != 0:
            mem.capture(goal=goal, phase=phase, action=action, exit_code=code,
                        error_text=output)
            mem.ensure_worker()
            block = mem.recall(goal=goal, phase=phase).text
            if block:
                print(f"\n{block}", flush=True)
        elif mem.failures(run=mem.run, limit=1):
            mem.outcome(success=True, action=action)
