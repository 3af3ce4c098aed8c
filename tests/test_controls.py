"""Lessons that earn their place: injections, credit, escalation, upkeep, a person's controls."""

import json
import sqlite3

import pytest
from conftest import run_cli
from fake_store import FakeStore

from reflect import Memory, Settings
from reflect.api.controls import FEEDBACK_WEIGHT, PinnedLesson, UnknownLesson
from reflect.api.memory import port
from reflect.base.confidence import PRIOR_WEIGHT, confidence
from reflect.base.supersession import may_supersede, merges
from reflect.store import DB_NAME

DAY = 86400.0
NO_YAML = "ModuleNotFoundError: No module named 'yaml'"
NO_TABLE = "django.db.utils.OperationalError: no such table: auth_user"


class Clock:
    def __init__(self, now=1_700_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def mem(clock):
    with Memory(settings=Settings(clock=clock)) as m:
        yield m


def lesson(mem, lesson_id):
    return mem.lesson(lesson_id)


def test_every_recall_is_logged_with_rank_and_score(mem):
    a = mem.capture(run="r", iteration=1, exit_code=1, error_text=NO_YAML)
    b = mem.capture(run="r", iteration=2, exit_code=1, error_text=NO_TABLE)
    rec = mem.recall(run="r", iteration=3)
    rows = mem.injections(run="r")
    assert [(r.iteration, r.rank, r.lesson_id) for r in reversed(rows)] == [
        (3, 1, b.lesson_id), (3, 2, a.lesson_id)]
    assert {r.tokens for r in rows} == {rec.tokens}
    assert lesson(mem, a.lesson_id).injected == 1


def test_credit_by_outcome(mem):
    yaml = mem.capture(run="r", iteration=1, exit_code=1, error_text=NO_YAML)
    table = mem.capture(run="r", iteration=2, exit_code=1, error_text=NO_TABLE)
    mem.recall(run="r", iteration=3)
    mem.capture(run="r", iteration=3, exit_code=1, error_text=NO_YAML)  # yaml's hint failed
    assert lesson(mem, yaml.lesson_id).losses == 1
    assert lesson(mem, table.lesson_id).wins == 1  # no such table did not recur
    mem.recall(run="r", iteration=4)
    mem.outcome(run="r", iteration=4, success=True, action="pip install pyyaml")
    assert lesson(mem, yaml.lesson_id).wins == pytest.approx(0.5)  # shared by two
    outcomes = [r.outcome for r in mem.injections(run="r")]
    assert sorted(outcomes) == ["loss", "shared", "shared", "win"]


def test_confidence_follows_outcomes_and_ranks_lessons(mem):
    for run in ("a", "b"):
        mem.capture(run=run, exit_code=1,
                    error_text=f"RuntimeError: widget renderer crashed drawing chart {run}")
    good, bad = (mem.lessons()[i].id for i in (0, 1))
    port(mem).store.add_outcomes(good, 5, 0, mem.clock())
    port(mem).store.add_outcomes(bad, 0, 5, mem.clock())
    assert lesson(mem, good).confidence == pytest.approx((5 + 1.0) / 7)
    assert lesson(mem, bad).confidence == pytest.approx(1.0 / 7)
    # Five losses mark the weaker lesson as one a person should rewrite.
    assert [r.id for r in mem.lessons(ineffective=True)] == [bad]


def test_a_lesson_that_keeps_failing_is_escalated(mem, monkeypatch):
    monkeypatch.setenv("REFLECT_ESCALATE_AFTER", "2")
    first = mem.capture(run="r", iteration=1, exit_code=1, error_text=NO_YAML)
    mem.capture(run="r", iteration=2, exit_code=1, error_text=NO_TABLE)
    for i in (3, 4):
        mem.recall(run="r", iteration=i)
        mem.capture(run="r", iteration=i, exit_code=1, error_text=NO_YAML)
    mem.capture(run="r", iteration=5, exit_code=1, error_text=NO_TABLE)  # newest is the table
    rec = mem.recall(run="r", iteration=6)
    assert rec.items[0].id == first.lesson_id  # first although not the newest
    assert "REPEATED FAILURE" in rec.items[0].text
    assert [r.id for r in mem.lessons(ineffective=True)] == [first.lesson_id]


def test_confidence_decays_and_upkeep_removes_weak_lessons(mem, clock):
    weak = mem.capture(run="a", exit_code=1, error_text=NO_YAML)
    pinned = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    mem.pin(pinned.lesson_id)
    taught = mem.teach("when running the tests: use `python -m pytest -x`")
    clock.now += 365 * DAY  # a year unused: 0.5 halves four times
    report = mem.consolidate()
    assert report.removed_lessons == [weak.lesson_id]
    assert report.deleted_failures == 2  # older than the retention period
    ids = {r.id for r in mem.lessons()}
    assert pinned.lesson_id in ids and taught in ids and weak.lesson_id not in ids
    removals = port(mem).store._rows("SELECT lesson_id, reason FROM removals")
    assert [tuple(r) for r in removals] == [(weak.lesson_id, "low confidence")]
    queued = port(mem).store._value("SELECT COUNT(*) FROM query_vectors")
    assert queued == 0  # the error lines queued for embedding went with their failures


def test_pin_quarantine_release_feedback(mem):
    entry = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    mem.quarantine(entry.lesson_id, "wrong advice for this repo")
    detail = lesson(mem, entry.lesson_id)
    assert (detail.status, detail.quarantine) == ("quarantined", "wrong advice for this repo")
    assert mem.recall(run="b", goal="django auth_user table migrate").text == ""
    mem.release(entry.lesson_id)
    assert lesson(mem, entry.lesson_id).status == "active"
    before = lesson(mem, entry.lesson_id).confidence
    assert mem.feedback(entry.lesson_id, good=True).confidence > before
    assert mem.feedback(entry.lesson_id, good=False).confidence < 0.9


def test_quarantining_a_model_lesson_brings_back_the_one_it_replaced(mem):
    entry = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    model = port(mem).store.add_model_lesson(entry.fingerprint, model_lesson(
        "a script queries auth_user", "Run python manage.py migrate first."), mem.clock())
    assert lesson(mem, entry.lesson_id).superseded_by == model
    mem.quarantine(model, "bad")
    assert lesson(mem, entry.lesson_id).status == "active"


def test_teach_supersedes_an_earlier_teaching_once_it_is_unpinned(mem):
    old = mem.teach("when running the tests: use pytest")
    taught = lesson(mem, old)
    assert (taught.kind, taught.pinned, taught.confidence) == ("taught", 1, 0.9)
    with pytest.raises(PinnedLesson, match=f"reflect lessons unpin {old}"):
        mem.teach("When running the tests: use `python -m pytest -x -q`")
    assert [r.id for r in mem.lessons()] == [old]  # nothing stored
    mem.pin(old, pinned=False)
    new = mem.teach("When running the tests: use `python -m pytest -x -q`")
    assert (lesson(mem, old).status, lesson(mem, old).superseded_by) == ("superseded", new)
    with pytest.raises(ValueError, match="when <trigger>: <guidance>"):
        mem.teach("always use pytest")


def test_forget_removes_the_lesson(mem):
    entry = mem.capture(run="a", exit_code=1,
                        error_text="RuntimeError: unforgettable-marker-phrase in the pipeline")
    assert mem.search_lessons("unforgettable-marker-phrase")
    mem.forget(entry.lesson_id)
    assert mem.search_lessons("unforgettable-marker-phrase") == []
    with pytest.raises(UnknownLesson, match="reflect lessons list"):
        mem.lesson(entry.lesson_id)
    assert mem.failure(entry.failure_id) is not None  # the failure is history: it stays


@pytest.mark.sqlite_only
def test_forget_removes_the_text_everywhere_in_the_file(mem, own_store):
    secretish = "unforgettable-marker-phrase"
    entry = mem.capture(run="a", exit_code=1,
                        error_text=f"RuntimeError: {secretish} in the pipeline")
    mem.recall(run="b", goal=f"fix the {secretish} pipeline")  # vectors, index file, query
    mem.forget(entry.lesson_id)
    conn = port(mem).store.conn
    assert conn.execute("SELECT COUNT(*) FROM lesson_vectors WHERE lesson_id = ?",
                        (entry.lesson_id,)).fetchone()[0] == 0
    assert not list(own_store.glob("vectors-*.idx"))
    wal = own_store / f"{DB_NAME}-wal"
    assert not wal.exists() or wal.stat().st_size == 0
    # The failure itself is history, not a lesson: it stays, with its own text; the error
    # line its lesson was made of, queued for a vector, goes.
    lessons_dump = "\n".join(sqlite3.connect(own_store / DB_NAME).iterdump())
    assert f"{secretish} in the pipeline" in lessons_dump  # in the failures table
    assert f"RuntimeError: {secretish}" not in lessons_dump
    assert "lessons_fts" in lessons_dump
    fts_rows = conn.execute("SELECT COUNT(*) FROM lessons_fts WHERE lessons_fts MATCH ?",
                            (f'"{secretish}"',)).fetchone()[0]
    assert fts_rows == 0


def test_cli_lessons_commands_and_unknown_ids():
    run_cli("capture", "--run", "a", "--exit-code", "1", "--error-file", "-",
            stdin=NO_TABLE.encode())
    listed = json.loads(run_cli("lessons", "list", "--format", "json").stdout)["lessons"]
    lesson_id = listed[0]["id"]
    assert run_cli("lessons", "pin", lesson_id).returncode == 0
    shown = run_cli("lessons", "show", lesson_id).stdout.decode()
    assert "pinned: 1" in shown and "auth_user" in shown
    # every control says in one line what it did
    for args, said in ((["unpin"], "unpinned"), (["quarantine", "--why", "wrong fix"],
                                                 "quarantined"),
                       (["release"], "released"), (["pin"], "pinned"),
                       (["forget"], "forgotten")):
        out = run_cli("lessons", args[0], lesson_id, *args[1:])
        assert out.returncode == 0 and out.stdout.decode().startswith(f"{lesson_id} {said}:")
        assert out.stdout.count(b"\n") == 1
    for args in (["lessons", "show", "L-nope"], ["lessons", "forget", "L-nope"],
                 ["lessons", "quarantine", "L-nope", "--why", "x"]):
        out = run_cli(*args)
        assert out.returncode == 1 and b"reflect lessons list" in out.stderr
    taught = run_cli("teach", "when running django scripts: call django.setup() first")
    assert taught.returncode == 0 and taught.stdout.startswith(b"L-")
    assert run_cli("teach", "no colon here").returncode == 1
    assert b"REPEATED" not in run_cli("recall", "--run", "b").stdout
    assert run_cli("injections").returncode == 0


def test_shared_credit_is_listed_to_a_tenth(mem):
    """Credit shared among a block's lessons is fractional: listed as 1.8, not 1.83333."""
    lesson_id = mem.capture(run="a", iteration=1, exit_code=1, error_text=NO_TABLE).lesson_id
    port(mem).store.add_outcomes(lesson_id, 11 / 6, 0, 1.0)
    mem.close()
    listed = run_cli("lessons", "list").stdout.decode()
    assert f"{lesson_id}  " in listed and " won 1.8 lost 0 " in listed
    assert "wins: 1.8\n" in run_cli("lessons", "show", lesson_id).stdout.decode()


def test_cli_export_and_import_round_trip(tmp_path):
    run_cli("capture", "--run", "a", "--exit-code", "1", "--error-file", "-",
            stdin=NO_TABLE.encode())
    run_cli("teach", "when running django scripts: call django.setup() first")
    out = run_cli("export", "--format", "markdown")
    assert out.returncode == 0 and b"django.setup()" in out.stdout
    jsonl = tmp_path / "lessons.jsonl"
    assert run_cli("export", "--format", "jsonl", "-o", str(jsonl)).returncode == 0
    unwritable = tmp_path / "file" / "x.md"
    (tmp_path / "file").write_text("")
    failed = run_cli("export", "-o", str(unwritable))
    assert failed.returncode == 1 and b"reflect: error:" in failed.stderr
    jsonl.write_text(jsonl.read_text() + "{not json\n")
    other = {"REFLECT_HOME": str(tmp_path / "other"), "REFLECT_STORE": ""}  # a file
    lines = len(jsonl.read_text().splitlines())
    out = run_cli("import", str(jsonl), env=other)
    assert out.returncode == 1  # a bad line: reported with its number, the rest imported
    assert f"lessons.jsonl:{lines}: ".encode() in out.stderr
    assert f"imported {lines - 1}, merged 0".encode() in out.stdout
    progress = run_cli("progress", env=other)
    assert progress.returncode == 0 and b"at least 5 runs are needed" in progress.stdout


def model_lesson(trigger, guidance):
    return {"trigger": trigger, "guidance": guidance, "category": "environment", "kind": "fix",
            "confidence": 0.8, "quarantine": "", "model": "m", "prompt_tokens": 1,
            "completion_tokens": 1, "cost_usd": None}


def test_a_newer_lesson_with_the_same_trigger_that_says_otherwise_supersedes(mem):
    a = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    b = mem.capture(run="a", exit_code=1, error_text=NO_YAML)
    trigger = "a standalone script touches the database"
    add = port(mem).store.add_model_lesson
    old = add(a.fingerprint, model_lesson(trigger, "Create the tables with migrate first."), 1.0)
    same = add(b.fingerprint, model_lesson(
        trigger, "Create the tables with migrate first, then run it."), 2.0)
    new = add(b.fingerprint, model_lesson(
        trigger, "Use an in-memory SQLite settings module instead."), 3.0)
    assert lesson(mem, same).status == "superseded"  # its own fingerprint's newer lesson
    assert lesson(mem, old).status == "superseded"  # same trigger, contradicting advice
    assert lesson(mem, old).superseded_by == new
    assert lesson(mem, a.lesson_id).status == "superseded"  # history kept


def test_the_worker_consolidates_once_a_day(clock):
    fake = FakeStore()  # the workers open the store through it too
    with Memory(settings=Settings(clock=clock, open_store=fake.open)) as m:
        m.capture(run="a", exit_code=1, error_text=NO_YAML)  # an embed job to run
        for _ in range(3):
            m.run_worker(idle_exit=0)
        clock.now += DAY + 1
        m.run_worker(idle_exit=0)
    assert fake.opened == 5  # the memory's store, and each worker's
    assert len(fake.answers("aging_lessons")) == 2  # a consolidation's first question


def test_without_credit_the_log_is_kept_and_lessons_are_not_judged(clock):
    with Memory(settings=Settings(clock=clock, credit=False)) as m:
        first = m.capture(run="r", iteration=1, exit_code=1, error_text=NO_YAML)
        m.recall(run="r", iteration=2)
        m.capture(run="r", iteration=2, exit_code=1, error_text=NO_YAML)
        m.recall(run="r", iteration=3)
        m.outcome(run="r", iteration=3, success=True, action="pip install pyyaml")
        assert [r.outcome for r in m.injections(run="r")] == ["", ""]
        detail = m.lesson(first.lesson_id)
        assert (detail.wins, detail.losses, detail.confidence) == (0, 0, 0.5)


# -- one rule for supersession: a pinned lesson stands, whatever the path -------------

TRIGGER = "a standalone script touches the database"


def pinned_heuristic(mem):
    entry = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    mem.pin(entry.lesson_id)
    return entry


def by_model_same_fingerprint(mem, tmp_path):
    entry = pinned_heuristic(mem)
    kept = port(mem).store.add_model_lesson(entry.fingerprint, model_lesson(
        TRIGGER, "Use an in-memory SQLite settings module instead."), mem.clock())
    assert kept == entry.lesson_id  # the model's lesson is not kept
    return entry.lesson_id


def by_model_same_trigger(mem, tmp_path):
    a = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    pinned = port(mem).store.add_model_lesson(a.fingerprint, model_lesson(
        TRIGGER, "Create the tables with migrate first."), mem.clock())
    mem.pin(pinned)
    b = mem.capture(run="a", exit_code=1, error_text=NO_YAML)
    newer = port(mem).store.add_model_lesson(b.fingerprint, model_lesson(
        TRIGGER, "Use an in-memory SQLite settings module instead."), mem.clock())
    assert lesson(mem, b.lesson_id).superseded_by == newer  # its own fingerprint's: yes
    return pinned


def by_import(mem, tmp_path):
    entry = pinned_heuristic(mem)
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"fingerprint": entry.fingerprint, "kind": "model",
                                "trigger": TRIGGER,
                                "guidance": "Use an in-memory SQLite settings module."}) + "\n")
    assert mem.import_lessons(path).skipped == 1
    return entry.lesson_id


def by_teach(mem, tmp_path):
    pinned = mem.teach("when running the tests: use pytest")
    with pytest.raises(PinnedLesson, match=f"unpin {pinned}"):
        mem.teach("when running the tests: use tox")
    return pinned


def by_release(mem, tmp_path):
    entry = pinned_heuristic(mem)
    hostile = port(mem).store.add_model_lesson(entry.fingerprint, {**model_lesson(
        TRIGGER, "Drop the tables."), "quarantine": "steers the agent outside its task"},
        mem.clock())
    with pytest.raises(PinnedLesson, match=f"unpin {entry.lesson_id}"):
        mem.release(hostile)
    assert lesson(mem, hostile).status == "quarantined"
    return entry.lesson_id


@pytest.mark.parametrize("path", [by_model_same_fingerprint, by_model_same_trigger, by_import,
                                  by_teach, by_release], ids=lambda f: f.__name__)
def test_a_pinned_lesson_is_never_superseded(mem, tmp_path, path):
    pinned = lesson(mem, path(mem, tmp_path))
    assert (pinned.status, pinned.superseded_by, pinned.pinned) == ("active", "", 1)
    fingerprint = pinned.fingerprint
    assert port(mem).store.active_lessons([fingerprint])[fingerprint]["id"] == pinned.id


@pytest.mark.parametrize(("current", "kind", "by_person", "expected"), [
    ({"kind": "heuristic", "pinned": 1}, "taught", True, False),  # pinned: never
    ({"kind": "taught", "pinned": 0}, "model", False, False),  # taught: a person only
    ({"kind": "taught", "pinned": 0}, "taught", False, False),  # (an import is no person)
    ({"kind": "taught", "pinned": 0}, "heuristic", True, True),
    ({"kind": "model", "pinned": 0}, "heuristic", False, False),  # never by a lesser kind
    ({"kind": "model", "pinned": 0}, "model", False, True),
    ({"kind": "heuristic", "pinned": 0}, "model", False, True),
])
def test_who_may_supersede_whom(current, kind, by_person, expected):
    assert may_supersede(current, kind, by_person) is expected


def test_a_lesson_merges_into_one_that_says_the_same_and_is_of_no_lesser_kind():
    model = {"kind": "model", "guidance": "Run python manage.py migrate first."}
    assert merges(model, "model", "Run python manage.py migrate first, please.")
    assert merges(model, "heuristic", "Run python manage.py migrate first.")
    assert not merges(model, "taught", "Run python manage.py migrate first.")
    assert not merges(model, "model", "Use an in-memory SQLite settings module instead.")


# -- one formula for confidence, whoever judges ------------------------------------------

def test_outcomes_and_a_persons_verdict_move_confidence_by_one_formula(mem):
    assert (PRIOR_WEIGHT, FEEDBACK_WEIGHT) == (2.0, 2)  # the numbers below are worked with
    yaml = mem.capture(run="r", iteration=1, exit_code=1, error_text=NO_YAML)
    table = mem.capture(run="r", iteration=2, exit_code=1, error_text=NO_TABLE)
    mem.recall(run="r", iteration=3)
    mem.capture(run="r", iteration=3, exit_code=1, error_text=NO_YAML)  # yaml's lesson lost
    # Prior 0.5 counted as two outcomes: (wins + 2 * 0.5) / (wins + losses + 2).
    assert lesson(mem, yaml.lesson_id).confidence == pytest.approx(1 / 3)  # 0 won, 1 lost
    assert lesson(mem, table.lesson_id).confidence == pytest.approx(2 / 3)  # 1 won
    # A person's verdict counts as two outcomes, judged the same way.
    assert mem.feedback(yaml.lesson_id, good=True).confidence == pytest.approx(3 / 5)
    assert mem.feedback(table.lesson_id, good=False).confidence == pytest.approx(2 / 5)
    judged = lesson(mem, table.lesson_id)
    assert (judged.wins, judged.losses) == (1, 2)
    assert judged.confidence == pytest.approx(confidence(1, 2, 0.5))
