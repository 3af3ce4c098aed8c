"""Reading what a harness points capture at, in bounded time and memory.

A regular file is read in part: its tail, or its head. Anything else (standard
input, a pipe, a FIFO, a device such as ``/dev/zero``) may never end or never
start: it is read for at most ``STREAM_SECONDS`` and ``STREAM_BYTES``, keeping
the part wanted, and the failure is recorded with whatever came.
"""

from __future__ import annotations

import os
import select
import stat
import time

TYPE_CHECKING = False  # typing itself costs a hook ~2 ms to import
if TYPE_CHECKING:
    from typing import IO, Any

STREAM_SECONDS = 5.0
STREAM_BYTES = 16 * 1024 * 1024
CHUNK = 64 * 1024


def read_bounded(path: str, limit: int, *, tail: bool, stdin: IO[Any] | None = None,
                 seconds: float = STREAM_SECONDS) -> tuple[bytes, list[str]]:
    """At most ``limit + 1`` bytes of ``path`` (``-`` is ``stdin``): its last ones with
    ``tail``, else its first ones; one byte more than ``limit`` says there was more.
    Returns the bytes and notes on a stream cut short. Raises OSError."""
    if path == "-":
        return (b"", []) if stdin is None else _read_fd(stdin.fileno(), limit, tail, seconds)
    # Non-blocking: opening a FIFO that has no writer must not wait for one.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return _read_fd(fd, limit, tail, seconds)
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int, tail: bool, seconds: float) -> tuple[bytes, list[str]]:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory")
    if stat.S_ISREG(info.st_mode):
        if tail:
            os.lseek(fd, max(0, info.st_size - limit - 1), os.SEEK_SET)
        return _read_upto(fd, limit + 1), []
    return _read_stream(fd, limit, tail, seconds)


def _read_upto(fd: int, size: int) -> bytes:
    parts, got = [], 0
    while got < size and (part := os.read(fd, min(CHUNK, size - got))):
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _read_stream(fd: int, limit: int, tail: bool, seconds: float) -> tuple[bytes, list[str]]:
    kept, total = bytearray(), 0
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return bytes(kept), [f"the input gave no end after {seconds:g} s: kept what came"]
        if not select.select([fd], [], [], left)[0]:
            continue
        try:
            part = os.read(fd, CHUNK)
        except BlockingIOError:
            continue
        if not part:
            return bytes(kept), []
        total += len(part)
        kept += part
        if not tail and len(kept) > limit:
            return bytes(kept[: limit + 1]), []
        if len(kept) > 2 * (limit + 1):
            del kept[: -(limit + 1)]
        if total >= STREAM_BYTES:
            megabytes = STREAM_BYTES // (1024 * 1024)
            return bytes(kept[-(limit + 1):]), [
                f"the input did not end after {megabytes} MB: kept its last part"]
