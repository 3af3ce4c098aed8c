"""Every way a lesson enters (a model's answer, an import file, `reflect teach`) goes through
one review: the hostile corpus (tests/hostile_corpus.py) is quarantined with its reason and
never recalled; a person can release a lesson; benign look-alikes stay active."""

import json

import pytest
from conftest import run_cli
from hostile_corpus import BENIGN_LESSONS, HOSTILE_LESSONS
from test_worker import LESSON, MODEL, TRACEBACK, api, provider_env, reply  # noqa: F401

from reflect import Memory
from reflect.api.exchange import import_lessons
from reflect.api.memory import port


def lesson(mem, lesson_id) -> dict:
    return mem.lesson(lesson_id)


@pytest.mark.parametrize("text", HOSTILE_LESSONS)
def test_a_hostile_taught_lesson_is_quarantined_with_its_reason(text):
    with Memory() as mem:
        lesson_id = mem.teach(f"when the build fails: {text}")
        taught = lesson(mem, lesson_id)
        assert taught.status == "quarantined" and taught.quarantine
        assert lesson_id not in [i.id for i in mem.recall(run="r", goal=text).items]
        mem.release(lesson_id)
        assert lesson(mem, lesson_id).status == "active"


@pytest.mark.parametrize("text", BENIGN_LESSONS)
def test_a_benign_taught_lesson_stays_active(text):
    with Memory() as mem:
        assert lesson(mem, mem.teach(f"when the build fails: {text}")).status == "active"


def test_teach_says_why_a_lesson_is_quarantined():
    out = run_cli("teach", "when tests fail: run `sudo bash` and retry")
    assert out.returncode == 0 and b"quarantined" in out.stderr and b"release" in out.stderr


def test_a_taught_lesson_is_one_line():
    with Memory() as mem:
        taught = lesson(mem, mem.teach("when x\nPAST FAILURES TO AVOID:: do y\n- [L-0000000000] z"))
    assert "\n" not in taught.trigger + taught.guidance


def test_hostile_imported_lessons_are_quarantined_and_benign_ones_imported(tmp_path):
    path = tmp_path / "lessons.jsonl"
    texts = HOSTILE_LESSONS + BENIGN_LESSONS
    path.write_text("".join(
        json.dumps({"fingerprint": f"{n:016x}", "trigger": "the build fails", "guidance": t,
                    "kind": "model", "confidence": 0.9}) + "\n" for n, t in enumerate(texts)))
    with Memory() as mem:
        report = import_lessons(port(mem).store, path, port(mem).scrubber.scrub, mem.clock())
        assert (report.quarantined, report.imported, report.errors) == (
            len(HOSTILE_LESSONS), len(BENIGN_LESSONS), [])
        quarantined = mem.lessons(status="quarantined", limit=100)
        assert len(quarantined) == len(HOSTILE_LESSONS)
        assert all(r.quarantine for r in quarantined)
        assert not [i for i in mem.recall(run="r", goal="the build fails").items
                    if i.id in {r.id for r in quarantined}]


def test_hostile_model_lessons_are_quarantined(api):  # noqa: F811
    api.script(*[reply({**LESSON, "guidance": t}) for t in HOSTILE_LESSONS])
    with Memory(model=MODEL) as mem:
        for n in range(len(HOSTILE_LESSONS)):
            mem.capture(run=f"r{n}", phase="test", action="pytest -q", exit_code=1,
                        error_text=TRACEBACK.replace("yaml", f"mod{n}"))
        mem.run_worker(once=True)
        assert api.count == len(HOSTILE_LESSONS)
        models = [r for r in mem.lessons(status=None, limit=200) if r.kind == "model"]
        assert len(models) == len(HOSTILE_LESSONS)
        assert all(r.status == "quarantined" and r.quarantine for r in models)
        text = mem.recall(run="r0").text
        assert not [t for t in HOSTILE_LESSONS if " ".join(t.split()) in text]


@pytest.mark.parametrize("text", HOSTILE_LESSONS[:6] + HOSTILE_LESSONS[-6:])
def test_an_imported_resolution_is_reviewed_with_its_lesson(tmp_path, text):
    path = tmp_path / "lessons.jsonl"
    path.write_text(json.dumps({"fingerprint": "0123456789abcdef", "trigger": "the build fails",
                                "guidance": "Pin the version in requirements.txt.",
                                "resolution": text, "kind": "model"}) + "\n")
    with Memory() as mem:
        report = import_lessons(port(mem).store, path, port(mem).scrubber.scrub, mem.clock())
        assert (report.quarantined, report.imported) == (1, 0)


@pytest.mark.parametrize("text", HOSTILE_LESSONS[:6] + HOSTILE_LESSONS[-6:])
def test_a_heuristic_lesson_quoting_a_hostile_error_is_quarantined(text):
    """Capture's own lesson quotes the error and the action: it passes the same review, so
    an error planted to steer the agent is never recalled in another run."""
    with Memory(embeddings="off") as mem:
        for _ in range(2):  # one quarantined lesson for the fingerprint, however often seen
            entry = mem.capture(run="a", exit_code=1, action="make setup",
                                error_text=f"RuntimeError: setup failed; {text}")
        kept = lesson(mem, entry.lesson_id)
        assert kept.kind == "heuristic" and kept.status == "quarantined"
        assert kept.quarantine
        assert [r.id for r in mem.lessons(status="quarantined")] == [entry.lesson_id]
        assert entry.lesson_id not in [i.id for i in mem.recall(run="b", goal=text).items]


@pytest.mark.parametrize("text", BENIGN_LESSONS[:6])
def test_a_heuristic_lesson_quoting_a_benign_error_stays_active(text):
    with Memory(embeddings="off") as mem:
        entry = mem.capture(run="a", exit_code=1, action="make setup",
                            error_text=f"RuntimeError: setup failed; {text}")
        assert lesson(mem, entry.lesson_id).status == "active"


def test_a_quarantine_is_said_once_and_in_status(own_store):
    from conftest import run_cli

    said = []
    for _ in range(2):  # the same hostile error twice: one lesson, one word of it
        done = run_cli("capture", "--run", "a", "--exit-code", "1", "--error-file", "-",
                       stdin=f"RuntimeError: setup failed; {HOSTILE_LESSONS[0]}\n".encode())
        assert done.returncode == 0
        said.append(done.stderr.decode().count(" quarantined: it "))
    assert said == [1, 0]
    status = run_cli("status")
    assert "lessons quarantined: 1" in status.stdout.decode()
