"""While the store cannot be opened, capture keeps failures aside, recall's recent
section answers from them, and the next capture once the store is back takes them in."""

from fake_store import FakeStore

from reflect import Memory, Settings
from reflect.store import DB_NAME, StoreUnavailable
from reflect.store.base import redacted


def test_recall_answers_from_kept_captures_until_the_store_returns(own_store, caplog):
    own_store.mkdir(parents=True)
    blocker = own_store / DB_NAME
    blocker.mkdir()  # a directory where the database file should be: it cannot be opened
    with Memory(run="r") as mem:
        mem.capture(iteration=1, action="python app.py", exit_code=1,
                    error_text="ModuleNotFoundError: No module named 'yaml'")
        mem.capture(iteration=2, action="pytest", exit_code=1,
                    error_text="FileNotFoundError: [Errno 2] No such file: 'conf.ini'")
        rec = mem.recall(iteration=3)
        other = mem.recall(run="another run", iteration=3)
    assert [i.section for i in rec.items] == ["recent", "recent"]
    assert "conf.ini" in rec.items[0].text and "yaml" in rec.items[1].text  # newest first
    assert other.text == ""  # only this run's failures
    # said once, by the captures: the recalls of the same step add no line
    assert [r.getMessage().split(";")[1] for r in caplog.records] == [
        " failure kept in " + str(own_store / "pending.jsonl")] * 2
    caplog.clear()
    with Memory(run="r") as mem:  # a step of its own says where its block came from
        assert mem.recall(iteration=3).text == rec.text
    assert "recalled only the failures kept aside" in caplog.text

    blocker.rmdir()  # the store is back: the next capture replays what was kept
    with Memory(run="r") as mem:
        mem.capture(iteration=3, action="pytest", exit_code=1, error_text="ValueError: x")
        assert [f.iteration for f in mem.failures(run="r")] == [3, 2, 1]
        assert [i.fingerprint for i in mem.recall(iteration=4).items][1:] == [
            i.fingerprint for i in rec.items]
    assert not list(own_store.glob("pending*"))


def test_an_empty_store_url_keeps_the_sqlite_file_whatever_reflect_store_says(
        own_store, monkeypatch):
    # A replay or an A/B arm learns in a store of its own, never in the team's database.
    monkeypatch.setenv("REFLECT_STORE", "postgresql://nobody@127.0.0.1:9/none")
    with Memory(run="r", store_url="") as mem:
        mem.capture(iteration=1, exit_code=1, error_text="ValueError: local")
        assert [f.message for f in mem.failures()] == ["local"]
    assert (own_store / DB_NAME).exists() and not list(own_store.glob("pending*"))


def test_a_store_that_fails_a_write_keeps_the_capture_aside_until_it_takes_writes(own_store):
    broken = FakeStore(faults={"add_failure": StoreUnavailable("disk I/O error")})
    with Memory(run="r", settings=Settings(open_store=broken.open)) as mem:
        mem.capture(iteration=1, action="python app.py", exit_code=1,
                    error_text="ModuleNotFoundError: No module named 'yaml'")
        assert "yaml" in mem.recall(iteration=2).text  # answered from what was kept aside
        assert mem.failures(run="r") == []
    assert len(broken.answers("add_failure")) == 1 and list(own_store.glob("pending*"))
    with Memory(run="r") as mem:  # the store takes writes again
        mem.capture(iteration=2, action="pytest", exit_code=1, error_text="ValueError: x")
        assert [f.iteration for f in mem.failures(run="r")] == [2, 1]
    assert not list(own_store.glob("pending*"))


def test_a_capture_kept_while_the_store_was_away_keeps_the_projects_scope(own_store, tmp_path,
                                                                          monkeypatch):
    project = tmp_path / "widget"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/widget.git\n', encoding="utf-8")
    monkeypatch.chdir(project)
    own_store.mkdir(parents=True)
    (own_store / DB_NAME).mkdir()  # the store cannot be opened
    with Memory(run="r") as mem:
        mem.capture(iteration=1, exit_code=1, error_text="ModuleNotFoundError: No module named 'x'")
    (own_store / DB_NAME).rmdir()
    with Memory(run="r") as mem:
        mem.capture(iteration=2, exit_code=1, error_text="ValueError: replays the first")
        scopes = {lesson.scope for lesson in mem.lessons(limit=10)}
    assert scopes == {mem.scope} and mem.scope != "global"


def test_a_url_shown_to_a_person_has_no_password_and_no_options():
    url = "postgresql://team:s3cret@db.example:6543/reflect?options=-csearch_path%3Dx"
    assert redacted(url) == "postgresql://team@db.example:6543/reflect"
