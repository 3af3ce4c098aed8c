"""Text from tools, made safe to show a model: ``neutralize(text)``.

Tool output can carry text aimed at the model that reads the prompt, spelled to
slip past a pattern: fullwidth or Cyrillic letters, zero-width characters inside
words, bidi overrides, terminal escapes that hide or rewrite what a person sees.
So the text is normalized first (NFKC; escapes, control, bidi and zero-width
characters removed), look-alike letters are folded for matching only, and then
instruction-like text is replaced by ``NEUTRALIZED``.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from reflect.base import lazy

__all__ = ["NEUTRALIZED", "look_alikes_folded", "neutralize"]

NEUTRALIZED = "[instruction-like text removed]"

# ANSI CSI and OSC sequences, other two-byte escapes; then C0 (but tab and newline) and C1.
_ESCAPES = lazy.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_INVISIBLE = dict.fromkeys(
    [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0),
     0x00AD, 0x061C, *range(0x200B, 0x2010), *range(0x202A, 0x202F),
     *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0xFEFF])
# Cyrillic and Greek letters that look Latin: folded one for one, so offsets hold.
_LOOK_ALIKE = str.maketrans(
    "АВЕКМНОРСТХаеорсухіјѕԁІЈЅΑΒΕΖΗΙΚΜΝΟΡΤΥΧαοριυνκ",
    "ABEKMHOPCTXaeopcyxijsdIJSABEZHIKMNOPTYXaopiuvk")
_INSTRUCTION_LIKE = lazy.compile(
    r"\b(?:ignore|disregard|forget|override)\b[^\n]{0,40}?\b(?:instructions?|prompts?|rules"
    r"|guidelines|guidance|directives)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:of\s+)?(?:the\s+)?"
    r"(?:above|previous|prior|preceding|earlier)\b|\bforget\s+everything\b"
    r"|\byou are now\b|\bsystem prompt\b|\bnew instructions?\b"
    r"|\bfrom\s+now\s+on\b[^\n]{0,12}?\byou\b|\bstop\s+what\s+you(?:'re|\s+are)\s+doing\b"
    r"|\bi\s+(?:instruct|order|command)\s+you\b|\bpay\s+no\s+attention\s+to\b"
    r"|\b(?:do\s+not|don't|never)\s+follow\s+(?:the\s+|any\s+|your\s+)?(?:\w+\s+)?"
    r"(?:instructions?|rules|guidance|prompts?)\b"
    r"|^[ \t]*#{2,}[ \t]*(?:instruction|system|response)s?[ \t]*:"
    r"|(?:^|(?<=[\s\"'`(\[>]))(?:system|assistant|user|developer|human)\s*:"
    r"|</?\s*(?:system|instructions?)\s*>|<(?:start|end)_of_turn>"
    r"|\[/?(?:INST|SYS)\]|<</?SYS>>"
    # a model's special tokens (<|im_start|>, <|start_header_id|>, <|begin▁of▁sentence|>),
    # one the text ends in the middle of, and the tags a client's tool calls are read in
    r"|<\|[^|<>\s]{1,40}\|>|<\|[^|<>\s]{0,40}\Z"
    r"|</?\s*(?:function_calls|function_results|invoke|parameter|tool_calls?|tool_use"
    r"|tool_results?)\b[^>\n]{0,200}>"
    # a markdown image: a client that renders it fetches its address, with what it carries
    r"|!\[[^\]\n]{0,200}\]\([^)\n]{0,500}\)"
    # the same asked in other languages
    r"|\bignor(?:ez|e|iere|ieren|a|ar)\s+(?:toutes\s+|alle\s+|todas\s+)?(?:les\s+|las\s+|as\s+)?"
    r"(?:vorherigen\s+)?(?:instructions|anweisungen|instrucciones|instruções)\b"
    r"|\u5ffd\u7565[^\u3002\n]{0,8}(?:\u6307\u793a|\u6307\u4ee4|\u8bf4\u660e|\u89c4\u5219)"
    r"|\u0438\u0433\u043d\u043e\u0440\u0438\u0440\u0443\u0439(?:\u0442\u0435)?[^\n]{0,30}?"
    r"\u0438\u043d\u0441\u0442\u0440\u0443\u043a\u0446\u0438",
    re.IGNORECASE | re.MULTILINE,
)
# Texts up to this long are neutralized once and remembered (a tool's longer output is
# rarely read twice).
CACHED_CHARS = 2000
# Leetspeak read as letters, for matching only (one for one, so offsets hold).
_LEET = str.maketrans("013457@$", "oieastas")
# Letters spaced out one by one ("i g n o r e  a l l"): read closed up, words kept apart.
_SPACED = lazy.compile(r"\b\w(?: {1,2}\w\b){5,}")


def clean(text: str) -> str:
    """NFKC, without escape sequences, control, bidi or zero-width characters."""
    text = unicodedata.normalize("NFKC", text)
    return _ESCAPES.sub("", text).translate(_INVISIBLE)


def look_alikes_folded(text: str) -> str:
    """Cyrillic and Greek letters that look Latin, as the Latin ones (offsets hold)."""
    return text.translate(_LOOK_ALIKE)


def _closed_up(text: str) -> tuple[str, list[int]]:
    """``text`` with letters spaced out one by one closed up (``i g n o r e  a l l`` ->
    ``ignore all``: two spaces part words), and where each of its characters stands in
    ``text``, so that a match read in it is a span of ``text``."""
    dropped = {i for run in _SPACED.finditer(text) for i in range(*run.span())
               if text[i] == " " and text[i + 1] != " "}
    where = [i for i in range(len(text)) if i not in dropped]
    return "".join(text[i] for i in where), where


def _spans(text: str) -> list[tuple[int, int]]:
    """Where instruction-like text stands, read as written, with look-alike letters
    folded, with leetspeak read as letters, and with spaced-out letters closed up (with
    the words around them: ``i g n o r e previous instructions``)."""
    folded = look_alikes_folded(text)
    spans = {m.span() for reading in (text, folded, folded.translate(_LEET))
             for m in _INSTRUCTION_LIKE.finditer(reading)}
    closed, where = _closed_up(folded)
    if len(closed) < len(folded):  # else it was read above
        spans |= {(where[m.start()], where[m.end() - 1] + 1)
                  for m in _INSTRUCTION_LIKE.finditer(closed) if m.end() > m.start()}
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def neutralize(text: str) -> str:
    return _neutralize_short(text) if len(text) <= CACHED_CHARS else _neutralize(text)


# A block renders the same stored lines at every recall, and each reading takes three
# passes of a long pattern: a short text's answer is kept.
@functools.lru_cache(maxsize=1024)
def _neutralize_short(text: str) -> str:
    return _neutralize(text)


def _neutralize(text: str) -> str:
    text = clean(text)
    for start, end in reversed(_spans(text)):
        text = text[:start] + NEUTRALIZED + text[end:]
    return text
