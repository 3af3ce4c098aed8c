"""The scrubber: planted secrets go, look-alikes stay."""

import re
import subprocess
import sys

import pytest
from secret_corpus import LOOK_ALIKES as PLANTED_LOOK_ALIKES
from secret_corpus import SECRETS

from reflect.capture import scrub_rules
from reflect.capture.scrub import Rules, Scrubber

SCRUB = Scrubber()
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7yQ3nRplantedkeybodyQm9vZ1NpZ25hdHVyZVZhbHVlMTIzAB\n"
    "Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa1GeU+/Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa==\n"
    "-----END RSA PRIVATE KEY-----"
)

# (text, the secret in it, what replaces the secret)
PLANTED = [
    ("openai.AuthenticationError: key sk-Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa1GeUa8Qw2Er5Ty rejected",
     "sk-Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa1GeUa8Qw2Er5Ty", "[REDACTED:api_key]"),
    ("OPENAI_KEY is sk-proj-Zq8vT3xLp9WmN2b_R7cYk4-HsJ6dFa1GeU now",
     "sk-proj-Zq8vT3xLp9WmN2b_R7cYk4-HsJ6dFa1GeU", "[REDACTED:api_key]"),
    ("anthropic: sk-ant-api03-Hk29sLqPzX8vNm3RtW7yBc4JdF6gA1eU-x_Yz9 (401)",
     "sk-ant-api03-Hk29sLqPzX8vNm3RtW7yBc4JdF6gA1eU-x_Yz9", "[REDACTED:api_key]"),
    ("remote: ghp_16C7e42F292c6912E7710c838347Ae178B4a denied",
     "ghp_16C7e42F292c6912E7710c838347Ae178B4a", "[REDACTED:api_key]"),
    ("GH_HOST uses gho_16C7e42F292c6912E7710c838347Ae178B4a.",
     "gho_16C7e42F292c6912E7710c838347Ae178B4a", "[REDACTED:api_key]"),
    ("app token ghs_16C7e42F292c6912E7710c838347Ae178B4a expired",
     "ghs_16C7e42F292c6912E7710c838347Ae178B4a", "[REDACTED:api_key]"),
    ("user token (ghu_16C7e42F292c6912E7710c838347Ae178B4a)",
     "ghu_16C7e42F292c6912E7710c838347Ae178B4a", "[REDACTED:api_key]"),
    ("pat github_pat_11ABCDEFG0aBcDeFgHiJkLmN_0123456789abcdefghijKLMNOPQRSTUVWXyz0123456789AB x",
     "github_pat_11ABCDEFG0aBcDeFgHiJkLmN_0123456789abcdefghijKLMNOPQRSTUVWXyz0123456789AB",
     "[REDACTED:api_key]"),
    ("botocore: The AWS Access Key Id AKIAZ7Q4PLMX3RT8WV2N does not exist",
     "AKIAZ7Q4PLMX3RT8WV2N", "[REDACTED:api_key]"),
    ("slack_sdk: invalid_auth for xoxb-2048-9437-Qm7TzLpW3xRk in #ops",
     "xoxb-2048-9437-Qm7TzLpW3xRk", "[REDACTED:api_key]"),
    ("cookie session=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.Qm9vZ1NpZ25hdHVyZQ; Path=/",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.Qm9vZ1NpZ25hdHVyZQ", "[REDACTED:token]"),
    ("> Authorization: Bearer 8f3kQ2xLp9WmN2bR7cYk\n< HTTP/1.1 401",
     "8f3kQ2xLp9WmN2bR7cYk", "[REDACTED:token]"),
    (f"loading key\n{PEM}\nssh: handshake failed", PEM, "[REDACTED:private_key]"),
    (f"gpg: {PEM.replace('RSA PRIVATE KEY', 'PGP PRIVATE KEY BLOCK')}\n",
     PEM.replace("RSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"), "[REDACTED:private_key]"),
    ('{"key": "' + PEM.replace("\n", "\\n") + '\\n", "port": 22}',
     PEM.replace("\n", "\\n"), "[REDACTED:private_key]"),
    ("output cut:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAB3Nz",
     "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAB3Nz",
     "[REDACTED:private_key]"),
    ("connect failed: password=hunter2-Plover-91 host=db", "hunter2-Plover-91",
     "[REDACTED:secret]"),
    ("ldap: passwd: Tr0ub4dor&3x\n", "Tr0ub4dor", "[REDACTED:secret]"),
    ("flask secret=f9a8b7c6d5e4 debug=True", "f9a8b7c6d5e4", "[REDACTED:secret]"),
    ("GET /cb?access_token=ya29.a0AfH6SMB&state=1 400", "ya29.a0AfH6SMB", "[REDACTED:secret]"),
    ("config error: api_key=4f9d2c1be8a7 is invalid", "4f9d2c1be8a7", "[REDACTED:secret]"),
    ("maps apikey: AIzaSyDq93kx (403)", "AIzaSyDq93kx", "[REDACTED:secret]"),
    ("minio access_key=Q3VBZmlsZQ region=us", "Q3VBZmlsZQ", "[REDACTED:secret]"),
    ("oauth2: client_secret: 7d3f9a2b1c-e8 rejected", "7d3f9a2b1c-e8", "[REDACTED:secret]"),
    ("env: AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "[REDACTED:secret]"),
    ('payload {"password": "correct horse battery", "user": "bob"}', "correct horse battery",
     "[REDACTED:secret]"),
    ("login(username='bob', password='s3cr3t!')", "s3cr3t!", "[REDACTED:secret]"),
    ("export DB_PASSWORD=\"pa55 w0rd\"\n", "pa55 w0rd", "[REDACTED:secret]"),
    ("curl -H 'X-Api-Key: 9b1c0ffee42' https://api.example.com", "9b1c0ffee42",
     "[REDACTED:secret]"),
    ("$ mysql --password hunter2 --user bob", "hunter2", "[REDACTED:secret]"),
    ("$ tool --token=t0k3nvalue --verbose", "t0k3nvalue", "[REDACTED:secret]"),
    ("sqlalchemy: postgresql://admin:s3cr3t@db.internal:5432/app refused", "admin:s3cr3t",
     "[REDACTED:credentials]"),
    ("git: https://x-access-token:abc123def@github.com/o/r.git", "x-access-token:abc123def",
     "[REDACTED:credentials]"),
    ("redis.exceptions: redis://:Pa55word@cache:6379/0", ":Pa55word", "[REDACTED:credentials]"),
    ("SMTP 550 for dana.quill+ci@corp-mail.example.com, retry",
     "dana.quill+ci@corp-mail.example.com", "[REDACTED:email]"),
    ("ECONNREFUSED 10.0.0.12:5432", "10.0.0.12", "[REDACTED:ip]"),
    ("timeout talking to 203.0.113.77.", "203.0.113.77", "[REDACTED:ip]"),
    ("dial tcp [2001:db8::8a2e:370:7334]:443: i/o timeout", "2001:db8::8a2e:370:7334",
     "[REDACTED:ip]"),
    ("from 2001:0db8:85a3:0000:0000:8a2e:0370:7334 port 22",
     "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "[REDACTED:ip]"),
    ("link-local fe80::1ff:fe23:4567:890a%eth0 down", "fe80::1ff:fe23:4567:890a", "[REDACTED:ip]"),
    ("mapped ::ffff:192.0.2.128 denied", "::ffff:192.0.2.128", "[REDACTED:ip]"),
    ('File "/home/dquill/proj/deploy.py", line 12', "dquill", "[USER]"),
    ("/Users/mkowal/Library/Caches/pip", "mkowal", "[USER]"),
    (r"C:\Users\jsmith\AppData\Local\Temp\x.py", "jsmith", "[USER]"),
    (r"open('C:\\Users\\Jo Ann\\notes.txt') failed", "Jo Ann", "[USER]"),
    ("cannot open /var/home/tuser/.bashrc", "tuser", "[USER]"),
]


@pytest.mark.parametrize(("text", "secret", "placeholder"), PLANTED)
def test_planted_secret_is_replaced_and_the_rest_survives(text, secret, placeholder):
    out, count = SCRUB.scrub(text)
    assert out == text.replace(secret, placeholder)
    assert count == 1


LOOK_ALIKES = [
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 (HEAD -> main)",
    "HEAD is now at 3f2a9c1 fix: handle empty input",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "12:34:56 INFO started",
    "2024-05-01T12:34:56.789Z worker exited",
    "error[E0433]: failed to resolve: a::b and std::vec::Vec<u8>",
    "Foo::bar() called crate::v2::Client, e2e::test ok",
    "xs[1::2] + xs[::-1] + xs[::2]",
    "requests 1.2.3, chart v2.10.0, /usr/bin/python3.11 and Django==4.2.1",
    "pip install 'numpy>=1.26.4.0' pkg-1.2.3.4.tar.gz v1.2.3.4 python3.11.7.1",
    "fatal: could not read from git@github.com:psf/requests.git",
    "see https://github.com/psf/requests/issues/1 and ssh://git@github.com/psf/requests.git",
    "color: #ff00aa; background: #0f0",
    "image@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 pulled",
    "base64 dGhpcyBpcyBub3QgYSBzZWNyZXQ= and header eyJhbGciOiJIUzI1NiJ9",
    "task-list is risk-free; install scikit-learn and sk-learn",
    "ECONNREFUSED 127.0.0.1:5432, listening on 0.0.0.0:8000 and [::1]:80",
    "KeyError: 'password'",
    "TypeError: login() missing 1 required positional argument: 'token'",
    "max_tokens=4096 tokenizer=bert-base-uncased",
    "if password == expected: return token_type",
    "sudo: a password is required\nPassword:",
    "401: Bearer authentication required",
    "user@localhost and @pytest.fixture and npm i @types/node@18.11.9",
    "cd /root/.cache/pip && ls /home",
    'File "/usr/lib/python3.11/site-packages/django/core/handlers/base.py", line 197',
    "at com.example.Foo.bar(Foo.java:42) in 1.2.3",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alike_survives_untouched(text):
    assert SCRUB.scrub(text) == (text, 0)


def test_scrubbing_twice_changes_nothing():
    scrubber = Scrubber([r"ACME-\d{6}", "[A-Z]{5,}"], repo=("acme", "widget"))
    text = "\n".join(t for t, _, _ in PLANTED) + " ACME-123456 LOUD github.com/acme/widget"
    once, count = scrubber.scrub(text)
    assert count >= len(PLANTED) + 3
    assert scrubber.scrub(once) == (once, 0)


def test_extra_patterns_are_redacted():
    scrubber = Scrubber([r"ACME-\d{6}", r"corp\.internal"])
    out, count = scrubber.scrub("ticket ACME-004211 on build.corp.internal failed")
    assert (out, count) == ("ticket [REDACTED] on build.[REDACTED] failed", 2)


def test_extra_pattern_given_as_one_string_and_empty_matches():
    assert Scrubber(r"ACME-\d+").scrub("id ACME-7") == ("id [REDACTED]", 1)
    assert Scrubber(["x*"]).scrub("a b") == ("a b", 0)


def test_invalid_extra_pattern_names_it_and_says_how_to_fix():
    with pytest.raises(ValueError, match=re.escape(r"'ACME-(\d+'") + ".*Fix"):
        Scrubber([r"ok", r"ACME-(\d+"])


def test_repo_pair_is_redacted_but_not_its_words():
    scrubber = Scrubber(repo=("django", "django"))
    text = (
        "django.core.exceptions.ImproperlyConfigured, see https://github.com/django/django/pull/1"
        " and git@github.com:Django/Django.git; not django/django-stubs"
    )
    out, count = scrubber.scrub(text)
    assert out == (
        "django.core.exceptions.ImproperlyConfigured, see https://github.com/[REPO]/pull/1"
        " and git@github.com:[REPO].git; not django/django-stubs"
    )
    assert count == 2


def test_no_repo_leaves_pairs_alone():
    assert Scrubber(repo=None).scrub("github.com/acme/widget") == ("github.com/acme/widget", 0)


def corpus() -> list[str]:
    lines = [t for t, _, _ in PLANTED] + [line for _, line in SECRETS.values()]
    lines += LOOK_ALIKES + PLANTED_LOOK_ALIKES
    return lines + ["x" * 70 + " " + line[:30] + "\n" + line[30:] for line in lines]


@pytest.mark.parametrize("rule", sorted(scrub_rules.GATES))
def test_a_rule_matches_only_in_a_text_its_gate_opens(rule):
    alone = re.compile(scrub_rules.alternation(frozenset({rule})))
    found = [text for text in corpus() if alone.search(text)]
    assert found, f"the corpus never triggers {rule}"
    assert [text for text in found if not scrub_rules.GATES[rule](text)] == []


def test_scanning_with_the_gated_rules_finds_what_all_rules_find():
    for text in corpus():
        # Fresh: the rules its gates open, as a new process compiles them for this text.
        gated = Scrubber(rules=Rules()).scrub(text)
        assert Scrubber(rules=Rules(gated=False)).scrub(text) == gated, text


def test_rules_opened_at_once_compile_nothing_again_for_any_text():
    """The resident helper opens every rule before it forks (``scrub.compile_all``): a
    child that compiled what a text's gate opens would lose it at exit, on every hook."""
    gated = Rules()
    first = gated.pattern("")
    assert any(gated.pattern(text) is not first for text in corpus())  # gates do open
    rules = Rules()
    rules.open_all()
    compiled = rules.pattern("")
    assert all(rules.pattern(text) is compiled for text in corpus())


def test_the_helpers_warm_up_leaves_every_rule_compiled(tmp_path):
    done = subprocess.run([sys.executable, "-c", (
        "import sys, pathlib; from reflect.cli.resident import warm_up; "
        "from reflect.capture import scrub, scrub_rules; warm_up(pathlib.Path(sys.argv[1])); "
        "print(scrub._SHARED._compiled[0] == scrub_rules.ALL_RULES)"), str(tmp_path)],
        capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True"], done.stderr[-2000:]


# Units of 64 KB inputs built to make a backtracking regex blow up: bench/attacks.py
# times them against its target (a wall-clock bound is no unit test's)
PATHOLOGICAL = ("-----BEGIN PRIVATE KEY-----\n", "a.", "x@", "::", "://a:", "-", "%+", "sk-",
                "x-sk-", "-xoxb", "-pypi-AgE", "-AC0", "-eyJ", "a-")


# vendors' keys put right after a word and a hyphen, as a name or a branch holds them
GLUED = {
    "deploy-": "ghp_" + "a1B2c3D4e5" * 4,
    "x-": "sk-proj-" + "Ab3dEf9hIj" * 3,
    "token-": "xoxb-1234567890-abcdefghij",
    "ci-": "glpat-" + "a1b2c3d4e5" * 2 + "xx",
    "my-": "AKIAIOSFODNN7EXAMPLE",
    "release--": "npm_" + "a1B2c3D4e5F6" * 3,
}


@pytest.mark.parametrize(("word", "secret"), GLUED.items())
def test_a_key_glued_to_a_word_by_a_hyphen_is_redacted(word, secret):
    text, n = SCRUB.scrub(f"git push origin {word}{secret} failed")
    assert secret not in text and n == 1
    assert text == f"git push origin {word}[REDACTED:api_key] failed"
