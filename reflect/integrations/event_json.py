"""A hook's event as JSON, read as far as it goes: an event cut at the size a hook reads
(its tool's output was larger) or nested deeper than Python's parser goes still gives
the fields a capture needs, which come first and sit near the top (the event's name,
session, command and the head of its output).

Such a text is copied token by token: a value nested deeper than ``MAX_DEPTH`` becomes
``null``, and a text cut short is closed (its last string ended, its open arrays and
objects closed, a key left without its value given ``null``)."""

from __future__ import annotations

import json

from reflect.base import lazy
from reflect.capture.numbers import whole_number

TYPE_CHECKING = False  # typing's flag (mypy knows it): a hook's process loads no typing
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 64  # no client's event nests deeper; json's own limit is near 1000
# A whole string, a bracket, a run of anything else, or a string cut short (tried last).
_TOKEN = lazy.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|[^"\[\]{}]+|(?P<cut>"[\s\S]*)')
_CUT_ESCAPE = lazy.compile(r"(?<!\\)(?:\\\\)*(\\(?:u[0-9a-fA-F]{0,3})?)$")
_CUT_SCALAR = lazy.compile(r"[\w.+-]+$")


def loads(text: str, cut: bool) -> tuple[Any, str]:
    """The event and, when it was read otherwise than whole, what was left out."""
    if not cut:
        try:
            return json.loads(text or "null", parse_int=whole_number), ""
        except RecursionError:
            pass
    body, closers, deep = _copied(text)
    said = "; ".join(
        [*(["its end was not read"] if cut else []),
         *([f"values nested deeper than {MAX_DEPTH} left out"] if deep else [])])
    if not cut:
        return json.loads(body + closers, parse_int=whole_number), said
    for ending in _endings(body):
        for value in ("", "null", ":null"):
            try:
                raw = json.loads(ending + value + closers, parse_int=whole_number)
            except ValueError:
                continue
            if isinstance(raw, dict):
                return raw, said
    raise ValueError("what was read of it is no JSON object")


def _copied(text: str) -> tuple[str, str, bool]:
    """The text with deep values as null and a cut string closed; the closers of what
    is still open; whether a value was left out."""
    out: list[str] = []
    stack: list[str] = []
    skipped = 0  # how deep inside a value left out
    deep = False
    for m in _TOKEN.finditer(text):
        token = m[0]
        if token in ("[", "{"):
            if skipped or len(stack) >= MAX_DEPTH:
                if not skipped:  # the value left out, where it stood
                    out.append("null")
                skipped += 1
                deep = True
            else:
                stack.append("]" if token == "[" else "}")
                out.append(token)
        elif token in ("]", "}"):
            if skipped:
                skipped -= 1
            else:
                if stack:
                    stack.pop()
                out.append(token)
        elif not skipped:
            if m.lastgroup == "cut":  # ended, less an escape the cut left half
                partial = _CUT_ESCAPE.search(token)
                token = token[:partial.start(1)] if partial else token
                token += '"'
            out.append(token)
    return "".join(out), "".join(reversed(stack)), deep


def _endings(body: str) -> list[str]:
    """The copied text, then less a scalar cut short, then less a dangling comma."""
    text = body.rstrip()
    endings = [text]
    if not text.endswith('"'):
        text = _CUT_SCALAR.sub("", text).rstrip()
        endings.append(text)
    if text.endswith(","):
        endings.append(text[:-1])
    return endings
