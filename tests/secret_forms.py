"""The forms a secret reaches us in besides whole: cut by a terminal or a tool at a fixed
width (20-39 columns; 80 with an indented or a backslash continuation), URL-encoded, and
base64 inside JSON. Each form has its inverse, so a leak is found in what the scrubber
returns whatever the form did to it: any 8 characters of the secret in a row (all of it
when shorter) that survive, read back through the inverse."""

import base64
import binascii
import json
import re
from collections.abc import Callable, Iterator
from urllib.parse import quote, quote_plus, unquote_plus

NARROW = range(20, 40)
WIDE = 80
FILLER = "build step output: "


def cut(text: str, width: int, joint: str = "\n", indent: str = "") -> str:
    """Each line of the text cut every ``width`` columns, as a terminal or a tool wraps
    it, each continuation line led by ``indent``."""
    return "\n".join(_cut_line(line, width, joint, indent) for line in text.split("\n"))


def _cut_line(line: str, width: int, joint: str, indent: str) -> str:
    lines, rest, first = [], line, True
    while rest or first:
        room = width - (0 if first else len(indent)) - (1 if joint.startswith("\\") else 0)
        lines.append(("" if first else indent) + rest[:room])
        rest, first = rest[room:], False
    return joint.join(lines)


def _unwrap(text: str) -> str:
    return re.sub(r"\\?\r?\n[ \t]*", "", text)


def _unb64(text: str) -> str:
    def decoded(m: re.Match) -> str:
        try:
            return base64.b64decode(m[0], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return m[0]
    return re.sub(r"[A-Za-z0-9+/]{8,}={0,2}", decoded, text)


def _b64_json(line: str) -> str:
    return json.dumps({"event": "log", "data": base64.b64encode(line.encode()).decode()})


def _straddling(line: str, secret: str, width: int) -> Iterator[str]:
    """The line behind filler long enough that a cut at ``width`` falls inside the secret,
    at one offset in 7 (the secret's own line breaks aside), and beside each space at
    its start or in it (a cut there moves the space to the next line's lead)."""
    start = line.index(secret)
    spaces = [k + d for k, c in enumerate(secret) if c == " " for d in (0, 1)]
    for k in [-1, 0, *spaces, *range(3, max(4, len(secret) - 3), 7)]:
        pad = (width - (start + k) % width) % width
        filler = ((FILLER * (pad // len(FILLER) + 1))[:pad - 1] + " ")[-pad:] if pad else ""
        yield filler + line


# form name -> (the texts a line takes in it, the inverse of the form)
Forms = dict[str, tuple[Callable[[str, str], Iterator[str]], Callable[[str], str]]]
FORMS: Forms = {
    "whole": (lambda line, secret: iter([line]), lambda out: out),
    "wrapped at 20-39 columns": (
        lambda line, secret: (cut(line, w) for w in NARROW), _unwrap),
    "wrapped at 80": (
        lambda line, secret: (cut(t, WIDE) for t in _straddling(line, secret, WIDE)), _unwrap),
    "wrapped at 80, indented continuation": (
        lambda line, secret: (cut(t, WIDE, indent="    ") for t in _straddling(line, secret, WIDE)),
        _unwrap),
    "wrapped at 80, backslash continuation": (
        lambda line, secret: (cut(t, WIDE, joint="\\\n")
                              for t in _straddling(line, secret, WIDE - 1)),
        _unwrap),
    "URL-encoded": (lambda line, secret: iter([quote(line, safe=""), quote_plus(line)]),
                    unquote_plus),
    "base64 inside JSON": (lambda line, secret: iter([_b64_json(line)]),
                           lambda out: _unb64(json.loads(out)["data"]) if out.startswith("{")
                           else out),
}


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def leaked(secret: str, line: str, out: str, inverse: Callable[[str], str]) -> bool:
    """Whether any 8 characters of the secret in a row (whitespace aside) are in ``out``
    read back through the form's inverse, and not elsewhere in the line."""
    plain, rest = _squeeze(secret), _squeeze(line.replace(secret, " "))
    seen = _squeeze(inverse(out))
    size = min(8, len(plain))
    return any(plain[i:i + size] in seen and plain[i:i + size] not in rest
               for i in range(len(plain) - size + 1))


def leaks(scrub: Callable[[str], str], secret: str, line: str, form: str) -> list[str]:
    """The texts of the line in this form whose scrubbed text leaks the secret."""
    texts, inverse = FORMS[form]
    return [t for t in texts(line, secret) if leaked(secret, line, scrub(t), inverse)]
