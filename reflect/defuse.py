"""Text from tools, made safe to show a model: ``neutralize(text)``.

Tool output can carry text aimed at the model that reads the prompt, spelled to
slip past a pattern: fullwidth or Cyrillic letters, zero-width characters inside
words, bidi overrides, terminal escapes that hide or rewrite what a person sees.
So the text is normalized first (NFKC; escapes, control, bidi and zero-width
characters removed), look-alike letters are folded for matching only, and then
instruction-like text is replaced by ``NEUTRALIZED``.
"""

from __future__ import annotations

import re
import unicodedata

from reflect import lazy

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
    r"|guidelines|directives)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:of\s+)?(?:the\s+)?"
    r"(?:above|previous|prior|preceding|earlier)\b"
    r"|\byou are now\b|\bsystem prompt\b|\bnew instructions?\b"
    r"|(?:^|(?<=[\s\"'`(\[>]))(?:system|assistant|user|developer)\s*:"
    r"|</?\s*(?:system|instructions?)\s*>|<\|[a-z_]+\|>|\[/?(?:INST|SYS)\]|<</?SYS>>",
    re.IGNORECASE | re.MULTILINE,
)


def clean(text: str) -> str:
    """NFKC, without escape sequences, control, bidi or zero-width characters."""
    text = unicodedata.normalize("NFKC", text)
    return _ESCAPES.sub("", text).translate(_INVISIBLE)


def look_alikes_folded(text: str) -> str:
    """Cyrillic and Greek letters that look Latin, as the Latin ones (offsets hold)."""
    return text.translate(_LOOK_ALIKE)


def neutralize(text: str) -> str:
    text = clean(text)
    folded = look_alikes_folded(text)
    spans = [m.span() for m in _INSTRUCTION_LIKE.finditer(folded)]
    for start, end in reversed(spans):
        text = text[:start] + NEUTRALIZED + text[end:]
    return text
