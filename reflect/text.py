"""Bounding text: every stored field, prompt line and error reason is cut the same way."""

from __future__ import annotations


def clip(text: str | None, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut."""
    text = text or ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
