"""The evaluation's own identity of a failure: its signature.

A repeat is a failure whose signature was seen before. The signature is
computed here, from the raw error text in the trace, and never from the
store's fingerprint, so the metric cannot grade the thing it measures.
Finding the error in the text is shared with capture (``extract_text``):
that is extraction, not grading.

``signature(error_text)`` is ``"<type>: <template>"``:

- type: the extracted error type, last dotted component
  (``django.db.utils.OperationalError`` -> ``OperationalError``);
- template: the first line of the extracted message, with
  ``Did you mean …?`` suggestions dropped, URLs masked as ``<url>``, hex ids
  and addresses as ``<hex>``, file paths (anything with a slash, or a name
  with a file extension) as ``<path>``, numbers as ``<n>``, quoted literals
  that are not a plain name (``'twelve apples'``) as ``<str>``; a quoted
  plain name (``'requests'``, ``'Solution'``) and unquoted words are kept,
  because another missing module or attribute is another mistake. Quotes
  become single quotes, runs of spaces one space, and the template is cut at
  160 characters.

It differs from the store's fingerprint by design: no stack frames, only the
first line of the message, and rules written separately.

A failure with no error text has no signature (``None``): nothing says
whether it is the same mistake as another, so it counts as a failure but
never as a repeat.

``group(sig)`` is coarser: the signature with every quoted value and every
dotted or snake_case name masked as ``<q>`` (``ModuleNotFoundError: No module
named <q>``), how a plain system would group failures. Coverage is counted by
both: a lesson about one missing module is not one about another, but it is
about the same kind of mistake.
"""

from __future__ import annotations

import re

from reflect.capture.extract import extract_text

MAX_TEMPLATE = 160

_DID_YOU_MEAN = re.compile(r"[.,;]?\s*Did you mean\b[^?\n]{0,200}\?")
_QUOTED = re.compile(r"""(?<!\w)(?:'([^'\n]{0,200})'|"([^"\n]{0,200})"|`([^`\n]{0,200})`)""")
_NAME = re.compile(r"[A-Za-z_][\w.]{0,79}")
_URL = re.compile(r"\b[a-zA-Z][\w+.\-]*://\S+")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
_EXT = r"(?:py|pyc|js|json|ya?ml|toml|cfg|ini|txt|rst|c|h|cpp|java|sh|html|csv|log)"
# Rooted (/a, ./a, ~/a), two or more slashes (a/b/c), or a file name (x.py, a/x.py).
_PATH = re.compile(rf"(?<![\w<>/.~-])(?:(?:~|\.{{1,2}})?/[\w.\-~/]+|[\w.\-]+(?:/[\w.\-]+){{2,}}/?"
                   rf"|[\w\-]+(?:[/.][\w\-]+)*\.{_EXT}\b)")
_NUMBER = re.compile(r"(?<![\w<])[-+]?\d+(?:\.\d+)?")
_GROUP_QUOTED = re.compile(r"'[^'\n]*'")
_GROUP_NAME = re.compile(r"(?<![\w<])(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|[A-Za-z]\w*_\w*)(?![\w>])")


def signature(error_text: str | None) -> str | None:
    """The failure's signature, or None when the text names no error."""
    if not error_text or not error_text.strip():
        return None
    found = extract_text(error_text)
    if found is None:
        return None
    kind = found.error_type.strip().rsplit(".", 1)[-1] or "Error"
    return f"{kind}: {template(found.message)}"


def group(sig: str | None) -> str | None:
    """The signature's group: its quoted values and dotted or snake_case names masked."""
    if sig is None:
        return None
    return _GROUP_NAME.sub("<q>", _GROUP_QUOTED.sub("<q>", sig))


def template(message: str) -> str:
    """The first line of a message with what varies between instances masked."""
    line = next((x for x in message.splitlines() if x.strip()), "")[:1000]
    line = _DID_YOU_MEAN.sub("", line)
    line = _URL.sub("<url>", line)
    line = _QUOTED.sub(_quoted, line)
    line = _HEX.sub("<hex>", line)
    line = _PATH.sub("<path>", line)
    line = _NUMBER.sub("<n>", line)
    line = " ".join(line.split())
    return line[:MAX_TEMPLATE]


def _quoted(m: re.Match[str]) -> str:
    inner = next(g for g in m.groups() if g is not None)
    if "/" in inner or "\\" in inner or _PATH.fullmatch(inner):
        return "<path>"
    if _NAME.fullmatch(inner) or (inner and len(inner) <= 3 and not inner.isalnum()):
        return f"'{inner}'"  # a name, or a token of the language: ':', '(', '=='
    return "<str>"
