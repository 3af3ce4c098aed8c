"""The cause rule as the migration ``count_causes`` shipped with it: a frozen copy.

A shipped migration must compute on an old store what it computed the day it shipped,
whatever ``reflect.capture.fingerprint`` (the live rule, which may be tuned) says later:
never edit this copy; a new rule that should re-derive old rows is a new migration with a
copy of its own. Imported only while that migration runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

__all__ = ["cause"]

_MAX_INPUT = 4000

_EXTENSIONS = (
    "py|pyc|pyi|ipynb|js|mjs|cjs|jsx|ts|tsx|json|ya?ml|toml|ini|cfg|conf|txt|md|rst|csv"
    "|log|html?|css|c|h|cc|cpp|hpp|rs|go|java|kt|rb|php|sh|bash|sql|sqlite3?|lock|bak|orig"
    "|whl|zip|gz|tar"
)
_SEG = r"[\w.~@+\-]+"  # a path segment: no separators, so no backtracking across them
_PATH = (
    rf"(?<![\w.~@+\-/\\])(?:"
    rf"(?:[A-Za-z]:|~|\.{{1,2}})?(?:[/\\]{_SEG})+[/\\]?"  # rooted: /a, ./a, ~/a, C:\a
    rf"|{_SEG}(?:[/\\]{_SEG}){{2,}}"  # relative with two or more separators
    rf"|{_SEG}(?:[/\\]{_SEG})*\.(?:{_EXTENSIONS})\b"  # a file name: x.py, src/x.c
    rf")"
)
# One pass, so a kept literal is never masked again by a later alternative.
_MASK = re.compile(
    r"(?P<url>\b[a-z][a-z0-9+.\-]*://[^\s'\"`]+)"
    r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"|(?P<addr>\b0x[0-9a-fA-F]+\b)"
    r"|(?<!\w)(?:'(?P<q1>[^'\n]{0,300})'|\"(?P<q2>[^\"\n]{0,300})\"|`(?P<q3>[^`\n]{0,300})`)"
    rf"|(?P<path>{_PATH})"
    r"|(?P<hex>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b)"
    r"|(?P<num>(?<![\w.])\d+(?:\.\d+)*)"
)
_NAME = re.compile(r"[A-Za-z_][\w.\-]{0,79}")
_TOKEN = re.compile(r"[^\w\s'\"`]{1,3}")  # ':', '(', '==', '->'
_PATH_ONLY = re.compile(_PATH)
_LABELS = {
    "url": "<url>",
    "uuid": "<uuid>",
    "addr": "<hex>",
    "hex": "<hex>",
    "path": "<path>",
    "num": "<n>",
}
_DID_YOU_MEAN = re.compile(r"[.,]?\s*Did you mean\b[^?\n]{0,200}\?")


def _message_template(message: str) -> str:
    """The message with its variable parts masked (see the module docstring)."""
    text = _DID_YOU_MEAN.sub("", message[:_MAX_INPUT])
    return " ".join(_MASK.sub(_mask, text).split())


def _fingerprint(error_type: str, message: str, frames: Sequence[str] = ()) -> str:
    """16 hex characters identifying the root cause of an error."""
    kind = error_type.strip().rsplit(".", 1)[-1]  # the same error via another import path
    parts = [kind, _message_template(message), *list(frames)[-3:]]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:16]


def cause(error_type: str, message: str) -> str:
    """16 hex characters identifying the mistake whatever code it happened in."""
    return _fingerprint(error_type, message)


def _mask(m: re.Match[str]) -> str:
    kind = m.lastgroup or ""  # every alternative is a named group
    if kind not in ("q1", "q2", "q3"):
        return _LABELS[kind]
    inner = m[kind]
    if _PATH_ONLY.fullmatch(inner):
        return "<path>"
    return f"'{inner}'" if _NAME.fullmatch(inner) or _TOKEN.fullmatch(inner) else "<str>"
