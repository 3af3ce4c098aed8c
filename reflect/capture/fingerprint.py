"""Stable identity of a root cause.

A fingerprint hashes the error type, a template of the message and the three
innermost stack frames (`file:function`, no line numbers). The same root
cause seen at another line, under another path or with another value must
share it; a different cause must not.

The template keeps what names the cause and masks what merely locates or
instances it:

- Kept: the error's subject, a quoted literal that reads as a name (a module,
  table, attribute, variable, setting, type or key: `'requests'`,
  `'Solution'`, `'test_app.CustomUser'`) or as a token of the language
  (`expected ':'`, `'(' was never closed`). `No module named 'requests'` and
  `No module named 'numpy'` are different causes for an agent: a different
  package to install. Unquoted words are kept for the same reason
  (`no such table: annotations_publisher`, `undefined: y`).
- Masked: numbers (counts, line numbers, sizes, durations) as `<n>`; memory
  addresses and hex ids as `<hex>`; UUIDs as `<uuid>`; URLs as `<url>`; file
  paths, quoted or not, as `<path>`; any other quoted literal (a value, a
  number, a sentence) as `<str>`.
- Dropped: Python's `Did you mean: 'x'?` suggestions, which depend on what
  else is in scope, not on the cause.

A missing module (`No module named 'x'`) is its cause wherever the import stands: its
fingerprint has no frames.

One failure may arrive as its traceback or as its last line alone (what `record_failure`
is often given): the frames refine a cause, never split a failure from its last line.
A fingerprint of no frames is its cause, so `joined` keeps a capture under the
fingerprint its cause already has in the scope (see there).

A cause is the fingerprint without frames: the same mistake in another run
sits in other code (another problem's function, another script), so how
widely a mistake recurs across runs is counted by cause.

When in doubt the rule keeps text: splitting one cause into two fingerprints
costs a missed lesson, merging two causes shows a wrong one. Case is kept,
since names are case-sensitive (`'Math'` and `'math'` differ) and messages of
one error type do not vary in case. Quote style is not identity: kept
literals are rewritten in single quotes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reflect.base import lazy
from reflect.base.digest import sha256

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
_MASK = lazy.compile(
    r"(?P<url>\b[a-z][a-z0-9+.\-]*://[^\s'\"`]+)"
    r"|(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
    r"|(?P<addr>\b0x[0-9a-fA-F]+\b)"
    r"|(?<!\w)(?:'(?P<q1>[^'\n]{0,300})'|\"(?P<q2>[^\"\n]{0,300})\"|`(?P<q3>[^`\n]{0,300})`)"
    rf"|(?P<path>{_PATH})"
    r"|(?P<hex>\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b)"
    r"|(?P<num>(?<![\w.])\d+(?:\.\d+)*)"
)
_NAME = lazy.compile(r"[A-Za-z_][\w.\-]{0,79}")
_TOKEN = lazy.compile(r"[^\w\s'\"`]{1,3}")  # ':', '(', '==', '->'
_PATH_ONLY = lazy.compile(_PATH)
_LABELS = {
    "url": "<url>",
    "uuid": "<uuid>",
    "addr": "<hex>",
    "hex": "<hex>",
    "path": "<path>",
    "num": "<n>",
}
# In a template: a kept quoted literal, or a dotted or snake_case name (``auth_user``).
_SUBJECT = lazy.compile(
    r"'[^'\n]*'|(?<![\w<])(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z]\w*_\w*)(?![\w>])")
_DID_YOU_MEAN = lazy.compile(r"[.,]?\s*Did you mean\b[^?\n]{0,200}\?")
_MISSING_MODULE = "No module named "


def message_template(message: str) -> str:
    """The message with its variable parts masked (see the module docstring)."""
    return " ".join(_MASK.sub(_mask, unsuggested(message)).split())


def unsuggested(message: str) -> str:
    """The message its template is made from: Python's suggestion dropped."""
    return _DID_YOU_MEAN.sub("", message[:_MAX_INPUT])


def fingerprint(error_type: str, message: str, frames: Sequence[str] = ()) -> str:
    """16 hex characters identifying the root cause of an error."""
    kind = error_type.strip().rsplit(".", 1)[-1]  # the same error via another import path
    where = [] if message.startswith(_MISSING_MODULE) else list(frames)[-3:]
    parts = [kind, message_template(message), *where]
    return sha256("\x1f".join(parts).encode("utf-8", "replace")).hexdigest()[:16]


def joined(own: str, root: str, known: Sequence[str]) -> str:
    """The fingerprint a failure is kept under: ``own`` its own, ``root`` its cause,
    ``known`` the fingerprints its cause is kept under in the scope, the latest seen first.
    A last line alone (``own`` is ``root``: no frames) joins the latest of them; a traceback
    joins its cause where a last line came first; otherwise the frames tell one place
    from another."""
    if own in known or not known:
        return own
    if own == root:
        return known[0]
    return root if root in known else own


def cause(error_type: str, message: str) -> str:
    """16 hex characters identifying the mistake whatever code it happened in."""
    return fingerprint(error_type, message)


def family(error_type: str, message: str) -> str:
    """16 hex characters naming the kind of mistake: the cause with its subject masked
    (every kept quoted name, and unquoted dotted or snake_case names, become ``<x>``), so
    ``No module named 'yaml'`` and ``No module named 'six'`` are one family. Evidence is
    pooled across a family when each of its causes is too rare to predict alone."""
    kind = error_type.strip().rsplit(".", 1)[-1]
    subject = family_template(message)
    return sha256(f"family\x1f{kind}\x1f{subject}".encode("utf-8", "replace")).hexdigest()[:16]


def family_template(message: str) -> str:
    """The message as its family has it: the cause's template with its subject (every kept
    quoted name, every dotted or snake_case name) masked as ``<x>``."""
    return _SUBJECT.sub("<x>", message_template(message))


def _mask(m: re.Match[str]) -> str:
    kind = m.lastgroup or ""  # every alternative is a named group
    if kind not in ("q1", "q2", "q3"):
        return _LABELS[kind]
    inner = m[kind]
    if _PATH_ONLY.fullmatch(inner):
        return "<path>"
    return f"'{inner}'" if _NAME.fullmatch(inner) or _TOKEN.fullmatch(inner) else "<str>"
