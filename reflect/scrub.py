"""Remove secrets and personal data from text before anything is stored or sent.

Everything ``reflect`` keeps passes through :class:`Scrubber`. Each redaction
leaves a typed placeholder, so a lesson still says *what* was there:

    [REDACTED:private_key]  PEM private key blocks, truncated ones too
    [REDACTED:api_key]      vendor keys (OpenAI, Anthropic, GitHub, GitLab, AWS, Slack, Stripe,
                            Google, Hugging Face, npm, PyPI, Twilio, SendGrid and more), also
                            base64-encoded
    [REDACTED:token]        JWTs, ``Bearer`` tokens, Authorization headers, webhook URLs
    [REDACTED:secret]       the value of a password/secret/token/key assignment, a cookie
                            header, a password on a command line, a bare 40-character
                            AWS-style secret
    [REDACTED:credentials]  ``user:pass`` in a URL
    [REDACTED:card]         payment card numbers (Luhn-checked)
    [REDACTED:ssn]          US social security numbers
    [REDACTED:email]        e-mail addresses
    [REDACTED:ip]           IPv4 and IPv6 addresses (loopback and 0.0.0.0 are kept)
    [USER]                  the user name in a home directory path
    [REPO]                  the current repository's ``owner/name``
    [REDACTED]              a match of a user-supplied pattern

No rule matches a placeholder, so scrubbing twice changes nothing.
"""

from __future__ import annotations

import base64
import ipaddress
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable

from reflect import lazy

__all__ = ["Scrubber"]

_B64 = r"[A-Za-z0-9+/=]"
_TOKEN = r"[A-Za-z0-9._~+/=-]"
_HEX = r"[0-9A-Fa-f]"
_IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"
_HOME_USER = r"[^\s/\\:\"'\[\]]+"
# A key holding a secret ends with one of these (DB_PASSWORD, clientSecret,
# X-Api-Key, AWS_SECRET_ACCESS_KEY); `tokenizer` and `max_tokens` do not.
_KEY_ENDS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "api[_-]key",
             "access[_-]key", "secret[_-]key", "private[_-]key", "accountkey", "[_-]pwd")
# Upper-case environment names: STRIPE_KEY, DB_PASS (a lower-case `sort_key` is code).
_ENV_ENDS = ("[A-Z0-9]_KEY", "[A-Z0-9]_PASS", "[A-Z0-9]_AUTH")
_KEY_END = ("(?:" + "|".join(f"(?i:(?<={k}))" for k in _KEY_ENDS)
            + "|" + "|".join(f"(?<={k})" for k in _ENV_ENDS) + ")")
# Values that are code, not secrets: token=None, api_key=os.environ[...], ${DB_PASSWORD}.
_NOT_A_VALUE = (r"(?!(?:None|null|nil|true|false|True|False|undefined)(?![\w-])"
                r"|os\.(?:environ|getenv)\b|getenv\(|process\.env\b|ENV\[|\$\{|\$[A-Z_][A-Z0-9_]*\b)")
_KEY = r"[A-Za-z_][A-Za-z0-9_.-]*+"
_ASSIGN = r"\\?[\"']?[ \t]*[:=](?![:=])[ \t]*"  # =, :, "key": but not ==, ::

# The built-in rules are one alternation (of the rules a text could trigger: see
# _GATES), applied in one pass. Each rule ends with an empty group named for it
# (match.lastgroup says which rule matched) and may hold an empty group v_<rule> where
# the redacted part starts: what comes before it is kept. Speed (~0.3 ms for 4 KB, on
# the capture hot path): every rule starts with a literal or a character class (or a
# choice of them), so the engine drops a position on its first character; lookbehinds
# come after that character. The rules that start a word share one lookbehind, which
# rejects the inside of a word at once and keeps every scan linear.
_ANYWHERE = {
    # The END is looked for up to the next BEGIN, so many unclosed blocks stay linear.
    "private_key": r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:[^-]|-(?!----BEGIN))*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    # No END (the output was cut off): take the following lines that look like key body.
    rf"|(?:(?:\s|\\[nr])+(?:{_B64}+|(?:Proc-Type|DEK-Info):[^\r\n\\]*)"
    r"(?=[ \t]*(?:[\r\n\"]|\\[nr]|\Z)))*)",
    # The user may be empty (redis://:pw@host); the password runs to the last @.
    "credentials": r"://(?P<v_credentials>)[^\s/@:\[]*:[^\s/]+(?=@)",
    # Not only at a word start, so /var/home/alice is caught too; /root stays.
    "home": rf"/(?:home|Users)/(?P<v_home>){_HOME_USER}",
    # A Windows user name may hold spaces when a separator follows (C:\Users\Jo Ann\).
    "home_win": r":(?<=[A-Za-z]:)(?:\\\\?|/)Users(?:\\\\?|/)(?P<v_home_win>)"
    rf"(?:[^\r\n\\/:\"'\[\]]+(?=[\\/])|{_HOME_USER})",
    # Incoming webhooks: the URL is the credential.
    "webhook": r"\.(?:(?<=hooks\.)slack\.com/(?:services|workflows|triggers)/"
    r"|(?<=discord\.)com/api/webhooks/|(?<=discordapp\.)com/api/webhooks/)"
    r"(?P<v_webhook>)[A-Za-z0-9_/-]{10,}",
}
_WORD_START = {
    # --KEY v, --KEY=v, KEY=v, KEY: v, "KEY": "v" (a quoted value may hold spaces).
    "secret": rf"(?:--{_KEY}{_KEY_END}(?:[ \t]*=[ \t]*|[ \t]+(?!-))"
    rf"|{_KEY}(?={_ASSIGN}){_KEY_END}{_ASSIGN})"
    # A JSON string value runs over its escapes (a service account's "private_key").
    r"(?:(?P<eq>\\[\"'])|(?P<dq>\")|(?P<sq>'))?(?P<v_secret>)(?!\[REDACTED)" + _NOT_A_VALUE
    + r"(?(eq)[^\"'\\\n]+|(?(dq)(?:[^\"\\\n]|\\.)+|(?(sq)[^'\\\n]+"
    r"|(?:[Bb]earer[ \t]+)?[^\s\"'\\&,;]+)))",
    # The header's value, whatever its scheme: Basic, token, Digest...
    "authorization": r"(?i:authorization)\\?[\"']?[ \t]*[:=][ \t]*"
    r"(?:(?i:basic|bearer|token|digest|negotiate|ntlm)[ \t]+)?(?P<v_authorization>)"
    r"(?=[^\s\"'\\]*\d|[^\s\"'\\]{16})[^\r\n\"'\\]+",
    "cookie": r"(?i:(?:set-)?cookie)[ \t]*:[ \t]*(?P<v_cookie>)[^\r\n\"'\\]+",
    # Passwords given to a command: curl -u user:pw, sshpass -p, mysql -ppw, redis-cli -a.
    "cli_password": r"(?:curl\b[^\n|;&]*?[ \t](?:-u|--user)[ \t=]*[\"']?[^\s:\"']*:"
    r"|sshpass[ \t]+(?:-\w[ \t]+)*?-p[ \t]*[\"']?"
    r"|mysql(?:dump|admin|sh)?\b[^\n|;&]*?[ \t]-p(?=\S)"
    r"|redis-cli\b[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+[\"']?)"
    r"(?P<v_cli_password>)[^\s\"']+",
    # A bearer token holds a digit or is long: "Bearer authentication" is prose.
    "bearer": rf"[Bb](?i:earer)[ \t]+(?P<v_bearer>)"
    rf"(?:(?=[A-Za-z._~+/=-]*\d){_TOKEN}{{8,}}|{_TOKEN}{{20,}})",
    "jwt": r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    # `sk-` wants 20 characters with a digit: `sk-learn-style` is a word.
    "api_key": r"sk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{22,}|A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|xapp-[A-Za-z0-9-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gl(?:pat|dt|rt|ptt|ft|soat)-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{35}"
    r"|ya29\.[0-9A-Za-z_-]{20,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}"
    r"|pypi-AgE[A-Za-z0-9_-]{50,}|SK[0-9a-fA-F]{32}(?![0-9A-Za-z])"
    r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|key-[0-9a-f]{32}(?![0-9a-z])"
    r"|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|do[por]_v1_[a-f0-9]{64}|dapi[a-f0-9]{32}"
    r"|gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"
    r"|AGE-SECRET-KEY-1[0-9A-Z]{58}|hv[sbr]\.[A-Za-z0-9_-]{24,}"
    r"|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}|lin_api_[A-Za-z0-9]{40}"
    r"|sntry[su]_[A-Za-z0-9+/=_-]{40,}|xai-[A-Za-z0-9]{60,}|secret_[A-Za-z0-9]{43}(?!\w)"
    r"|ATATT3[A-Za-z0-9_=-]{50,}|\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])",
    # Base64 that decodes to a secret (checked by _encoded), or a bare 40-character
    # AWS-style secret (mixed case and digits, high entropy: not a hash, not a path).
    "encoded": r"[A-Za-z0-9+/]{24,}={0,2}(?![A-Za-z0-9+/=])",
    # Card numbers pass the Luhn check (_is_card): most other long numbers fail it.
    "card": r"[2-6]\d{3}(?P<c16>[ -]?)\d{4}(?:(?P=c16)\d{4}){2}(?![\d-])"
    r"|3[47]\d{2}(?P<c15>[ -]?)\d{6}(?P=c15)\d{5}(?![\d-])",
    "ssn": r"(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])",
    # `git@host:owner/repo` is an SSH remote, not a person.
    "email": r"[A-Za-z0-9._%+-][A-Za-z0-9._%+-]*+(?<!\bgit)@"
    r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
    # IPv4 starts a word and follows no version specifier, so `v1.2.3.4`,
    # `==1.2.3.4`, `python3.11.7.1`, `1.2.3.4.tar.gz` are versions, but a bare
    # dotted quad such as 3.11.7.1 is taken for an address unless a program's name
    # comes before it (`python 3.11.7.1`, _VERSIONED): otherwise the two cannot be
    # told apart and a leaked address costs more than a blurred version.
    # IPv6 here is a candidate: _is_ip turns down `a::b`, times and slices.
    "ip": rf"\d(?<![=<>~!]=\d)\d{{0,2}}(?:\.\d{{1,3}}){{3}}(?!\.?\w)"
    rf"|(?:{_HEX}(?<!:.){_HEX}{{0,3}}:|:(?<!::))"
    rf"(?:{_HEX}{{0,4}}:){{1,6}}(?:{_IPV4}|{_HEX}{{0,4}})(?![\w:])",
}
_LABEL = {
    "private_key": "[REDACTED:private_key]",
    "credentials": "[REDACTED:credentials]",
    "home": "[USER]",
    "home_win": "[USER]",
    "secret": "[REDACTED:secret]",
    "bearer": "[REDACTED:token]",
    "jwt": "[REDACTED:token]",
    "api_key": "[REDACTED:api_key]",
    "email": "[REDACTED:email]",
    "ip": "[REDACTED:ip]",
    "webhook": "[REDACTED:token]",
    "authorization": "[REDACTED:token]",
    "cookie": "[REDACTED:secret]",
    "cli_password": "[REDACTED:secret]",
    "encoded": "[REDACTED:api_key]",
    "card": "[REDACTED:card]",
    "ssn": "[REDACTED:ssn]",
}




def _holds(*words: str) -> Callable[[str], bool]:
    return lambda text: any(word in text for word in words)


def _finds(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda text: pattern.search(text) is not None


# A rule's gate: what a text holds wherever the rule matches in it (a word the rule
# spells out, with the rule's own case rules). A text whose gate is shut is scanned
# without that rule, which cannot change what the rules find in it; so a process
# compiles only the rules its texts could trigger, not the whole alternation (~10 ms,
# on every capture). A rule changed here changes its gate too; the rules without one
# (encoded, card, ssn, email, ip) are always compiled.
_GATES: dict[str, Callable[[str], bool]] = {
    "private_key": _holds("-----BEGIN"),
    "credentials": _holds("://"),
    "home": _holds("/home/", "/Users/"),
    "home_win": _holds("Users"),
    "webhook": _holds("slack.com/", "com/api/webhooks/"),
    "secret": _finds(lazy.compile("(?i:" + "|".join(_KEY_ENDS) + ")|" + "|".join(_ENV_ENDS))),
    "authorization": _finds(lazy.compile(r"(?i:authorization)")),
    "cookie": _finds(lazy.compile(r"(?i:cookie)")),
    "cli_password": _holds("curl", "sshpass", "mysql", "redis-cli"),
    "bearer": _finds(lazy.compile(r"[Bb](?i:earer)")),
    "jwt": _holds("eyJ"),
    # one word of each vendor's alternative, in their order
    "api_key": _holds("sk-", "gh", "github_pat_", "AKIA", "ASIA", "xox", "xapp-", "k_live_",
                      "k_test_", "gl", "AIza", "ya29.", "hf_", "npm_", "pypi-AgE", "SK", "SG.",
                      "key-", "shp", "_v1_", "dapi", "gsk_", "r8_", "PMAK-", "AGE-SECRET-KEY-1",
                      "hv", "dp.", "lin_api_", "sntry", "xai-", "secret_", "ATATT3", ":AA"),
}


def _alternatives(rules: dict[str, str], names: frozenset[str]) -> str:
    return "|".join(f"(?:{rx})(?P<{name}>)" for name, rx in rules.items() if name in names)


def _alternation(names: frozenset[str]) -> str:
    """The built-in rules of ``names`` as one pattern, in the rules' order."""
    anywhere = _alternatives(_ANYWHERE, names)
    word_start = _alternatives(_WORD_START, names)
    return "|".join([*([anywhere] if anywhere else []),
                     *([f"(?<![\\w.%+-])(?:{word_start})"] if word_start else [])])


ALL_RULES = frozenset({**_ANYWHERE, **_WORD_START})
# The rules compiled so far and their pattern, replaced as one value: threads that
# race compile twice, and each scans with a pattern that holds what its text needs.
_compiled: tuple[frozenset[str], re.Pattern[str] | None] = (ALL_RULES - set(_GATES), None)


def _rules(text: str) -> re.Pattern[str]:
    """The built-in rules as one pattern that holds every rule that could match in
    ``text``: the rules compiled so far, and those whose gates ``text`` opens."""
    global _compiled
    names, pattern = _compiled
    opened = {name for name, gate in _GATES.items() if name not in names and gate(text)}
    if opened or pattern is None:
        names = names | opened
        pattern = re.compile(_alternation(names))
        _compiled = (names, pattern)
    return pattern

_PLACEHOLDER = lazy.compile(r"(\[(?:REDACTED(?::[a-z_]+)?|USER|REPO)\])")


def _is_ip(text: str) -> bool:
    if "::" in text:
        # Compressed IPv6 also looks like code (`a::b`, `x[1::2]`): ask for a digit
        # and either three groups or a long one (`2001:db8::7`, `fe80::1`).
        groups = [g for g in text.split(":") if g]
        if not any(c.isdigit() for c in text):
            return False
        if len(groups) < 3 and max(map(len, groups), default=0) < 3:
            return False
    elif text.count(":") not in (0, 6, 7):  # times (12:34:56), MAC addresses
        return False
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    # Loopback and 0.0.0.0 identify nobody, and "refused on 127.0.0.1" is a lesson.
    return not (address.is_loopback or address.is_unspecified)


# Bits per character of a random 40-character base64 string: about 4.9; words and paths
# stay well under 4.5 (the limit detect-secrets uses for base64).
AWS_SECRET_ENTROPY = 4.5
_VERSIONED = lazy.compile(
    r"(?i:python|pypy|version|ver|release|node|ruby|perl|php|java|go|gcc|clang|cmake"
    r"|pip|npm|yarn|rustc|cargo|dotnet|kernel)[ \t]+$")


def _is_card(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    odd = sum(digits[-1::-2])
    even = sum(sum(divmod(2 * d, 10)) for d in digits[-2::-2])
    return (odd + even) % 10 == 0


def _entropy(text: str) -> float:
    return -sum(n / len(text) * math.log2(n / len(text)) for n in Counter(text).values())


def _encoded(text: str) -> bool:
    """Base64 of text holding a secret, or a bare AWS-style secret."""
    try:
        decoded = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        plain = decoded.decode("ascii")
    except (ValueError, UnicodeDecodeError):
        plain = ""
    if plain.isprintable() and _subn(_rules(plain), _builtin, plain)[1]:
        return True
    kinds = (str.isupper, str.islower, str.isdigit)
    return (len(text) == 40 and all(any(map(kind, text)) for kind in kinds)
            and _entropy(text) >= AWS_SECRET_ENTROPY)


def _builtin(match: re.Match[str]) -> str:
    kind = match.lastgroup or ""  # every alternative of the rules is a named group
    if kind == "ip" and (not _is_ip(match[0]) or _VERSIONED.search(
            match.string, max(0, match.start() - 12), match.start())):
        return match[0]
    if (kind == "card" and not _is_card(match[0])) or (
        kind == "encoded" and not _encoded(match[0])
    ):
        return match[0]
    keep = f"v_{kind}"
    start = match.start(keep) if keep in match.re.groupindex else match.start()
    kept = match.string[match.start() : start]
    if kind == "cli_password":  # the command line before the flag may hold other secrets
        kept = _rules(kept).sub(_builtin, kept)
    return kept + _LABEL[kind]


# A terminal wraps a long line wherever its width ends, maybe inside a token: a full
# line that runs straight into the next, no space either side, may hold half a secret.
_JOINT = lazy.compile(r"(?<=[\w+/=.:@-])\r?\n(?=[\w+/=.:@-])")
MIN_WRAP = 40  # columns: narrower lines ended for a reason of their own


def _unwrap(text: str) -> tuple[str, int]:
    """Redact the secrets that a line wrap cut in two: each run of wrapped lines is
    scanned joined, and a secret found across a joint is replaced where it lies."""
    joints = [m for m in _JOINT.finditer(text)
              if m.start() - text.rfind("\n", 0, m.start()) > MIN_WRAP]
    if not joints:
        return text, 0
    out, done, count = [], 0, 0
    i = 0
    while i < len(joints):
        chain = [joints[i]]  # joints whose lines follow one another
        while i + 1 < len(joints) and "\n" not in text[chain[-1].end():joints[i + 1].start()]:
            i += 1
            chain.append(joints[i])
        i += 1
        start = text.rfind("\n", 0, chain[0].start()) + 1
        end = text.find("\n", chain[-1].end())
        end = len(text) if end == -1 else end
        pieces = [start, *(p for m in chain for p in m.span()), end]
        lines = [text[a:b] for a, b in zip(pieces[::2], pieces[1::2], strict=True)]
        joined = "".join(lines)
        cuts = list(itertools.accumulate(len(line) for line in lines[:-1]))
        for match in _rules(joined).finditer(joined):
            kind = match.lastgroup or ""
            keep = f"v_{kind}"
            cut_from = match.start(keep) if keep in match.re.groupindex else match.start()
            crossed = [k for k, cut in enumerate(cuts) if cut_from < cut < match.end()]
            # A private key block spans lines anyway: the main pass takes it whole.
            if not crossed or kind == "private_key" or _builtin(match) == match[0]:
                continue
            # joined offset -> text offset: add the joints (newlines) before it
            begin = start + cut_from + sum(len(chain[k][0]) for k, cut in enumerate(cuts)
                                          if cut <= cut_from)
            stop = start + match.end() + sum(len(chain[k][0]) for k, cut in enumerate(cuts)
                                             if cut < match.end())
            if begin < done:
                continue
            out += [text[done:begin], _LABEL[kind], "\n" * len(crossed)]
            done, count = stop, count + 1
    return "".join(out) + text[done:], count


def _extra(match: re.Match) -> str:
    return "[REDACTED]" if match[0] else ""


def _subn(pattern: re.Pattern, replace: Callable[[re.Match], str], text: str) -> tuple[str, int]:
    """Like ``pattern.subn``, counting only the matches that ``replace`` changed."""
    changed = 0

    def counted(match: re.Match) -> str:
        nonlocal changed
        out = replace(match)
        changed += out != match[0]
        return out

    return pattern.sub(counted, text), changed


class Scrubber:
    """Redacts secrets and personal data; ``scrub`` returns the text and a count."""

    def __init__(
        self, extra_patterns: Iterable[str] = (), repo: tuple[str, str] | None = None
    ):
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
        if self._extras:
            # User patterns see the raw text, but never the inside of a placeholder.
            parts = _PLACEHOLDER.split(text)
            for i in range(0, len(parts), 2):
                for pattern in self._extras:
                    parts[i], n = _subn(pattern, _extra, parts[i])
                    total += n
            text = "".join(parts)
        text, n = _unwrap(text)
        total += n
        text, n = _subn(_rules(text), _builtin, text)
        total += n
        # The substring test spares a regex pass over text that cannot match.
        if self._repo and self._repo_key in text.lower():
            text, n = self._repo.subn("[REPO]", text)
            total += n
        return text, total


def _compile_extra(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(
            f"invalid scrub pattern '{pattern}': {e}. Fix the regular expression "
            "(escape literal characters such as ( [ + * ? with a backslash) or remove it."
        ) from None
