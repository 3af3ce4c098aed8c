"""Validate what a model returns for a reflection before it becomes a lesson.

A model's answer is untrusted text: it may wrap the JSON in prose or code fences, drift
from the schema, echo a secret from the prompt, or (steered by text planted in an error
message) tell the agent to leave its task. ``review`` parses and normalizes the answer,
scrubs it again and checks it against ``HOSTILE``; a lesson that matches is returned with a
``quarantine`` reason, so it is stored for a person to see but never recalled.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reflect.base import lazy
from reflect.base.records import Failure
from reflect.base.text import clip, one_line
from reflect.capture.defuse import look_alikes_folded
from reflect.capture.details import foreign
from reflect.capture.heuristics import CATEGORIES, GUIDANCE_MAX, TRIGGER_MAX

__all__ = ["FIX_HOSTILE", "HOSTILE", "KINDS", "MalformedLesson", "Reviewed", "fix_reason", "review",
           "reviewed_texts"]

KINDS = ("fix", "avoid", "check")  # do this instead / do not do this again / verify first
DEFAULT_KIND = "fix"
DEFAULT_CONFIDENCE = 0.5
MAX_ANSWER = 20_000  # characters of an answer searched for the JSON object
MAX_CANDIDATES = 50  # "{" positions tried: bounds the work on an answer full of braces


@dataclass(frozen=True)
class Reviewed:
    trigger: str
    guidance: str
    kind: str  # one of KINDS
    category: str  # one of heuristics.CATEGORIES
    confidence: float  # 0..1
    redactions: int  # secrets the second scrub removed
    quarantine: str  # "" when fine; else why the lesson is stored but never recalled


class MalformedLesson(ValueError):
    """The answer holds no usable lesson; asking again may help."""


def review(text: str, scrub: Callable[[str], tuple[str, int]],
           failures: list[Failure] | None = None) -> Reviewed:
    """``failures``: those the lesson stands for; a lesson naming a file, path, module or
    table none of them has is quarantined (it is about one run, not a generalization)."""
    data = _first_object(text or "")
    texts, quarantine, redactions = reviewed_texts(
        {"trigger": (_text(data, "trigger"), TRIGGER_MAX),
         "guidance": (_text(data, "guidance"), GUIDANCE_MAX)}, scrub)
    trigger, guidance = texts["trigger"], texts["guidance"]
    # Judged scrubbed: the reason names what it found, and must not carry a secret.
    if (not quarantine and failures is not None
            and (named := sorted(foreign(f"{trigger}\n{guidance}", failures)))):
        quarantine = (f"names {', '.join(named[:3])}, which none of the failures it "
                      "stands for has: a lesson must hold for all of them")
    category = str(data.get("category", "")).strip().lower()
    kind = str(data.get("kind", "")).strip().lower()
    return Reviewed(
        trigger=trigger,
        guidance=guidance,
        kind=kind if kind in KINDS else DEFAULT_KIND,
        category=category if category in CATEGORIES else "general",
        confidence=_confidence(data.get("confidence")),
        redactions=redactions,
        quarantine=quarantine,
    )


def reviewed_texts(texts: dict[str, tuple[str, int]], scrub: Callable[[str], tuple[str, int]]
                   ) -> tuple[dict[str, str], str, int]:
    """The one review every text of a lesson passes, whatever brought it (a model, an
    import file with its ``resolution``, a person's ``teach``): all of them judged
    together and in full (``hostile_reason``), before scrubbing and trimming hide part
    of them; then each made one line, scrubbed before it is cut (a cut through a secret
    hides it from its rule) and cut at a word. ``texts``: name -> (text, at most how
    many characters). Returns the texts, the quarantine reason ("" when none) and how
    many secrets the scrub removed."""
    reason = hostile_reason("\n".join(text for text, _ in texts.values()))
    out, redactions = {}, 0
    for name, (text, limit) in texts.items():
        scrubbed, n = scrub(one_line(text))
        out[name], redactions = clip(scrubbed, limit, at_word=True), redactions + n
    return out, reason, redactions


# -- parsing ------------------------------------------------------------------


def _first_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` that looks like a lesson, wherever it sits."""
    text = text[:MAX_ANSWER]
    decoder = json.JSONDecoder()
    start, found, tried = text.find("{"), None, 0
    while start != -1 and tried < MAX_CANDIDATES:
        tried += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            if "trigger" in value or "guidance" in value:
                return value
            found = found or value
        start = text.find("{", start + 1)
    if found is not None:
        return found  # an object, but not a lesson: _text names the missing field
    if "{" in text:
        raise MalformedLesson("the answer's JSON object is cut off or invalid")
    raise MalformedLesson("the answer holds no JSON object")


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise MalformedLesson(f"the lesson has no {key} (a non-empty string)")
    return one_line(value)


def _confidence(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return DEFAULT_CONFIDENCE
    return min(1.0, max(0.0, float(value)))


# -- hostile lessons ----------------------------------------------------------

_FETCH = r"(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch)"
_SHELL = r"(?:sudo\s+)?(?:ba|z|k|da|fi)?sh|python[0-9.]*|perl|ruby|node|iex|invoke-expression"
_REMOTE = r"(?:https?|ftp)://(?!(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(?:[:/]|\b))"
_SECRET = (
    r"secrets?|credentials?|passwords?|passphrases?|private[ _-]?keys?|ssh[ _-]?keys?"
    r"|(?:api|secret|access|aws|openai|anthropic)[ _-]?keys?"
    r"|(?:api|auth|access|bearer|oauth|github|gh|npm|pypi|session|refresh|secret)[ _-]?tokens?"
    r"|\$\{?\w*(?:key|token|secret|password|passwd)\b"
)
_CRED_FILE = (
    r"(?:~|\$HOME|/root|/home/\S+)/\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|/etc/(?:g?shadow|sudoers)"
    r"|\.aws/credentials|\.git-credentials|\.netrc\b|\.pgpass\b|\.docker/config\.json"
)
_TESTS = (
    r"(?:the\s+|this\s+|that\s+|these\s+|those\s+|all\s+|any\s+)?"
    r"(?:failing\s+|broken\s+|flaky\s+|offending\s+|slow\s+|red\s+)?"
    r"(?:unit\s+|integration\s+|e2e\s+)?(?:tests?|test\s+cases?|test\s+files?|assertions?|specs?)\b"
)
_DATA = (
    r"(?:files?|env(?:ironment)?(?:\s+variables)?|\.env|output|logs?|source(?:\s+code)?"
    r"|repo(?:sitory)?|contents?|data|history|database|" + _SECRET + r")"
)
_DEST = (
    _REMOTE + r"|webhooks?|pastebin|ngrok|requestbin|discord|telegram|gist|s3://"
    r"|e-?mail\b|[\w.+-]+@[\w-]+\.[\w.]+|remote\s+(?:server|host|endpoint)|external\s+\w+"
)

# A program run as a command's word (``nc``, ``/usr/bin/nc``), never a folder of a path
# (``/tmp/nc/venv/bin/python``).
_NETCAT = r"(?:^|(?<=[\s;&|(`'\"]))(?:\S*/)?(?:nc|ncat|netcat)(?=\s)"

# A verb that a negation comes before is advice against it ("do not skip the test").
_NOT = r"(?<!\bnot\s)(?<!\bnever\s)(?<!\bdon't\s)(?<!\bno\s)(?<!\bwithout\s)"

# (reason, pattern), checked in order; the first match names the reason.
HOSTILE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, lazy.compile(pattern, re.IGNORECASE))
    for reason, pattern in (
        (
            "overrides the agent's instructions",
            r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}?"
            r"\b(?:previous|prior|earlier|above|preceding|system|original|all|your|user'?s?)\s+"
            r"(?:\w+\s+)?(?:instructions?|prompts?|rules|guidelines|directives|constraints)\b"
            r"|\bsystem\s+prompt\b|\b(?:new|updated)\s+(?:system\s+)?instructions?\s*:"
            r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:of\s+)?(?:the\s+)?"
            r"(?:above|previous|prior|preceding|earlier)\b"
            r"|(?:^|[\s\"'`(\[])(?:system|assistant)\s*:|<\|im_start\|>|\[/?INST\]",
        ),
        (
            "fetches and runs a remote script",
            rf"\b{_FETCH}\b[^|\n]*\|\s*(?:{_SHELL})\b"
            rf"|\b(?:iex|invoke-expression)\s*\(?\s*(?:\(\s*)?(?:{_FETCH}|new-object\s+net\.webclient)\b"
            # $(curl …), <(curl …); backticks only after eval / -c, as `…` is also markdown
            rf"|\$\(\s*{_FETCH}\b|<\(\s*{_FETCH}\b|(?:\beval\s+|\s-c\s+)[\"']?`\s*{_FETCH}\b"
            rf"|\b(?:download|fetch)\b[^.\n]{{0,80}}{_REMOTE}\S*[^.\n]{{0,40}}"
            r"\b(?:and|then)\s+(?:run|execute|source)\b"
            # fetched to a file, then run: curl -o /tmp/p URL && bash /tmp/p
            rf"|\b{_FETCH}\b[^\n`]*{_REMOTE}[^\n`]*?(?:&&|;|\|\|)\s*(?:sudo\s+)?"
            rf"(?:{_SHELL}|source|\.|chmod)\s"
            # the same fetch to a named file, however the address is written
            # (bounded: a fetch and its run are one command line, not a page apart)
            rf"|\b{_FETCH}\s(?:[^\n`\s]{{0,200}}\s){{0,8}}?(?:-[a-zA-Z]{{0,8}}[oO]\s*|--output(?:-document)?[=\s]+)"
            r"['\"]?([^\s'\"]{1,200})[^\n`]{0,200}?(?:&&|;|\|\|)\s*(?:sudo\s+)?"
            rf"(?:(?:{_SHELL}|source|\.)\s+|chmod\s[^\n`]{{0,40}}?)['\"]?(?:\./)?\1(?=$|[\s'\";&|`])"
            rf"|\bbase64\s+(?:-d|--decode|-D)\b[^\n|]*\|\s*(?:{_SHELL})\b"
            r"|\bexec\s*\(\s*(?:\w+\.)*(?:urlopen|urllib|requests\.get|__import__)",
        ),
        (
            "sends data off the machine",
            rf"\b(?:post|upload|send|exfiltrate|transmit|forward|e-?mail|mail|leak|sync|pipe)\b"
            rf"[^.\n]{{0,60}}?(?<!\w){_DATA}[^.\n]{{0,60}}?\b(?:to|into|at)\s+(?:the\s+|an?\s+)?"
            rf"(?:{_DEST})"
            rf"|\b(?:curl|wget)\b[^\n|]*(?:\s-d\s*@|--data(?:-binary|-raw|-urlencode)?[\s=]*@"
            rf"|\s-F\s*\S*=@|--form\s*\S*=@|--upload-file|\s-T\s|--post-file)[^\n|]*{_REMOTE}"
            rf"|(?:\b(?:curl|wget)\b|{_NETCAT})[^\n]*\$\(\s*(?:env|printenv|cat|base64|set)\b"
            # a secret's variable as the body, wherever it goes
            r"|\b(?:curl|wget)\b[^\n|]{0,200}?(?:--post-data|--body-data"
            r"|--data(?:-binary|-raw|-urlencode)?|\s-d|\s-F|--form)[=\s]*['\"]?[^\s'\"$]{0,80}"
            r"\$\{?\w{0,40}?(?:key|token|secret|passw\w*|credential\w*)\b"
            r"|\b(?:requests|httpx|session)\.(?:post|put|patch)\([^\n]*\bos\.environ"
            r"|\b(?:dig|nslookup|host)\s[^\n]*\$\("
            r"|\b(?:env|printenv|cat\s+\S+)\s*\|\s*(?:base64\s*\|\s*)?(?:curl|wget|nc|ncat|netcat)\b",
        ),
        (
            "disables tests or safety checks",
            rf"{_NOT}\b(?:skip|skipping|delete|remove|comment(?:ing)?\s+out|disable|xfail|drop|ignore)\s+{_TESTS}"
            r"|@?pytest\.mark\.(?:skip|xfail)|\bpytest\.(?:skip|xfail)\s*\(|\bunittest\.skip"
            r"|\b(?:it|describe|test)\.skip\b|\bxit\s*\(|--deselect\b|--ignore(?:-glob)?[= ]\S*test"
            r"|\b(?:rm|del|delete|remove)\s+(?:-\w+\s+)*\S*\btest\w*\.(?:py|js|ts|go|rb)\b"
            r"|\bassert\s+True\b|\balways\s+pass|--no-verify\b|\bHUSKY=0\b"
            r"|\bsed\s+(?:-\w+\s+)*-i\S*\s[^\n]*\bassert|\btruncate\s+-s\s*0\s+\S*test"
            rf"|{_NOT}\b(?:disable|turn\s+off|skip|bypass|remove|delete|silence|suppress)\s+(?:the\s+|all\s+)?"
            r"(?:\w+\s+)?(?:linters?|linting|type[- ]?check(?:s|ing|er)?|mypy|ruff|flake8|eslint"
            r"|pylint|pre-commit(?:\s+hooks?)?|git\s+hooks?|hooks|ci|ci\s+(?:pipeline|checks?)"
            r"|workflows?|safety\s+checks?|security\s+checks?|(?:ssl|tls|certificate)\s+verification"
            r"|coverage\s+threshold)\b|\bNODE_TLS_REJECT_UNAUTHORIZED=0|\bPYTHONHTTPSVERIFY=0"
            # a failing step made to pass: `|| true`, `exit 0`, verify=False, tests moved away
            r"|\|\|\s*true\b|\bexit\s+0\b|\bverify\s*=\s*False\b|--insecure\b|--no-check-certificate\b"
            r"|\bpytest\b[^\n]*\s-k\s*['\"]?not\b|\bcollect_ignore\b"
            r"|\bmv\s+(?:-\w+\s+)*(?:\./)?tests?/?\s",
        ),
        (
            "installs from an unofficial package index",
            r"(?:--index-url|--extra-index-url|\bPIP_(?:EXTRA_)?INDEX_URL\s*=|\bpip\S*\s+install\s[^\n]*\s-i)"
            r"[\s=]*['\"]?(?!https://(?:pypi\.org|files\.pythonhosted\.org|download\.pytorch\.org)/)\S*://"
            r"|\b(?:npm|yarn|pnpm)\s+config\s+set\s+(?:\S*:)?registry\b|--registry[\s=]+(?!https://registry\.npmjs\.org)\S*://"
            # a package from a repository or a URL, not the index; the index itself changed
            r"|\bpip\S*\s+install\s[^\n]*(?:git\+|https?://)|\bpip\S*\s+config\s+set\b[^\n]*index"
            r"|\b(?:npx|npm\s+(?:i|install)|yarn\s+add)\s[^\n]*(?:github:|git\+|https?://)",
        ),
        (
            "changes git's hooks or commands",
            r"\bgit\s+config\b[^\n]*\bcore\.(?:hooksPath|sshCommand|fsmonitor|pager|editor|gitProxy)\b"
            r"|\balias\s+(?:git|python\d?|pip\d?|pytest|npm|node|sudo|ls|cd|make)="
            r"|\bgit\s+remote\s+(?:add|set-url)\b",
        ),
        (
            "opens a shell to another machine or as root",
            rf"/dev/(?:tcp|udp)/|{_NETCAT}[^\n]*\s-[ec]\s|"
            r"\bsudo\s+(?:-\w+\s+)*(?:su\b|-i\b|-s\b|(?:ba|z|da|fi)?sh\b(?!\s+-c\b|\s*\S*\.sh))",
        ),
        (
            "destructive command outside the task",
            r"\brm\s+(?:-\w+\s+)*-\w*r\w*\s+(?:-\S+\s+)*(?:\./)?\.git(?=$|[\s`'\";/])"
            r"|\bgit\s+push\b[^\n]*\s(?:--force\b|-f\b|--all\b|--mirror\b|(?:\S+:)?(?:main|master)\b)"
            r"|\brm\s+(?:-\w+\s+)*-\w*r\w*\s+(?:\./)?\*|\bgit\s+clean\s+-\w*f"
            r"|\bfind\s+(?:/|~/?|\$HOME/?)(?=\s)[^\n]*(?:-delete\b|-exec\s+rm\b)"
            r"|\brm\s+(?:-\w+\s+)*-\w*r\w*\s+(?:-\S+\s+)*"
            r"(?:/\*?|~/?|\$HOME/?|/(?:etc|usr|home|var|bin|boot|lib|opt|root)\S*)(?=$|[\s`'\";])"
            r"|--no-preserve-root|\bchmod\s+(?:-R\s+)?0?777\s+/(?=$|[\s`'\";*])|\bchmod\s+-R\s+0?777\b"
            r"|\bmkfs(?:\.\w+)?\s|\bdd\s+[^\n]*of=/dev/|:\(\)\s*\{\s*:\|:&\s*\}",
        ),
        (
            "touches credentials",
            rf"{_CRED_FILE}|\bssh-copy-id\b|\bauthorized_keys\b|\bdeploy-keys?\s+add\b"
            r"|\b(?:npm|yarn)\s+config\s+set\s+\S*_auth"
            rf"|\b(?:print|echo|cat|show|dump|display|log|reveal|output|expose|copy|cp|paste|list)\b"
            rf"[^.\n]{{0,40}}?(?<!\w)(?:{_SECRET})"
            r"|\b(?:print|dump|show|list|echo|display|log)\s+(?:all\s+)?(?:the\s+)?"
            r"(?:env(?:ironment)?\s+variables|environment)\b|\b(?:cat|print|read|open|source)\s+\S*\.env\b(?!\.)",
        ),
    )
)

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))


# What a fix must not do beyond what no lesson may say: make what it installs or runs
# trusted without a check, open files to every user, send a key in a request's header.
FIX_HOSTILE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (reason, lazy.compile(pattern, re.IGNORECASE)) for reason, pattern in (
        ("installs from an unofficial package index",
         r"--trusted-host\b|\bpip\S*\s+install\s[^\n]*(?:\s-f\s*|--find-links[=\s]+)\S*://"
         r"|\bconda\s+install\b[^\n]*\s(?:-c|--channel)\s+(?!conda-forge\b|defaults\b)\S+"),
        ("opens permissions to every user",
         r"\bchmod\s+(?:-\w+\s+)*(?:0?[0-7]?[0-7][0-7][2367]\b|[ugo]*a[ugo]*\+\w*w|o\+\w*w|\+w\b)"
         r"|\bumask\s+0*0\b"),
        ("sends a key off the machine",
         r"\b(?:curl|wget|http|httpie)\b[^\n]*\$\{?\w*(?:key|token|secret|passw\w*)\b"),
        ("turns off certificate checks",
         r"\bcurl\b[^\n]*\s-k\b|\bGIT_SSL_NO_VERIFY=|\bsslVerify\s+false\b"),
    ))


def fix_reason(text: str) -> str:
    """Why a fix (a run's steps that got past a failure) is kept out of what worked, or ""
    when it may be shown: what no lesson may say, and what no fix may do."""
    reason = hostile_reason(text)
    if reason:
        return reason
    folded = look_alikes_folded(unicodedata.normalize("NFKC", text).translate(_INVISIBLE))
    return next((reason for reason, pattern in FIX_HOSTILE if pattern.search(folded)), "")


def hostile_reason(text: str) -> str:
    """Why ``text`` steers an agent outside its task, or "" when it does not."""
    # NFKC folds fullwidth letters; invisible ones split words; Cyrillic and Greek
    # letters that look Latin (curl spelled with a Cyrillic es) are read as the Latin ones.
    text = look_alikes_folded(unicodedata.normalize("NFKC", text).translate(_INVISIBLE))
    for reason, pattern in HOSTILE:
        if pattern.search(text):
            return reason
    return ""
