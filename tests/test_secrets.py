"""Planted secrets never reach the store file, its WAL, the recall block or JSON output."""

import json

from conftest import run_cli

from reflect import Memory
from reflect.store import DB_NAME

SECRETS = {
    "openai": "sk-proj-Zq8vT3xLp9WmN2bR7cYk4HsJ6dFa1GeU",
    "anthropic": "sk-ant-api03-Hk29sLqPzX8vNm3RtW7yBc4JdF6gA1eU",
    "github": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "aws": "AKIAZ7Q4PLMX3RT8WV2N",
    "slack": "xoxb-2048-9437-Qm7TzLpW3xRk",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.Qm9vZ1NpZ25hdHVyZVZhbHVlMTIz",
    "password": "hunter2-Plover-91",
    "url_password": "Tr0ub4dor-and-3",
    "email": "dana.quill@corp-mail.example",
    "ipv4": "203.0.113.77",
    "home_user": "dquill",
    "pem_body": "MIIEowIBAAKCAQEA7yQ3nRplantedkeybody",
    "datadog": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "phone": "+44 20 7946 0958",
    "hf_org": "api_org_kT4nW8qZ2xL6vB9mR3sP7dF1gH5jK0cYeA",
}

ERROR = f"""Traceback (most recent call last):
  File "/home/{SECRETS['home_user']}/proj/deploy.py", line 12, in <module>
    client.login(key="{SECRETS['openai']}")
requests.exceptions.ConnectionError: https://bot:{SECRETS['url_password']}@203.0.113.77/api \
refused for {SECRETS['email']} from {SECRETS['ipv4']}; password={SECRETS['password']} \
token={SECRETS['github']} aws={SECRETS['aws']} slack={SECRETS['slack']} \
auth: Bearer {SECRETS['jwt']} {SECRETS['anthropic']} \
datadog: 403 for application key {SECRETS['datadog']}; paging {SECRETS['phone']}; \
hub token {SECRETS['hf_org']}
-----BEGIN RSA PRIVATE KEY-----
{SECRETS['pem_body']}
-----END RSA PRIVATE KEY-----
"""
ACTION = f"OPENAI_API_KEY={SECRETS['openai']} python /home/{SECRETS['home_user']}/deploy.py"
GOAL = f"Deploy for {SECRETS['email']} using token {SECRETS['github']}"


def leaks(blob: bytes | str) -> list[str]:
    if isinstance(blob, str):
        blob = blob.encode()
    return [name for name, value in SECRETS.items() if value.encode() in blob]


def test_planted_secrets_reach_neither_store_nor_wal_nor_output(own_store):
    mem = Memory()
    entry = mem.capture(run="r", goal=GOAL, action=ACTION, exit_code=1, error_text=ERROR)
    mem.capture(run="r", crash={"error_class": "AuthError", "stack_signature": SECRETS["jwt"],
                                "phase": f"login password={SECRETS['password']}", "exit_code": 1})
    assert entry.redactions >= len(SECRETS) - 1
    assert leaks(json.dumps(entry.to_dict())) == []
    rec = mem.recall(run="r")
    assert rec.items and leaks(rec.text) == [] and leaks(json.dumps(rec.to_dict())) == []
    # While the connection is open the writes sit in the WAL: read it as bytes.
    wal = own_store / f"{DB_NAME}-wal"
    assert wal.exists() and wal.stat().st_size > 0
    assert leaks(wal.read_bytes()) == []
    mem.close()
    assert leaks((own_store / DB_NAME).read_bytes()) == []


def test_planted_secrets_stay_out_of_cli_output(own_store):
    out = run_cli("capture", "--run", "r", "--goal", GOAL, "--action", ACTION, "--exit-code",
                  "1", "--error-file", "-", "--format", "json", stdin=ERROR.encode())
    assert out.returncode == 0 and leaks(out.stdout) == [] and leaks(out.stderr) == []
    for fmt in ("text", "json"):
        out = run_cli("recall", "--run", "r", "--format", fmt)
        assert out.stdout and leaks(out.stdout) == []
    shown = run_cli("failures", "show", json.loads(
        run_cli("failures", "list", "--format", "json").stdout)["failures"][0]["failure_id"])
    assert shown.returncode == 0 and leaks(shown.stdout) == []
    assert leaks((own_store / DB_NAME).read_bytes()) == []


def test_a_secret_across_the_field_bound_is_scrubbed_before_the_cut():
    from reflect.capture.entry import MAX_FIELD

    key = SECRETS["openai"]
    goal = "x" * (MAX_FIELD - 12) + f" {key} trailing words"  # the bound falls inside the key
    with Memory() as mem:
        entry = mem.capture(run="r", goal=goal, exit_code=1)
    assert key[:8] not in entry.goal and entry.redactions == 1


def test_a_run_id_holding_secrets_is_stored_scrubbed_everywhere_and_finds_its_block(own_store):
    run = f"deploy {SECRETS['email']} {SECRETS['github']}"
    with Memory() as mem:
        mem.capture(run=run, iteration=1, exit_code=1, error_text="ValueError: bad row")
        rec = mem.recall(run=run, iteration=2)
        assert [i.section for i in rec.items] == ["recent"]  # its own failure, found
        mem.outcome(run=run, iteration=3, success=True, action="pytest")
    out = run_cli("injections", "--format", "json")
    assert out.returncode == 0 and leaks(out.stdout) == []
    assert leaks((own_store / DB_NAME).read_bytes()) == []
