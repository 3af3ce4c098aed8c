"""Remove secrets and personal data from text before anything is stored or sent.

Everything ``reflect`` keeps passes through :class:`Scrubber`. Each redaction
leaves a typed placeholder, so a lesson still says *what* was there:

    [REDACTED:private_key]  PEM private key blocks, truncated ones too
    [REDACTED:api_key]      vendor keys by their documented prefixes and shapes (OpenAI,
                            Anthropic, GitHub, GitLab, AWS, Azure, Alibaba, Slack, Stripe,
                            Square, Google, Hugging Face, Docker Hub, npm, PyPI, Twilio,
                            Grafana, New Relic and about 80 more), also base64-encoded
    [REDACTED:token]        JWTs, ``Bearer`` tokens, Authorization headers, webhook URLs
    [REDACTED:secret]       the value of a password/secret/token/key assignment, a cookie
                            header, a password on a command line or in a .netrc, a key
                            named in words (`application key …`), a URL's
                            signature or session parameter, a wallet's private key
    [REDACTED:credentials]  ``user:pass`` in a URL
    [REDACTED:card]         payment card numbers (Luhn-checked)
    [REDACTED:ssn]          US social security numbers
    [REDACTED:phone]        telephone numbers (with a country code, or North American)
    [REDACTED:email]        e-mail addresses
    [REDACTED:ip]           IPv4 and IPv6 addresses (loopback and 0.0.0.0 are kept)
    [USER]                  the user name in a home directory path
    [REPO]                  the current repository's ``owner/name``
    [REDACTED]              a match of a user-supplied pattern

A secret is also found where a wrap cut it (lines of 20 columns or more, an indented
or a backslash continuation), percent-encoded, or base64-encoded. No rule matches a
placeholder, so scrubbing twice changes nothing. The rules are in scrub_rules.py, the
other readings of a text (wrap, escapes) in scrub_views.py.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from reflect.base import config, lazy
from reflect.capture.gitconfig import repo_from_git_config
from reflect.capture.scrub_rules import (
    ALL_RULES,
    AWS_SECRET_ENTROPY,
    ENCODED,
    GATES,
    LABEL,
    VERSIONED,
    WORD_START,
    alternation,
    entropy,
    is_card,
    is_ip,
    is_phone,
    is_value,
    names_a_hash,
)
from reflect.capture.scrub_views import View, Wraps, percent_decoded, unwrapped

__all__ = ["Rules", "Scrubber", "Wraps", "compile_all", "scrub_text"]

class Rules:
    """The built-in rules as one pattern. ``gated``: a rule with a gate (``GATES``) joins
    the pattern once a text opens its gate, so a capture compiles only the rules its
    texts could trigger; without, every rule is compiled at once."""

    def __init__(self, gated: bool = True):
        # The rules compiled so far and their pattern, replaced as one value: threads
        # that race compile twice, and each scans with a pattern that holds what its
        # text needs.
        self._compiled: tuple[frozenset[str], re.Pattern[str] | None] = (
            ALL_RULES - set(GATES) if gated else ALL_RULES, None)

    def pattern(self, text: str) -> re.Pattern[str]:
        """Every rule that could match in ``text``: the rules compiled so far, and those
        whose gates ``text`` opens."""
        names, pattern = self._compiled
        opened = {name for name, gate in GATES.items() if name not in names and gate(text)}
        if opened or pattern is None:
            names = names | opened
            pattern = re.compile(alternation(names))
            self._compiled = (names, pattern)
        return pattern

    def open_all(self) -> None:
        """Every rule in the pattern now, whatever the texts to come open."""
        self._compiled = (ALL_RULES, re.compile(alternation(ALL_RULES)))


_SHARED = Rules()  # every scrubber's, so a process compiles each rule once


def compile_all() -> None:
    """Every built-in rule compiled into the shared pattern: for the resident helper,
    whose children would each compile what a text's gate opens, and lose it at exit."""
    _SHARED.open_all()


_PLACEHOLDER = lazy.compile(r"(\[(?:REDACTED(?::[a-z_]+)?|USER|REPO)\])")


def _encoded(text: str, wraps: Wraps, rules: Rules) -> bool:
    """Base64 of text holding a secret, or a bare AWS-style secret."""
    try:
        plain = base64.b64decode(text + "=" * (-len(text) % 4), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        plain = ""
    # a decoded PEM block or config file keeps its line breaks
    if plain and all(c.isprintable() or c in "\r\n\t" for c in plain) and (
            _builtin_pass(plain, wraps, rules)[1]):
        return True
    kinds = (str.isupper, str.islower, str.isdigit)
    return (len(text) == 40 and all(any(map(kind, text)) for kind in kinds)
            and entropy(text) >= AWS_SECRET_ENTROPY)


def _keep_from(match: re.Match[str]) -> int:
    """Where the redacted part of a match starts: its v_<rule> group, else its start."""
    keep = f"v_{match.lastgroup}"
    start = match.start(keep) if keep in match.re.groupindex else -1
    return start if start >= 0 else match.start()


def _redacts(match: re.Match[str]) -> bool:
    """Whether a rule's match is a secret, by the checks a pattern cannot make."""
    kind = match.lastgroup or ""  # every alternative of the rules is a named group
    if kind == "ip":
        return is_ip(match[0]) and not VERSIONED.search(
            match.string, max(0, match.start() - 12), match.start())
    if kind == "card":
        return is_card(match[0])
    if kind == "phone":
        return is_phone(match[0])
    if kind == "secret":
        return is_value(match)
    if kind == "key_shape" and match[0].startswith("0x"):
        return not names_a_hash(match.string, match.start())
    return True


# The lines after a key block that are more of it: body, or the pieces of its END line
# that a wrap cut off.
_KEY_TAIL = lazy.compile(r"(?:\\?\r?\n[ \t]*(?:[A-Za-z0-9+/=]{8,}"
                         r"|(?![-A-Z0-9 ]*BEGIN)[-A-Z0-9 ]*-[-A-Z0-9 ]*)"
                         r"(?=[ \t]*\\?(?:\r?\n|\Z)))*")
# A finding: the span of the text to redact, and its placeholder.
Finding = tuple[int, int, str]


def _label(match: re.Match[str]) -> str:
    """The placeholder: a key named in words that is a vendor's key is told as one."""
    kind = match.lastgroup or ""
    if kind == "named_key" and _VENDOR.fullmatch(match.string, _keep_from(match), match.end()):
        return LABEL["api_key"]
    return LABEL[kind]


_VENDOR = lazy.compile(WORD_START["api_key"])


def _raw_findings(text: str, rules: Rules) -> list[Finding]:
    found = []
    for m in rules.pattern(text).finditer(text):
        if _redacts(m):
            keep = _keep_from(m)
            found.append((keep, m.end(), _label(m)))
            if m.lastgroup == "cli_password":  # the command line before the flag may hold others
                found += [(m.start() + a, m.start() + b, label)
                          for a, b, label in _raw_findings(text[m.start():keep], rules)]
    return found


def _view_findings(view: View, wraps: Wraps, rules: Rules) -> list[Finding]:
    """What the rules find in the view where it reads the text otherwise (across a
    wrap, through an escape), the character either side included (a rule's lookaround
    reads them), as spans of the text."""
    seen = view.joined()
    found = [(m.start(), _keep_from(m), m.end(), _label(m))
             for m in rules.pattern(seen).finditer(seen) if _redacts(m)]
    found += [(m.start(), m.start(), m.end(), LABEL["encoded"])
              for m in ENCODED.finditer(seen) if _encoded(m[0], wraps, rules)]
    spans = []
    for start, keep, end, label in found:
        if view.span(max(0, start - 1), min(view.size, end + 1))[2]:
            b = view.span(start, end)[1]
            spans.append((view.span(keep, end)[0] if keep < end else b, b, label))
    return spans


def _apply(text: str, found: list[Finding]) -> tuple[str, int]:
    """The text with each finding replaced; two that overlap go as one, under the
    longer one's placeholder (a secret read whole across a wrap, a value that a form's
    `+` does not cut)."""
    chosen: list[Finding] = []
    for a, b, label in sorted(found):
        if label == LABEL["private_key"]:
            b = _KEY_TAIL.match(text, b).end()  # type: ignore[union-attr]
        if chosen and a < chosen[-1][1]:
            last = chosen[-1]
            longer = label if b - a > last[1] - last[0] else last[2]
            chosen[-1] = (last[0], max(b, last[1]), longer)
            continue
        chosen.append((a, b, label))
    out, done = [], 0
    for a, b, label in chosen:
        # the text keeps its lines: a wrapped secret leaves its line breaks behind (a
        # key block goes whole)
        breaks = 0 if label == LABEL["private_key"] else text.count("\n", a, b)
        out += [text[done:a], label, "\n" * breaks]
        done = b
    return "".join(out) + text[done:], len(chosen)


def _builtin_pass(text: str, wraps: Wraps, rules: Rules) -> tuple[str, int]:
    """The built-in rules over the text as it is, its wrapped lines joined and its
    escapes decoded; then the base64 runs that are left (a run that decodes to no
    secret is still read by every other rule first)."""
    found = _raw_findings(text, rules)
    for view in (*unwrapped(text, wraps), percent_decoded(text)):
        if view is not None:
            found += _view_findings(view, wraps, rules)
    text, n = _apply(text, found)
    text, m = _subn(ENCODED, lambda m: (LABEL["encoded"] if _encoded(m[0], wraps, rules)
                                        else m[0]), text)
    return text, n + m


def _extra(match: re.Match[str]) -> str:
    return "[REDACTED]" if match[0] else ""


def _subn(pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str],
          text: str) -> tuple[str, int]:
    """Like ``pattern.subn``, counting only the matches that ``replace`` changed."""
    changed = 0

    def counted(match: re.Match[str]) -> str:
        nonlocal changed
        out = replace(match)
        changed += out != match[0]
        return out

    return pattern.sub(counted, text), changed


class Scrubber:
    """Redacts secrets and personal data; ``scrub`` returns the text and a count."""

    def __init__(
        self, extra_patterns: Iterable[str] = (), repo: tuple[str, str] | None = None,
        wraps: Wraps | None = None, rules: Rules | None = None,
    ):
        """``rules``: the compiled rules it scans with (None: those every scrubber of the
        process shares)."""
        self._wraps = wraps or Wraps()
        self._rules = rules or _SHARED
        if isinstance(extra_patterns, str):
            extra_patterns = (extra_patterns,)
        self._extras = [_compile_extra(p) for p in extra_patterns]
        # Only the owner/name pair is redacted, never either word alone: for
        # django/django that would erase "django" from every Django error and
        # leave lessons that say nothing.
        self._repo: re.Pattern[str] | None = None
        self._repo_key = ""
        if repo and all(repo):
            owner, name = repo
            self._repo_key = f"{owner}/{name}".lower()
            self._repo = re.compile(
                rf"(?<![\w.-]){re.escape(owner)}/{re.escape(name)}(?![\w-])", re.IGNORECASE
            )

    def scrub(self, text: str) -> tuple[str, int]:
        total = 0
        text = storable(text)
        if self._extras:
            # User patterns see the raw text, but never the inside of a placeholder.
            parts = _PLACEHOLDER.split(text)
            for i in range(0, len(parts), 2):
                for pattern in self._extras:
                    parts[i], n = _subn(pattern, _extra, parts[i])
                    total += n
            text = "".join(parts)
        text, n = _builtin_pass(text, self._wraps, self._rules)
        total += n
        # The substring test spares a regex pass over text that cannot match.
        if self._repo and self._repo_key in text.lower():
            text, n = self._repo.subn("[REPO]", text)
            total += n
        return text, total


def _compile_extra(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(
            f"invalid scrub pattern '{pattern}': {e}. Fix the regular expression "
            "(escape literal characters such as ( [ + * ? with a backslash) or remove it."
        ) from None


PATTERNS_FILE = "scrub-patterns"  # in the store directory: one extra regex a line


def read_patterns(home: Path) -> list[str]:
    """Extra scrub patterns from the store directory; a bad line is skipped with a warning."""
    path = home / PATTERNS_FILE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    patterns = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            re.compile(line)
        except re.error as e:
            config.warn(f"{path}:{number}: skipped invalid pattern ({e}); fix or remove the line")
            continue
        patterns.append(line)
    return patterns


def for_store(home: Path, extra: tuple[str, ...] = ()) -> Scrubber:
    """The scrubber for a store: built-in patterns, the caller's, the store's file, and
    the repository's owner/name read from ``.git/config``."""
    return Scrubber((*extra, *read_patterns(home)), repo=repo_from_git_config(Path.cwd()))


def storable(text: str) -> str:
    """``text`` with what no store or JSON encoder takes replaced by U+FFFD: lone
    surrogates (invalid UTF-8 in argv, ``"\\udcff"`` in a crash file) and NUL."""
    if _UNSTORABLE.search(text) is None:
        return text
    fixed = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return fixed.replace("\x00", "\ufffd")


_UNSTORABLE = lazy.compile("[\ud800-\udfff\x00]")


def scrub_text(text: str) -> str:
    """``text`` with the built-in rules applied: for a caller that keeps text outside the
    store (a hook's state file) and has no configured Scrubber at hand."""
    return _DEFAULT.scrub(text)[0]


_DEFAULT = Scrubber()
