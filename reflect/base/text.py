"""Bounding text (every stored field, prompt line and error reason is cut the same way),
making it one line, the one way a failure's error is written, counting things in words,
and keying text."""

from __future__ import annotations

from reflect.base.digest import sha256


def clip(text: str | None, limit: int, *, at_word: bool = False) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut;
    ``at_word``: at the last word boundary that fits, never inside a word or a backticked
    command (one the line is about keeps its first words, another goes whole), so no word
    a reader is shown is a stub; only a "word" longer than ``limit`` (a hash) is cut."""
    text = text or ""
    if len(text) <= limit:
        return text
    cut = text[: limit - 2]  # room for " …"
    if not at_word:
        return text[: limit - 1].rstrip() + "…"
    if cut.count("`") % 2:  # the cut falls in a backticked command
        start = cut.rindex("`")
        words = text[start + 1: limit - 3]  # room for " …`"
        if start < limit // 2 and " " in words.strip():
            return text[: start + 1] + words.rsplit(" ", 1)[0].rstrip() + " …`"
        cut = cut[:start]
    elif not (cut[-1].isspace() or cut[-1] == "`" or text[limit - 2].isspace()):
        # Within a word: back to a space, or to a path's or an option's separator
        # (`tests/…`, `--out=…`); not to a dot, as `test_dates.…` would read whole.
        start = max(cut.rfind(" "), cut.rfind("/") + 1, cut.rfind("=") + 1)
        if start <= 0:  # one "word" longer than the limit (a hash): cut where it must be
            return text[: limit - 1] + "…"
        cut = cut[:start]
        if cut.count("`") % 2:  # back into a backticked command: it goes whole
            cut = cut[: cut.rindex("`")]
    head = cut.rstrip(" ,;:-(")
    if head[-1:] in ("'", '"') and head.count(head[-1]) % 2:  # a quote opened, nothing in it
        head = head[:-1].rstrip(" ,;:-(")
    # A space keeps the ellipsis off the last word: "or use …" is whole, "or use anoth…" not.
    spaced = head and (_in_word(head[-1]) or head[-1] in "`'\")")
    return head + (" …" if spaced else "…")


def _in_word(char: str) -> bool:
    return char.isalnum() or char == "_"


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
    return sha256(text.encode()).hexdigest()[:32]
