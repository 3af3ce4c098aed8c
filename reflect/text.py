"""Bounding text (every stored field, prompt line and error reason is cut the same way)
and keying it."""

from __future__ import annotations


def clip(text: str | None, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut."""
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def text_key(text: str) -> str:
    """A short stable key for a text (cached vectors are looked up by it)."""
    import hashlib  # here: a hook that only clips text spares loading OpenSSL

    return hashlib.sha256(text.encode()).hexdigest()[:32]
