"""Writing a file whole or not at all: the one writer of every file the project replaces
(the vector index, client settings, hook state, traces, exported rules).

It lives here because ``reflect`` depends on ``reflect.index`` and never the other way
round: the index file needs it too, and this is the one place both can import it from.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: str | os.PathLike[str], data: str | bytes | Iterable[bytes | memoryview],
                     *, new_mode: int | None = None, durable: bool = True) -> None:
    """Write ``data`` (text as UTF-8, bytes, or chunks of bytes written in turn) to a
    temporary file beside ``path``, flush it to disk, then rename it over ``path``: a
    reader sees the old file or the new one, even if the process dies midway. On any
    failure the temporary file is removed and the old file is left as it was.
    ``durable=False`` skips the flush to disk (an ``fsync``, milliseconds on many disks):
    a crash of the machine, not of the process, may then leave the file empty, for a file
    its readers can do without.

    The new file keeps the permissions of the one it replaces; a new file gets
    ``new_mode``, by default what ``open()`` would give it (0666 less the umask)."""
    path = Path(path)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        mode = 0o666 & ~_umask() if new_mode is None else new_mode
    chunks = [data.encode("utf-8")] if isinstance(data, str) else (
        [data] if isinstance(data, bytes) else data)
    fd, tmp = _new_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)  # made 0600
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _new_beside(path: Path, tries: int = 100) -> tuple[int, str]:
    """A new file of this process's own beside ``path``, 0600, and its name: what
    ``tempfile.mkstemp`` makes, without tempfile, which loads shutil, random and the
    compressors (~4 ms of a hook's process, which writes its session's file)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(tries):
        tmp = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no new temporary name beside {path} in {tries} tries")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
