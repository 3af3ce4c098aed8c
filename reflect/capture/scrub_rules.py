"""The scrubber's built-in rules: one pattern per kind of secret, its placeholder, its gate,
and the checks a match must pass (a Luhn sum, an address of somebody, a value that is
not code or prose). reflect/capture/scrub.py applies them; the kinds come from the vendors'
documented formats (the public rule sets of gitleaks and detect-secrets list them).

The rules are one alternation (of the rules a text could trigger: see GATES), applied in
one pass. Each rule ends with an empty group named for it (match.lastgroup says which
rule matched) and may hold an empty group v_<rule> where the redacted part starts: what
comes before it is kept. Speed (the capture hot path): every rule starts with a literal
or a character class (or a choice of them), so the engine drops a position on its first
character; lookbehinds come after that character. The rules that start a word share one
lookbehind, which rejects the inside of a word at once and keeps every scan linear.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections import Counter
from collections.abc import Callable

from reflect.base import lazy

_B64 = r"[A-Za-z0-9+/=]"
_TOKEN = r"[A-Za-z0-9._~+/=-]"
_HEX = r"[0-9A-Fa-f]"
_IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"
_HOME_USER = r"[^\s/\\:\"'\[\]]+"
# Words a key holding a key ends with: signing_key, hmacKey, SharedAccessKey.
_KEY_WORDS = ("secret", "access", "private", "encryption", "signing", "master", "hmac",
              "session", "license", "app", "auth", "account", "storage", "subscription",
              "client", "shared", "crypt", "jwt", "cookie", "webhook", "deploy", "admin",
              "service", "api")
# A key holding a secret ends with one of these (DB_PASSWORD, clientSecret, X-Api-Key,
# AWS_SECRET_ACCESS_KEY, client-key-data, PHPSESSID); `tokenizer`, `max_tokens`,
# `sort_key` and `primary_key` do not. Each is a lookbehind: one width per alternative.
_KEY_ENDS = ("password", "passwd", "passphrase", "secret", "token", "[_-]pwd", "key[_-]data",
             "private[_-]key[_-]id", "sessionid", "session[_-]id", "sess[_-]id", "sessid",
             "_session", *(f"{w}key" for w in _KEY_WORDS), *(f"{w}[_-]key" for w in _KEY_WORDS))
# Upper-case environment names: STRIPE_KEY, DB_PASS; header names: X-Auth-Key (a
# lower-case `sort_key` or `--sort-key` is code).
_ENV_ENDS = ("[A-Z0-9]_KEY", "[A-Z0-9]_PASS", "[A-Z0-9]_AUTH", "[a-z]-Key", "[A-Z]-KEY",
             "-Signature")
# An environment name may say where the secret is for after its last word:
# DB_PASSWORD_PROD, SECRET_KEY_BASE, API_TOKEN_V2 (not TOKEN_EXPIRY or PASSWORD_MIN_LENGTH).
_ENV_WORDS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "KEY", "PASS", "PWD", "AUTH")
_ENV_SUFFIXES = ("PROD", "PRODUCTION", "DEV", "STAGING", "STAGE", "TEST", "LIVE", "LOCAL", "QA",
                 "BASE", "OLD", "NEW", "PRIMARY", "BACKUP", "B64", "BASE64", "ENCODED", "[0-9]",
                 "V[0-9]")


def _same_width(names: list[str]) -> list[str]:
    """The names as lookbehinds, one per width (a lookbehind's branches share one)."""
    def width(name: str) -> int:
        return len(re.sub(r"\[[^]]*\]", "x", name))
    widths: dict[int, list[str]] = {}
    for name in names:
        widths.setdefault(width(name), []).append(name)
    return [f"(?<={'|'.join(group)})" for group in widths.values()]


_KEY_END = ("(?:" + "|".join(f"(?i:(?<={k}))" for k in _KEY_ENDS)
            + "|" + "|".join(f"(?<={k})" for k in _ENV_ENDS)
            + "|" + "|".join(_same_width([f"{w}_{s}" for w in _ENV_WORDS for s in _ENV_SUFFIXES]))
            + ")")
# Values that are code, not secrets: token=None, api_key=os.environ[...], ${DB_PASSWORD},
# {{ vault_password }}, <YOUR_API_KEY>, password: str.
_NOT_A_VALUE = (r"(?!(?:None|null|nil|true|false|True|False|undefined|str|int|bytes|bool"
                r"|Optional|SecretStr|Any)(?![\w-])"
                r"|os\.(?:environ|getenv)\b|getenv\(|process\.env\b|ENV\[|\$\{|\{\{|<[\w -]+>"
                r"|\$[A-Z_][A-Z0-9_]*\b)")
_KEY = r"[A-Za-z_][A-Za-z0-9_.-]*+"
# =, :, "key": and Ruby's or PHP's =>, Make's or Go's := but not ==, ::; a key's quotes
# may be a shell's splice of one into a single-quoted word ('"'"')
_ASSIGN = r"\\?[\"']{0,5}[ \t]*(?:=>|:=|[:=](?![:=]))[ \t]*"

ANYWHERE = {
    # The END is looked for up to the next BEGIN, so many unclosed blocks stay linear.
    "private_key": r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:(?:[^-]|-(?!----BEGIN))*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    # No END (the output was cut off): take the following lines that look like key body.
    rf"|(?:(?:\s|\\[nr])+(?:{_B64}+|(?:Proc-Type|DEK-Info):[^\r\n\\]*)"
    r"(?=[ \t]*(?:[\r\n\"]|\\[nr]|\Z)))*)",
    # user:password@ (the user may be empty: redis://:pw@host); the password runs to the
    # last @, and may hold a slash when the user has no dot and no port comes first
    # (mongodb+srv://admin:Xk9/Qz+L@ but not localhost:8080/a@b); or a key alone as the
    # user (a Sentry DSN: https://<key>@o1.ingest.sentry.io).
    "credentials": r"://(?P<v_credentials>)(?:[^\s/@:\[.]*:(?![0-9]+/)[^\s/@]+(?:/[^\s/@]+)+"
    r"|[^\s/@:\[]*:[^\s/]+|(?=[^\s/@:]{0,63}\d)[A-Za-z0-9_~-]{16,64})(?=@)",
    # Not only at a word start, so /var/home/alice is caught too; /root stays.
    "home": rf"/(?:home|Users)/(?P<v_home>){_HOME_USER}",
    # A Windows user name may hold spaces when a separator follows (C:\Users\Jo Ann\).
    # Its backslashes may be escaped, in JSON quoted twice too (C:\\\\Users\\\\x).
    "home_win": r":(?<=[A-Za-z]:)(?:\\{1,4}|/)Users(?:\\{1,4}|/)(?P<v_home_win>)"
    rf"(?:[^\r\n\\/:\"'\[\]]+(?=[\\/])|{_HOME_USER})",
    # Incoming webhooks: the URL is the credential.
    "webhook": r"\.(?:(?<=hooks\.)slack\.com/(?:services|workflows|triggers)/"
    r"|(?<=discord\.)com/api/webhooks/|(?<=discordapp\.)com/api/webhooks/"
    r"|(?<=\.webhook\.)office\.com/webhookb2/)"
    r"(?P<v_webhook>)[A-Za-z0-9_/@-]{10,}",
    # A URL's query parameters that carry a credential under a short name: an Azure SAS
    # `sig=`, an S3 `X-Amz-Signature=`, `sid=`, `session=`, `key=`, `auth=`, `code=`.
    "query": r"[?&;](?i:sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential"
    r"|x-goog-signature|x-goog-credential|sid|session|key|auth|code)="
    r"(?P<v_query>)[^\s&#\"'<>]{8,}",
    # Telephone numbers as people write them: international (+ and a country code, 8 to
    # 15 digits: is_phone) and North American with brackets or dashes; a bare run of
    # digits is a number of some other kind.
    "phone": r"\+(?<![\w+]\+)[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){1,6}(?![\d-])"
    r"|\((?<![\w(]\()\d{3}\)[ \t]?\d{3}[ .-]\d{4}(?![\w-])"
    r"|\d(?<![\w.-]\d)\d{2}-\d{3}-\d{4}(?![\w-])",
    # A PuTTY key file's private half (its lines, or put on one line) and its MAC.
    "ppk": r"Private-(?:Lines:[ \t]*\d+(?P<v_ppk>)(?:(?:\r?\n[A-Za-z0-9+/=]+)+"
    r"|(?:[ \t]+[A-Za-z0-9+/=]{16,})+)"
    r"|MAC:[ \t]*[0-9a-fA-F]{16,})",
}
WORD_START = {
    # --KEY v, --KEY=v, KEY=v, KEY: v, "KEY": "v" (a quoted value may hold spaces).
    "secret": rf"(?:--{_KEY}{_KEY_END}(?:[ \t]*=[ \t]*|[ \t]+(?!-))"
    rf"|{_KEY}(?={_ASSIGN}){_KEY_END}{_ASSIGN})"
    # A JSON string value runs over its escapes (a service account's "private_key").
    # a value a shell's single quotes were closed and reopened around: '"'"'
    r"(?:'\"'\"')?"
    r"(?:(?P<eq>\\[\"'])|(?P<dq>\")|(?P<sq>'))?(?P<v_secret>)(?!\[REDACTED)" + _NOT_A_VALUE
    + r"(?(eq)[^\"'\\\n]+|(?(dq)(?:[^\"\\\n]|\\.)+|(?(sq)[^'\\\n]+"
    r"|(?![\[{(<])(?:[Bb]earer[ \t]+)?[^\s\"'\\&,;]+)))",
    # Keys too short or too common to hold a secret whatever their value (auth, pass, pw,
    # .npmrc's _auth): the value must look like one, with a digit or a symbol or long.
    "weak_key": r"(?i:_?auth|pass|pwd?)\\?[\"']?[ \t]*[:=](?![:=])[ \t]*\\?[\"']?(?P<v_weak_key>)"
    r"(?=[^\s\"',;}]{0,64}[\d+/=#!@$%^&*]|[^\s\"',;}]{16})[^\s\"',;}]{6,}",
    # The header's value: with a scheme (Basic, Bearer, SSWS...) any credential of 8 or
    # more characters; without one, a value that holds a digit or is long.
    "authorization": r"(?i:authorization)\\?[\"']?[ \t]*[:=][ \t]*"
    r"(?:(?i:basic|bearer|token|digest|negotiate|ntlm|ssws|sso-key|apikey|api-key)[ \t]+"
    r"(?=[A-Za-z0-9+/=._~-]{8})|(?=[^\s\"'\\]*\d|[^\s\"'\\]{16}))"
    r"(?P<v_authorization>)[^\r\n\"'\\]+",
    "cookie": r"(?i:(?:set-)?cookie)[ \t]*:[ \t]*(?P<v_cookie>)[^\r\n\"'\\]+",
    # A key told by its name in words (or an environment name) and a space, not assigned:
    # `application key <40 hex>`, `Invalid API Token <token>`, `CF_API_TOKEN <token>`,
    # `signing secret <hex>`, `Invalid token <token>`. The value holds a letter and a digit
    # and is long: prose never does.
    "named_key": r"(?:[A-Z][A-Z0-9_]*+(?:(?<=_API_KEY)|(?<=_APP_KEY)|(?<=_API_TOKEN)"
    r"|(?<=_ACCESS_TOKEN)|(?<=_SIGNING_SECRET)|(?<=_WEBHOOK_SECRET)|(?<=_CLIENT_SECRET)"
    r"|(?<=_APPLICATION_KEY))"
    r"|(?i:api|app|application|access|signing|webhook|client)[ \t]+(?i:key|token|secret)"
    r"|(?i:token|secret))"
    r"[ \t]+(?P<v_named_key>)(?=[\w+/=-]{0,80}\d)(?=[\w+/=-]{0,80}[A-Za-z])"
    r"[A-Za-z0-9_+/=-]{20,}(?![\w+/=-])",
    # Passwords given to a command: curl -u user:pw, sshpass -p, mysql -ppw, redis-cli -a,
    # docker login -p; and a .netrc's `machine h login u password pw`.
    "cli_password": r"(?:curl\b[^\n|;&]*?[ \t](?:-u|--user)[ \t=]*[\"']?[^\s:\"']*:"
    r"|sshpass[ \t]+(?:-\w[ \t]+)*?-p[ \t]*[\"']?"
    r"|mysql(?:dump|admin|sh)?\b[^\n|;&]*?[ \t]-p(?=\S)"
    r"|redis-cli\b[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+[\"']?"
    r"|docker[ \t]+login\b[^\n|;&]*?[ \t]-p[ \t]+[\"']?"
    r"|machine[ \t]+\S+(?:\s+login[ \t]+\S+)?\s+password[ \t]+)"
    r"(?P<v_cli_password>)[^\s\"']+",
    # A bearer token holds a digit or is long: "Bearer authentication" is prose, and
    # `token_type=bearer expires_in=3600` names the scheme.
    "bearer": rf"[Bb](?i:earer)[ \t]+(?P<v_bearer>)(?![A-Za-z_]+=)"
    rf"(?:(?=[A-Za-z._~+/=-]*\d){_TOKEN}{{8,}}|{_TOKEN}{{20,}})",
    "jwt": r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
    # Vendors' keys by their prefixes. `sk-` wants 20 characters with a digit among its
    # first hundred, before any other `sk-`: `sk-learn-style` is a word (and the look for
    # a digit stays short, as the rule is tried after every hyphen: see GLUED).
    "api_key": r"sk-(?=(?:(?!sk-)[A-Za-z0-9_-]){0,100}\d)[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{22,}|A[KS]IA[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|xox[abeoprs]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9-]{10,}"
    r"|xapp-[A-Za-z0-9-]{20,}|[sr]k_(?:live|test|prod)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/]{24,}={0,2}"
    r"|gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas|ffct)-[A-Za-z0-9_-]{20,}"
    r"|gl(?:sa|c)_[A-Za-z0-9+/_]{32,}={0,3}|GR1348941[A-Za-z0-9_-]{20}"
    r"|AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}|hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}"
    r"|npm_[A-Za-z0-9]{36}|pypi-AgE[A-Za-z0-9_-]{50,}|SK[0-9a-fA-F]{32}(?![0-9A-Za-z])"
    r"|AC[0-9a-f]{32}(?::[0-9a-f]{32})?(?![0-9A-Za-z])"
    r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}|key-[0-9a-f]{32}(?![0-9a-z])"
    r"|shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}|do[por]_v1_[a-f0-9]{64}|dapi[a-f0-9]{32}"
    r"|gsk_[A-Za-z0-9]{48,}|r8_[A-Za-z0-9]{37}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}"
    r"|AGE-SECRET-KEY-1[0-9A-Z]{58}|hv[sbr]\.[A-Za-z0-9_-]{24,}"
    r"|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}|lin_api_[A-Za-z0-9]{40}"
    r"|sntry[su]_[A-Za-z0-9+/=_-]{40,}|xai-[A-Za-z0-9]{60,}|secret_[A-Za-z0-9]{43}(?!\w)"
    r"|AT(?:ATT|CTT)3[A-Za-z0-9_=-]{50,}|ATBB[A-Za-z0-9_=.-]{24,}"
    r"|\d{8,10}:AA[A-Za-z0-9_-]{33}(?![\w-])"
    r"|LTAI[A-Za-z0-9]{20}|ABSK[A-Za-z0-9+/]{100,}={0,2}|v1\.0-[a-f0-9]{24}-[a-f0-9]{100,}"
    r"|fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}|pul-[a-f0-9]{40}"
    r"|sha256~[\w-]{43}|dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}|bkua_[a-f0-9]{40}"
    r"|sq[pua]_[a-f0-9]{40}|cmVmd[A-Za-z0-9]{59}|AKCp[A-Za-z0-9]{69}"
    r"|dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}|rubygems_[a-f0-9]{48}|oy2[a-z0-9]{43}"
    r"|CLOJARS_[A-Za-z0-9]{60}|HRKU-AA[A-Za-z0-9_-]{58}|pplx-[A-Za-z0-9]{48}"
    r"|pnu_[A-Za-z0-9]{36}|ntn_[0-9]{11}[A-Za-z0-9]{35}"
    r"|EAA[ACM](?=[\w-]{0,60}\d)[A-Za-z0-9_-]{20,}|sq0(?:csp|atp)-[A-Za-z0-9_-]{22,}"
    r"|access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}"
    r"|FLW(?:SECK|PUBK)(?:_TEST)?-[A-Za-z0-9]{12,32}(?:-X)?|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"
    r"|NR(?:AK|II|JS|RA|IQ)-[A-Za-z0-9_-]{20,}|eyJrIjoi[A-Za-z0-9]{40,}={0,3}"
    r"|sdk-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|ops_eyJ[A-Za-z0-9+/]{100,}={0,3}"
    r"|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    # Keys known by their shape rather than a prefix word: Azure AD client secrets
    # (`…8Q~…`), Discord bot tokens, Mailchimp (`…-us21`), Okta (`00…`), Terraform
    # Cloud (`….atlasv1.…`), a wallet's private key (WIF, or 64 hex digits after 0x
    # that no transaction or block names).
    "key_shape": r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}"
    r"|[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![\w-])"
    r"|[0-9a-f]{32}-us\d{1,2}(?!\w)"
    r"|00(?=[\w-]{0,40}[A-Z])(?=[\w-]{0,40}[a-z])[A-Za-z0-9_-]{40}(?![\w-])"
    r"|[a-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"
    r"|[5KL](?=[1-9A-HJ-NP-Za-km-z]{0,51}\d)[1-9A-HJ-NP-Za-km-z]{50,51}(?!\w)"
    r"|0x[0-9a-fA-F]{64}(?![0-9A-Za-z])",
    # Card numbers pass the Luhn check (is_card): most other long numbers fail it.
    "card": r"[2-6]\d{3}(?P<c16>[ -]?)\d{4}(?:(?P=c16)\d{4}){2}(?![\d-])"
    r"|3[47]\d{2}(?P<c15>[ -]?)\d{6}(?P=c15)\d{5}(?![\d-])",
    "ssn": r"(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])",
    # `git@host:owner/repo` is an SSH remote and `https://builds@host` a URL's user name,
    # not a person's address.
    "email": r"[A-Za-z0-9._%+-](?<!//[A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*+(?<!\bgit)@"
    r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b",
    # IPv4 starts a word and follows no version specifier, so `v1.2.3.4`,
    # `==1.2.3.4`, `python3.11.7.1`, `1.2.3.4.tar.gz` are versions, but a bare
    # dotted quad such as 3.11.7.1 is taken for an address unless a program's name
    # comes before it (`python 3.11.7.1`, VERSIONED): otherwise the two cannot be
    # told apart and a leaked address costs more than a blurred version.
    # IPv6 here is a candidate: is_ip turns down `a::b`, times and slices.
    "ip": rf"\d(?<![=<>~!]=\d)\d{{0,2}}(?:\.\d{{1,3}}){{3}}(?!\.?\w)"
    rf"|(?:{_HEX}(?<!:.){_HEX}{{0,3}}:|:(?<!::))"
    rf"(?:{_HEX}{{0,4}}:){{1,6}}(?:{_IPV4}|{_HEX}{{0,4}})(?![\w:])",
}
# Rules also tried right after a hyphen, where no word starts: a vendor's key glued to a
# name (deploy-ghp_…, x-sk-…). Each of their alternatives starts with the vendor's prefix
# and either matches the run after it or fails within a bounded length, so trying them
# after every hyphen stays linear ("-sk-" * 20000); a rule such as jwt, whose run spans
# hyphens and then wants a dot, would not.
GLUED = {"api_key": "api_key_glued"}
# Base64 that decodes to a secret, or a bare 40-character AWS-style secret: its own pass
# (scrub._encoded), so that a run it turns down is still read by the other rules.
ENCODED = lazy.compile(r"(?<![\w.%+-])[A-Za-z0-9+/]{24,}={0,2}(?![A-Za-z0-9+/=])")

LABEL = {
    "private_key": "[REDACTED:private_key]",
    "credentials": "[REDACTED:credentials]",
    "home": "[USER]",
    "home_win": "[USER]",
    "secret": "[REDACTED:secret]",
    "weak_key": "[REDACTED:secret]",
    "query": "[REDACTED:secret]",
    "ppk": "[REDACTED:private_key]",
    "bearer": "[REDACTED:token]",
    "jwt": "[REDACTED:token]",
    "api_key": "[REDACTED:api_key]",
    "key_shape": "[REDACTED:api_key]",
    "email": "[REDACTED:email]",
    "ip": "[REDACTED:ip]",
    "webhook": "[REDACTED:token]",
    "authorization": "[REDACTED:token]",
    "cookie": "[REDACTED:secret]",
    "cli_password": "[REDACTED:secret]",
    "encoded": "[REDACTED:api_key]",
    "api_key_glued": "[REDACTED:api_key]",
    "card": "[REDACTED:card]",
    "ssn": "[REDACTED:ssn]",
    "phone": "[REDACTED:phone]",
    "named_key": "[REDACTED:secret]",
}


def _holds(*words: str) -> Callable[[str], bool]:
    return lambda text: any(word in text for word in words)


def _holds_any_case(*words: str) -> Callable[[str], bool]:
    return lambda text: any(word in text.lower() for word in words)


# A rule's gate: what a text holds wherever the rule matches in it (a word the rule
# spells out, with the rule's own case rules). A text whose gate is shut is scanned
# without that rule, which cannot change what the rules find in it; so a process
# compiles only the rules its texts could trigger, not the whole alternation (~10 ms,
# on every capture). A rule changed here changes its gate too; the rules without one
# (key_shape, card, ssn, phone, email, ip) are always compiled.
GATES: dict[str, Callable[[str], bool]] = {
    "private_key": _holds("-----BEGIN"),
    "credentials": _holds("://"),
    "home": _holds("/home/", "/Users/"),
    "home_win": _holds("Users"),
    "webhook": _holds("slack.com/", "com/api/webhooks/", "office.com/webhookb2/"),
    "query": _holds("="),
    "ppk": _holds("Private-"),
    # every key end and environment name holds one of these words
    "secret": _holds_any_case("pass", "secret", "token", "pwd", "key", "sess", "auth", "signature"),
    "weak_key": _holds_any_case("auth", "pass", "pw"),
    "named_key": _holds_any_case("key", "token", "secret"),
    "authorization": _holds_any_case("authorization"),
    "cookie": _holds_any_case("cookie"),
    "cli_password": _holds("curl", "sshpass", "mysql", "redis-cli", "docker", "machine"),
    "bearer": _holds_any_case("bearer"),
    "jwt": _holds("eyJ"),
    # one word of each vendor's alternative, in their order
    "api_key": _holds("sk-", "gh", "github_pat_", "AKIA", "ASIA", "xox", "xapp-", "k_live_",
                      "k_test_", "k_prod_", "whsec_", "gl", "GR1348941", "AIza", "ya29.", "hf_",
                      "api_org_", "npm_", "pypi-AgE", "SK", "AC", "SG.", "key-", "shp", "_v1_",
                      "dapi", "gsk_", "r8_", "PMAK-", "AGE-SECRET-KEY-1", "hv", "dp.",
                      "lin_api_", "sntry", "xai-", "secret_", "AT", "ATBB", ":AA", "LTAI",
                      "ABSK", "v1.0-", "fo1_", "fm", "pul-", "sha256~", "dt0c01.", "bkua_", "sq",
                      "cmVmd", "AKCp", "dckr_", "rubygems_", "oy2", "CLOJARS_", "HRKU-AA",
                      "pplx-", "pnu_", "ntn_", "EAA", "sq0", "access_token$", "FLW", "xkeysib-",
                      "NR", "eyJrIjoi", "sdk-", "ops_eyJ", "A3-"),
}
ALL_RULES = frozenset({**ANYWHERE, **WORD_START})


def _alternatives(rules: dict[str, str], names: frozenset[str]) -> str:
    return "|".join(f"(?:{rx})(?P<{name}>)" for name, rx in rules.items() if name in names)


def alternation(names: frozenset[str]) -> str:
    """The built-in rules of ``names`` as one pattern, in the rules' order."""
    anywhere = _alternatives(ANYWHERE, names)
    word_start = _alternatives(WORD_START, names)
    glued = "|".join(f"(?:{WORD_START[name]})(?P<{group}>)"
                     for name, group in GLUED.items() if name in names)
    # One lookbehind turns down the inside of a word for both (most positions of a text).
    starts = "|".join([*([f"(?<!-)(?:{word_start})"] if word_start else []),
                       *([f"(?<=-)(?=[A-Za-z0-9])(?:{glued})"] if glued else [])])
    return "|".join([*([anywhere] if anywhere else []),
                     *([f"(?<![\\w.%+])(?:{starts})"] if starts else [])])


def is_ip(text: str) -> bool:
    if "::" in text:
        # Compressed IPv6 also looks like code (`a::b`, `x[1::2]`): ask for a digit
        # and either three groups or a long one (`2001:db8::7`).
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
    # Loopback, 0.0.0.0 and a link-local address set by hand (fe80::1) identify nobody,
    # and "refused on 127.0.0.1" is a lesson; fe80::1ff:fe23:4567:890a holds a MAC.
    set_by_hand = (address.version == 6 and address.is_link_local
                   and int(address) & (1 << 64) - 1 < 1 << 16)
    return not (address.is_loopback or address.is_unspecified or set_by_hand)


# Bits per character of a random 40-character base64 string: about 4.9; words and paths
# stay well under 4.5 (the limit detect-secrets uses for base64).
AWS_SECRET_ENTROPY = 4.5
VERSIONED = lazy.compile(
    r"(?i:python|pypy|version|ver|release|node|ruby|perl|php|java|go|gcc|clang|cmake"
    r"|pip|npm|yarn|rustc|cargo|dotnet|kernel|framework|runtime|sdk|build|windows|jdk|jre"
    r"|openssl|chrome|firefox|driver|firmware)[ \t]+$")
# 64 hex digits after 0x are a wallet's private key unless a transaction, block or hash
# is named just before them.
_NAMES_A_HASH = lazy.compile(r"(?i:tx|txn|transaction|hash|block|receipt|commit)\w*[\s:=\"'(]*$")


def is_phone(number: str) -> bool:
    """An international number has 8 to 15 digits (E.164); a North American one 10."""
    return 8 <= sum(c.isdigit() for c in number) <= 15


def is_card(number: str) -> bool:
    digits = [int(c) for c in number if c.isdigit()]
    odd = sum(digits[-1::-2])
    even = sum(sum(divmod(2 * d, 10)) for d in digits[-2::-2])
    return (odd + even) % 10 == 0


def entropy(text: str) -> float:
    return -sum(n / len(text) * math.log2(n / len(text)) for n in Counter(text).values())


def names_a_hash(text: str, start: int) -> bool:
    return _NAMES_A_HASH.search(text, max(0, start - 24), start) is not None


# A value that is code: a name, an attribute or a call (settings.SECRET_KEY,
# request.form[...], get_api_key()). Each part is one case, with digits only at its end,
# so a password such as Tr0ub4dor.3 is not taken for one.
_NAME = r"(?:[a-z_][A-Za-z_]*\d*|[A-Z_][A-Z0-9_]*)"
_CODE = lazy.compile(rf"{_NAME}(?=[.\[(])(?:\.{_NAME})*(?:[\[(].*)?")
# Prose after `key:` (password: must be at least 8 characters, Error: secret: not found,
# (using password: YES)): a value of letters only that more words or a bracket follow.
_PROSE_AFTER = lazy.compile(r"[)\]]|[ \t]+[^\s;\"'}]")


def is_value(match: re.Match[str]) -> bool:
    """Whether the value of a `key = value` match can be a secret: it holds a letter or
    a digit, is no code (unquoted) and no prose (after a colon)."""
    text, start, end = match.string, match.start("v_secret"), match.end()
    value = text[start:end]
    if not any(c.isalnum() for c in value):
        return False
    quoted = text[start - 1:start] in ("\"", "'")
    if quoted:
        return True
    if _CODE.fullmatch(value):
        return False
    separator = text[match.start():start].rstrip(" \t")
    letters = value.rstrip(")]")
    return not (separator.endswith(":") and letters.isalpha()
                and (letters != value or _PROSE_AFTER.match(text, end) is not None))
