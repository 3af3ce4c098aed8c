"""The secret corpus (tests/secret_corpus.py: 157 kinds in vendors' documented formats)
in every form a tool gives it (tests/secret_forms.py), the realistic look-alikes
(tests/look_alike_corpus.py), and detect-secrets as an oracle: nothing it finds in the
corpus survives our scrub."""

from pathlib import Path

import pytest
from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings
from look_alike_corpus import LOOK_ALIKES_WIDE
from secret_corpus import SECRETS
from secret_forms import FORMS, leaks

from reflect.capture.scrub import Scrubber

SCRUB = Scrubber()
MAX_LOOK_ALIKES_CHANGED = 2


def scrubbed(text: str) -> str:
    return SCRUB.scrub(text)[0]


@pytest.mark.parametrize("form", FORMS)
def test_every_kind_is_caught_in_every_form(form):
    leaked = {kind: leaks(scrubbed, secret, line, form)[:1]
              for kind, (secret, line) in SECRETS.items()}
    assert {kind: texts for kind, texts in leaked.items() if texts} == {}


def test_nothing_detect_secrets_finds_survives_the_scrub(tmp_path: Path):
    lines, kinds = [], []
    for kind, (_, text) in SECRETS.items():
        for line in text.split("\n"):
            lines.append(line)
            kinds.append(kind)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with default_settings():
        found = SecretsCollection()
        found.scan_file(str(corpus))
    secrets = [(kinds[s.line_number - 1], s.secret_value) for _, s in found]
    assert len({kind for kind, _ in secrets}) >= 30  # the oracle saw the corpus
    assert [(kind, value) for kind, value in secrets
            if value and value in scrubbed(SECRETS[kind][1])] == []


def test_at_most_two_realistic_look_alikes_change():
    changed = [text for text in LOOK_ALIKES_WIDE if scrubbed(text) != text]
    assert len(changed) <= MAX_LOOK_ALIKES_CHANGED, changed


@pytest.mark.parametrize("text", [
    "ERROR 1045 (28000): Access denied for user 'app'@'localhost' (using password: YES)",
    "password: must be at least 8 characters", "Error: secret: not found",
    "SyntaxError: unexpected token: ')'", "token_type=bearer expires_in=3600",
    "{'password': ['This password is too short.']}", "getpass(prompt='Password: ')",
    ".NET Framework 4.8.1.0", "fe80::1", "git clone https://builds@ci.example.com/scm/app.git",
])
def test_prose_and_versions_once_taken_for_secrets_survive(text):
    assert SCRUB.scrub(text) == (text, 0)


@pytest.mark.parametrize(("text", "secret"), [
    ("/mnt/nfs/storage/home/alice/project/x.py", "alice"),
    ("/srv/mail/archive/quarterly/dana.quill@corp-mail.example/inbox", "dana.quill"),
    ("sentry_sdk.init('https://3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d@o1.ingest.sentry.io/2')",
     "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d"),
    ("mongodb+srv://admin:Xk9/Qz+Lm2pq@cluster0.example.net/app", "Xk9"),
])
def test_a_long_base64_like_run_hides_nothing_inside_it(text, secret):
    assert secret not in scrubbed(text)


def test_a_secret_after_an_escape_is_found_and_the_request_keeps_its_shape():
    key = "sk-proj-Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa1GeU"
    out = scrubbed(f"q=api%20key%3D{key}&lang=en")
    assert key[:12] not in out and out.endswith("&lang=en") and out.startswith("q=api%20key%3D")
