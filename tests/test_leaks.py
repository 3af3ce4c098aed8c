"""The planted corpus (tests/secret_corpus.py) in every field a secret can enter by, and
not one of them in any output: store bytes, WAL, pending file, recall text and JSON,
``failures show``, exports, the model's request bodies."""

import json
from pathlib import Path

import pytest
from conftest import run_cli, store_held
from secret_corpus import LOOK_ALIKES, SECRETS
from test_worker import MODEL, api, provider_env, reply  # noqa: F401 (fixtures)

from reflect import Memory, Settings
from reflect.capture.scrub import Scrubber
from reflect.store import DB_NAME


def leaks(blob: bytes | str) -> list[str]:
    blob = blob.encode() if isinstance(blob, str) else blob
    return [kind for kind, (secret, _) in SECRETS.items() if secret.encode() in blob]


def wrapped(line: str, width: int = 80) -> str:
    """The line as a terminal of this width shows it."""
    return "\n".join(line[i:i + width] for i in range(0, len(line), width))


@pytest.mark.parametrize("kind", SECRETS)
def test_each_kind_is_scrubbed_whole_and_cut_by_a_wrap(kind):
    secret, line = SECRETS[kind]
    scrubber = Scrubber()
    assert secret not in scrubber.scrub(line)[0]
    # A wrap anywhere inside the secret (not at a space) leaves neither half behind.
    text = "x" * 70 + " " + line
    start = text.index(secret)
    for cut in range(start + 4, start + len(secret) - 4, 7):
        if " " in text[cut - 1:cut + 1]:
            continue
        out = scrubber.scrub(text[:cut] + "\n" + text[cut:])[0]
        halves = (text[start:cut], text[cut:start + len(secret)])
        assert not [h for h in halves if len(h) >= 8 and h in out], (cut, out)


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_survive(text):
    assert Scrubber().scrub(text) == (text, 0)


def test_every_field_and_every_output(api, own_store, tmp_path):  # noqa: F811
    lessons = [reply({"trigger": f"deploying with {line}", "guidance": f"use {line} again",
                      "category": "auth", "kind": "fix", "confidence": 0.9})
               for _, line in SECRETS.values()]
    api.script(*lessons, then=reply({"trigger": "deploying", "guidance": "check the key",
                                     "category": "auth", "kind": "fix", "confidence": 0.9}))
    mem = Memory(model=MODEL)
    for n, (kind, (_, line)) in enumerate(SECRETS.items()):
        run = f"r-{kind}"
        entry = mem.capture(run=run, iteration=1, goal=f"ship {line}", phase=line, action=line,
                            exit_code=1, error_text=f"RuntimeError: {line}")
        mem.capture(run=run, iteration=2, crash={
            "error_class": line, "stack_signature": f"main > {line}", "phase": line,
            "friction_kind": line, "fingerprint": line})
        mem.capture(run=run, iteration=3, exc=RuntimeError(line), action=f"deploy {n}")
        mem.outcome(run=run, iteration=4, success=True, action=line)
        lesson_id = mem.teach(f"when deploying {n}: never print {line}")
        mem.quarantine(lesson_id, why=f"it says {line}")
        rec = mem.recall(run=run, goal=line)
        assert rec.items and leaks(rec.text) == [] and leaks(json.dumps(rec.to_dict())) == []
        assert leaks(json.dumps(entry.to_dict())) == []
    mem.run_worker(once=True)
    assert api.count >= len(SECRETS)
    assert [leaks(r.content) for r in api.requests if leaks(r.content)] == []
    wal = own_store / f"{DB_NAME}-wal"
    assert wal.stat().st_size and leaks(wal.read_bytes()) == []
    mem.close()
    assert leaks((own_store / DB_NAME).read_bytes()) == []

    listed = json.loads(run_cli("failures", "list", "--limit", "1000", "--format",
                                "json").stdout)["failures"]
    assert len(listed) == 3 * len(SECRETS)
    for failure in listed[:: len(listed) // 20]:
        for fmt in ("text", "json"):
            shown = run_cli("failures", "show", failure["failure_id"], "--format", fmt)
            assert shown.returncode == 0 and leaks(shown.stdout) == []
    for fmt in ("markdown", "jsonl"):
        exported = run_cli("export", "--format", fmt)
        assert exported.stdout and leaks(exported.stdout) == []
    shown = run_cli("lessons", "list", "--status", "all", "--limit", "1000", "--format", "json")
    assert leaks(shown.stdout) == []


def test_kept_aside_captures_hold_no_secret(own_store):
    Memory().capture(run="setup", exit_code=1)
    with store_held(own_store), Memory(settings=Settings(busy_timeout=0.05)) as mem:
        for _, line in SECRETS.values():
            mem.capture(run="r", goal=line, action=line, phase=line, exit_code=1,
                        error_text=f"RuntimeError: {line}")
    kept = b"".join(p.read_bytes() for p in own_store.glob("pending*"))
    assert len(kept.splitlines()) == len(SECRETS) and leaks(kept) == []


def test_cli_fields_and_a_large_error_file_with_secrets_at_its_end(own_store, tmp_path):
    lines = [line for _, line in SECRETS.values()]
    log = Path(tmp_path / "big.log")
    with open(log, "w") as f:
        f.write("progress line that says nothing in particular\n" * 45_000)  # about 2 MB
        for line in lines:
            f.write(wrapped(f"ERROR {line}") + "\n")
        f.write("RuntimeError: " + lines[0] + "\n")
    out = run_cli("capture", "--run", "big", "--exit-code", "1", "--error-file", str(log),
                  "--goal", " ".join(lines), "--action", lines[1], "--phase", lines[2],
                  "--format", "json")
    assert out.returncode == 0 and leaks(out.stdout) == [] and leaks(out.stderr) == []
    for fmt in ("text", "json"):
        recalled = run_cli("recall", "--run", "big", "--format", fmt)
        assert recalled.stdout and leaks(recalled.stdout) == []
    assert leaks((own_store / DB_NAME).read_bytes()) == []


def across(at: int, secret: str, line: str) -> list[str]:
    """``line`` behind filler words, so that a cut at ``at`` falls inside the secret: near
    its start, its middle and its end."""
    start = line.index(secret)
    return [("step " * at)[:at - start - k - 1] + " " + line
            for k in sorted({4, len(secret) // 2, len(secret) - 4}) if 0 < k < len(secret)]


@pytest.mark.parametrize("at", [500, 2000, 4000])  # a message's bound, a line's, a field's
def test_a_secret_across_a_cut_is_scrubbed_before_it(own_store, at):
    from secret_forms import leaked

    head = "ValueError: "
    with Memory() as mem:
        for n, (secret, line) in enumerate(SECRETS.values()):
            for text in across(at - len(head), secret, line):
                mem.capture(run=f"r{n}", exit_code=1, error_text=head + text)
                mem.capture(run=f"r{n}", crash={"error_class": "E", "stack_signature": text})
        got = [" ".join(str(v) for e in mem.failures(run=f"r{n}", limit=100)
                        for v in e.to_dict().values()) for n in range(len(SECRETS))]
    assert [kind for (kind, (secret, line)), out in zip(SECRETS.items(), got, strict=True)
            if leaked(secret, line, out, lambda out: out)] == []


def test_a_secret_the_tail_of_an_error_file_cuts_is_not_kept(own_store, tmp_path):
    """An error file is read to its last 64 KB: the line the cut falls in is left out, as
    what a cut left of a secret is no longer found by its pattern."""
    from secret_forms import leaked

    from reflect.capture.entry import MAX_ERROR_BYTES, read_error_file

    log = tmp_path / "error.log"
    with Memory() as mem:
        for n, (secret, line) in enumerate(SECRETS.values()):
            head = f"Error: {line}\n"
            start = head.encode().index(secret.encode()) + len(secret.encode()) // 2
            rest = start + MAX_ERROR_BYTES - len(head.encode())  # lines that say nothing
            log.write_bytes(head.encode() + (b"=" * 999 + b"\n") * (rest // 1000)
                            + b"\n" * (rest % 1000))
            text, _ = read_error_file(str(log))
            mem.capture(run=f"r{n}", exit_code=1, error_text=text)
        got = [" ".join(str(v) for e in mem.failures(run=f"r{n}") for v in e.to_dict().values())
               for n in range(len(SECRETS))]
    assert [kind for (kind, (secret, line)), out in zip(SECRETS.items(), got, strict=True)
            if leaked(secret, line, out, lambda out: out)] == []
