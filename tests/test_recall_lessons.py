"""LESSONS FROM EARLIER RUNS: found by keywords, meaning and evidence, gated, provenanced."""

import sqlite3

import pytest
from conftest import NO_TABLE

from reflect import Memory
from reflect.render import LESSONS_HEADER, RECENT_HEADER
from reflect.store import DB_NAME

NO_YAML = "ModuleNotFoundError: No module named 'yaml'"
# Shares five rare terms with the no-such-table lesson: the keyword gate wants four.
DJANGO_GOAL = "Django admin: querying the auth_user table breaks until migrate has run"
FRONTEND_GOAL = "Fix the CSS layout of the React navbar dropdown on mobile screens"


@pytest.fixture
def mem():
    with Memory() as m:
        yield m


def lesson_items(rec):
    return [i for i in rec.items if i.section == "lesson"]


def test_a_lesson_from_an_earlier_run_is_recalled_with_provenance(mem):
    first = mem.capture(run="a", goal="reproduce a Django bug", action="python repro.py",
                        exit_code=1, error_text=NO_TABLE)
    rec = mem.recall(run="b", goal=DJANGO_GOAL)
    (item,) = lesson_items(rec)
    assert item.id == first.lesson_id and item.source_failure_ids == [first.failure_id]
    assert rec.text.startswith(LESSONS_HEADER)
    assert f"[{first.lesson_id}]" in rec.text and "migrate" in rec.text


def test_the_gate_keeps_the_section_empty_when_nothing_fits(mem):
    mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    mem.capture(run="a", exit_code=1, error_text=NO_YAML)
    assert mem.recall(run="b", goal=FRONTEND_GOAL).text == ""


def test_a_lesson_seen_in_several_runs_passes_on_evidence(mem):
    for run in ("a", "b", "c"):
        mem.capture(run=run, exit_code=127, error_text="bash: pytest: command not found")
    rec = mem.recall(run="d", goal=FRONTEND_GOAL)
    (item,) = lesson_items(rec)
    assert "seen in 3 runs" in item.text and "python -m pytest" in item.text
    assert len(item.source_failure_ids) == 3


def test_what_the_recent_section_shows_is_not_repeated(mem):
    mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    mem.capture(run="b", exit_code=1, error_text=NO_TABLE)
    rec = mem.recall(run="b", goal=DJANGO_GOAL)
    assert [i.section for i in rec.items] == ["recent"]
    assert rec.text.startswith(RECENT_HEADER) and LESSONS_HEADER not in rec.text


def test_a_runs_own_later_failures_are_not_earlier_lessons(mem):
    mem.capture(run="b", iteration=5, exit_code=1, error_text=NO_TABLE)
    assert mem.recall(run="b", goal=DJANGO_GOAL, iteration=2).text == ""


def test_recent_first_then_lessons_within_the_budget(mem):
    mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    mem.capture(run="b", exit_code=1, error_text=NO_YAML)
    rec = mem.recall(run="b", goal=DJANGO_GOAL)
    assert [i.section for i in rec.items] == ["recent", "lesson"]
    assert rec.text.index(RECENT_HEADER) < rec.text.index(LESSONS_HEADER)
    tight = mem.recall(run="b", goal=DJANGO_GOAL, max_tokens=rec.tokens - 10)
    assert [i.section for i in tight.items] == ["recent"] and tight.tokens <= rec.tokens - 10


def test_a_long_run_s_failures_leave_room_for_a_lesson(mem):
    """Eight failures of this run alone would fill the block; the lessons section keeps
    its share of the budget (LATER_SHARE) for the lesson from the earlier run."""
    earlier = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    for i in range(8):
        mem.capture(run="b", action=f"python check_{i}.py --verbose --all", exit_code=1,
                    error_text=f"KeyError: 'column_{'abcdefgh'[i]}' absent {'x' * 150}")
    recent_only = mem.recall(run="b", goal=DJANGO_GOAL, sections=("recent",))
    assert recent_only.tokens > 300 and len(recent_only.items) >= 3
    rec = mem.recall(run="b", goal=DJANGO_GOAL, max_tokens=400)
    sections = [i.section for i in rec.items]
    assert sections[-1] == "lesson" and rec.items[-1].id == earlier.lesson_id
    assert sections.count("recent") >= 2 and rec.tokens <= 400


def test_a_lesson_s_trigger_and_what_worked_are_cut_short_its_guidance_is_not(mem):
    first = mem.capture(run="a", action="python " + "very_long_script_name_" * 10 + ".py",
                        exit_code=1, error_text=NO_TABLE)
    mem.outcome(run="a", success=True, action="python manage.py migrate && " + "x" * 300)
    (item,) = lesson_items(mem.recall(run="b", goal=DJANGO_GOAL))
    trigger, guidance, worked = item.text.splitlines()
    assert len(trigger) < 150 and "…" in trigger
    assert worked.startswith("  What worked:") and len(worked) <= 120
    assert guidance.strip() == mem.lesson(first.lesson_id)["guidance"]


def test_quarantined_and_superseded_lessons_are_not_recalled(mem, own_store):
    entry = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    conn = sqlite3.connect(own_store / DB_NAME)
    conn.execute("UPDATE lessons SET status = 'quarantined' WHERE id = ?", (entry.lesson_id,))
    conn.commit()
    assert mem.recall(run="b", goal=DJANGO_GOAL).text == ""


def test_lessons_of_another_project_stay_there_and_global_ones_travel(mem, own_store):
    entry = mem.capture(run="a", exit_code=1, error_text=NO_TABLE)
    conn = sqlite3.connect(own_store / DB_NAME)
    conn.execute("UPDATE lessons SET scope = 'project:elsewhere' WHERE id = ?",
                 (entry.lesson_id,))
    conn.commit()
    assert mem.recall(run="b", goal=DJANGO_GOAL).text == ""
    conn.execute("UPDATE lessons SET scope = 'global'")
    conn.commit()
    assert lesson_items(mem.recall(run="b", goal=DJANGO_GOAL))


def test_project_scope_comes_from_the_repository(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@host:team/app.git\n')
    monkeypatch.chdir(repo)
    with Memory() as m:
        entry = m.capture(run="a", exit_code=1, error_text=NO_TABLE)
        scope = m.store.conn.execute(
            "SELECT scope FROM lessons WHERE id = ?", (entry.lesson_id,)).fetchone()[0]
    assert scope.startswith("project:")
    monkeypatch.chdir(tmp_path)
    with Memory() as m:
        assert m.scope == "global"


def test_embeddings_off_keeps_keyword_search(monkeypatch):
    monkeypatch.setenv("REFLECT_EMBEDDINGS", "off")
    with Memory() as m:
        m.capture(run="a", exit_code=1, error_text=NO_TABLE)
        assert lesson_items(m.recall(run="b", goal=DJANGO_GOAL))
        assert m.vectors.embedder() is None


def test_offline_is_recency_only(monkeypatch):
    monkeypatch.setenv("REFLECT_OFFLINE", "1")
    with Memory() as m:
        m.capture(run="a", exit_code=1, error_text=NO_TABLE)
        m.capture(run="b", exit_code=1, error_text=NO_YAML)
        assert [i.section for i in m.recall(run="b", goal=DJANGO_GOAL).items] == ["recent"]
        assert m.embeddings is None and m.vectors.embedder() is None


def test_a_broken_model_falls_back_to_hashing_with_one_warning(monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("REFLECT_EMBEDDINGS", str(tmp_path / "no-such-model"))
    with Memory() as m:
        m.capture(run="a", exit_code=1, error_text=NO_TABLE)
        m.recall(run="b", goal=DJANGO_GOAL)
        m.recall(run="c", goal=DJANGO_GOAL)
        assert m.vectors.embedder().name.startswith("hash")
    assert len([r for r in caplog.records if "no-such-model" in r.getMessage()]) == 1


def test_the_model_loads_once_and_only_when_there_is_something_to_search(monkeypatch):
    loads = []
    import reflect.embedding as embedding

    real = embedding.load_embedder
    monkeypatch.setattr(embedding, "load_embedder", lambda *a: loads.append(a) or real(*a))
    with Memory() as m:
        m.capture(run="a", exit_code=1, error_text=NO_TABLE)
        m.recall(run="a", goal=DJANGO_GOAL)  # only this run's lesson: nothing to search
        assert loads == []
        for run in ("b", "c", "d"):
            m.recall(run=run, goal=DJANGO_GOAL)
        assert len(loads) == 1
    with Memory(embeddings="off") as m:
        m.recall(run="e", goal=DJANGO_GOAL)
    assert len(loads) == 1


def test_cached_mode_never_embeds_and_queues_the_query(monkeypatch):
    import reflect.embedding as embedding

    monkeypatch.setattr(embedding, "load_embedder",
                        lambda *a: pytest.fail("a cached-mode recall loaded a model"))
    with Memory(semantic="cached") as m:
        m.capture(run="a", exit_code=1, error_text=NO_TABLE)
        assert lesson_items(m.recall(run="b", goal=DJANGO_GOAL))  # keywords still work
        queued = m.store.conn.execute(
            "SELECT COUNT(*) FROM query_vectors WHERE vector IS NULL").fetchone()[0]
        assert queued >= 2  # the goal, and the error line queued at capture
        assert m.store.job_counts() == {"queued": 1}


def test_the_index_is_kept_current_in_memory_and_written_on_close(monkeypatch, own_store):
    import reflect.embedding as embedding

    loads = []
    real = embedding.VectorIndex.load
    monkeypatch.setattr(embedding.VectorIndex, "load",
                        classmethod(lambda cls, *a: loads.append(a) or real(*a)))
    with Memory() as m:
        m.capture(run="a", exit_code=1, error_text=NO_TABLE)
        m.recall(run="b", goal=DJANGO_GOAL)
        assert len(loads) == 1  # the first search opens (here: builds) the index
        m.capture(run="c", exit_code=1, error_text=NO_YAML)
        found = m.recall(run="d", goal="install the missing yaml module package")
        assert len(loads) == 1  # the new lesson's vector was added in memory
        assert len(m.vectors.index()) == 2 and lesson_items(found)
    (path,) = own_store.glob("vectors-*.idx")
    with Memory() as m:  # a cold process maps the file written on close
        assert len(m.vectors.index()) == 2 and len(loads) == 2
