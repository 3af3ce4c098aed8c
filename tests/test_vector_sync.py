"""The run-goal index is local: a process brings its file up to date by reading only the
runs whose goal vector changed since the file was saved, and rebuilds it after a removal."""

from fake_store import FakeStore

from reflect import Memory, Settings
from reflect.api.memory import port
from reflect.reflection.embedding import Vectors


def capture_runs(mem, names):
    for name in names:
        mem.capture(run=name, goal=f"fix the {name} parser for dates", exit_code=1,
                    error_text=f"ValueError: bad {name}")
    port(mem).vectors.embed_pending()


def spied() -> tuple[Memory, FakeStore]:
    """A memory on the test's store, through a fake that keeps what each call returned."""
    fake = FakeStore()
    return Memory(embeddings="hash", settings=Settings(open_store=fake.open)), fake


def read(fake: FakeStore) -> list[int]:
    """The vectors each sync read from the store, since the calls were last cleared."""
    return [len(rows) for rows in fake.answers("run_goal_vectors")]


def test_a_sync_reads_only_the_changed_runs(own_store):
    mem, fake = spied()
    with mem:
        capture_runs(mem, [f"run{i}" for i in range(30)])
        fake.calls.clear()
        assert len(port(mem).vectors.index()) == 30 and read(fake) == [30]  # built once, from all
        vectors = port(mem).vectors
        assert vectors.index() is vectors.index() and read(fake) == [30]  # unchanged

        capture_runs(mem, ["run30", "run31"])
        assert len(port(mem).vectors.index()) == 32 and read(fake) == [30, 2]

        # Another process opens the saved file and reads only what it lacks.
        capture_runs(mem, ["run32"])
        other = Vectors(port(mem).store, "hash")
        assert len(other.index()) == 33 and read(fake) == [30, 2, 1]
        assert other.index().ids[-1] == "run32"


def test_a_removal_rebuilds_the_index_without_the_removed_run(own_store):
    mem, fake = spied()
    with mem:
        capture_runs(mem, ["a", "b", "c"])
        fake.calls.clear()
        assert sorted(port(mem).vectors.index().ids) == ["a", "b", "c"]
        mem.clear(run="b")
        assert sorted(port(mem).vectors.index().ids) == ["a", "c"] and read(fake) == [3, 2]


def test_clearing_a_run_takes_its_error_and_goal_texts_out_of_the_vector_table(own_store):
    from conftest import store_dump

    with Memory(embeddings="hash") as mem:
        mem.capture(run="a", goal="ship the quarterly-ledger export", exit_code=1,
                    error_text="ValueError: ledger-row-77 is malformed")
        mem.capture(run="b", goal="another goal", exit_code=1,
                    error_text="ValueError: kept-row-12 is malformed")
        assert "ledger-row-77" in store_dump(own_store)
        mem.clear(run="a")
    dump = store_dump(own_store)
    assert "ledger-row-77" not in dump and "quarterly-ledger" not in dump
    assert "kept-row-12" in dump  # another run's texts stay


def test_forgetting_a_lesson_takes_its_failures_error_and_goal_texts_out_of_the_vector_table(
        own_store):
    def queued(mem) -> str:
        return "\n".join(r[0] for r in port(mem).store._rows("SELECT text FROM query_vectors"))

    with Memory(embeddings="hash") as mem:
        forgotten = mem.capture(run="a", goal="ship the quarterly-ledger export", exit_code=1,
                                error_text="ValueError: ledger-row-77 is malformed")
        mem.capture(run="c", goal="a goal two lessons share", exit_code=1,
                    error_text="ValueError: ledger-row-77 is malformed")
        mem.capture(run="c", goal="a goal two lessons share", exit_code=1,
                    error_text="KeyError: 'kept-key-12'")
        assert "ledger-row-77" in queued(mem) and "quarterly-ledger" in queued(mem)
        mem.forget(forgotten.lesson_id)
        left = queued(mem)
        assert mem.failure(forgotten.failure_id) is not None  # the failure is history
    assert "ledger-row-77" not in left and "quarterly-ledger" not in left
    assert "kept-key-12" in left and "a goal two lessons share" in left  # another lesson's
