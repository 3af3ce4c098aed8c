"""Bounding text (every stored field, prompt line and error reason is cut the same way),
making it one line, the one way a failure's error is written, counting things in words,
and keying text."""

from __future__ import annotations


def clip(text: str | None, limit: int, *, at_word: bool = False) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut;
    ``at_word``: at the last word boundary that fits (a lesson's trigger and guidance)."""
    text = text or ""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not at_word:
        return cut.rstrip() + "…"
    head = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return head.rstrip(" ,;:-") + "…"


def one_line(text: str | None) -> str:
    """``text`` as one line: every run of white space (newlines too) one space, none at
    the ends."""
    return " ".join((text or "").split())


def format_error(error_type: str, message: str) -> str:
    """A failure's error as one text: what its lesson keeps, what a search looks it up
    by, what a person is told was recorded."""
    return f"{error_type}: {message}"


def counted(n: int, noun: str) -> str:
    """``1 repeat``, ``2 repeats``: a count with its noun in the right number."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def text_key(text: str) -> str:
    """A short stable key for a text (cached vectors are looked up by it)."""
    import hashlib  # here: a hook that only clips text spares loading OpenSSL

    return hashlib.sha256(text.encode()).hexdigest()[:32]
