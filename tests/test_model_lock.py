"""One embedding model loaded by a user's workers at a time: the lock in the user's runtime
directory (``reflect/reflection/model_lock.py``), taken by real processes, and two workers of two
stores with the real bundled model, the second waiting for the first to let go."""

import subprocess
import sys
import threading
import time

import pytest
from test_embedders import needs_bundled
from test_worker import wait_for

from reflect import Memory
from reflect.reflection.model_lock import ModelLock, lock_path
from reflect.reflection.worker import MODEL_RETRY, Worker

HOLD = """import sys, time
from pathlib import Path
from reflect.reflection.model_lock import ModelLock
lock = ModelLock(Path(sys.argv[1]))
print(lock.acquire(), flush=True)
time.sleep(600)
"""


def test_the_lock_is_the_user_s_runtime_directory_else_the_cache():
    assert lock_path({"XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/a"}) == \
        lock_path({"XDG_RUNTIME_DIR": "/run/user/1000"})
    assert str(lock_path({"XDG_RUNTIME_DIR": "/run/user/1000"})).startswith(
        "/run/user/1000/reflect/")
    assert str(lock_path({"HOME": "/home/a"})).startswith("/home/a/.cache/reflect/")
    assert str(lock_path({"XDG_CACHE_HOME": "/c", "HOME": "/home/a"})).startswith("/c/reflect/")


def test_one_holder_at_a_time_and_a_dead_holder_lets_go(tmp_path):
    path = tmp_path / "run" / "reflect" / "model.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        here = ModelLock(path)
        assert not here.acquire() and not here.held
        holder.kill()  # however it ends, the kernel lets go of its lock
        holder.wait(30)
        assert here.acquire() and here.held
        assert ModelLock(path).acquire() is False  # a second lock, even in this process
        here.release()
        assert ModelLock(path).acquire()
    finally:
        holder.kill()
        holder.wait(30)
    assert oct(path.parent.stat().st_mode & 0o777) == "0o700"


def test_a_folder_others_may_write_is_not_used(tmp_path, caplog):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    lock = ModelLock(shared / "model.lock")
    assert lock.acquire() and not lock.held  # the model loads; no lock a stranger could hold
    assert "not private" in caplog.text
    assert not (shared / "model.lock").exists()


def waiting_jobs(worker: Worker) -> list[tuple]:
    return [tuple(r) for r in worker.store._rows(
        "SELECT kind, state, attempts, due FROM jobs", ())]


@needs_bundled
@pytest.mark.sqlite_only
def test_a_second_store_s_worker_waits_for_the_first_to_let_go_of_the_model(tmp_path):
    lock = tmp_path / "run" / "reflect" / "model.lock"
    homes = [tmp_path / "one", tmp_path / "two"]
    for home in homes:
        with Memory(home, run="r", embeddings="") as mem:
            mem.capture(goal="Make the weekly report", action="python report.py",
                        exit_code=1, error_text="ModuleNotFoundError: No module named 'yaml'")
    now = [time.time()]
    first, second = (Worker(home, "", None, "", clock=lambda: now[0], model_lock=lock)
                     for home in homes)
    closed: list[Worker] = []

    def close(worker: Worker) -> None:
        if worker not in closed:
            worker.close()
            closed.append(worker)

    try:
        assert first.run_once() == 1 and first.vectors.loaded
        # The second finds the model loaded by the first: it loads none, and its job waits
        # untouched (no attempt used), to be tried again.
        assert second.run_once() == 0
        assert not second.vectors.loaded and second.vectors.waiting
        [(kind, state, attempts, due)] = waiting_jobs(second)
        assert (kind, state, attempts) == ("embed", "queued", 0)
        assert due == pytest.approx(now[0] + MODEL_RETRY)
        close(first)  # idle: it exits, and the model with it
        now[0] += MODEL_RETRY
        assert second.run_once() == 1 and second.vectors.loaded
        assert [j[:2] for j in waiting_jobs(second)] == [("embed", "done")]
    finally:
        close(first)
        close(second)
    with Memory(homes[1], embeddings="") as mem:
        assert mem.status().embeddings == "all-MiniLM-L6-v2"


@needs_bundled
@pytest.mark.sqlite_only
def test_a_worker_that_keeps_running_lets_go_of_the_model_once_idle(tmp_path):
    """`reflect worker` with no idle exit, in one project: another project's worker gets
    the model once this one has had nothing to do for ``model_keep`` seconds."""
    lock = tmp_path / "run" / "reflect" / "model.lock"
    home = tmp_path / "one"
    with Memory(home, run="r", embeddings="") as mem:
        mem.capture(goal="Make the weekly report", action="python report.py", exit_code=1,
                    error_text="ModuleNotFoundError: No module named 'yaml'")
    worker = Worker(home, "", None, "", model_lock=lock, model_keep=0.5)
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,))
    thread.start()
    try:
        wait_for(lambda: worker.vectors.loaded, 120, "the model to load")
        other = ModelLock(lock)
        wait_for(other.acquire, 60, "the idle worker to let go of the model")
        assert not worker.vectors.loaded
        other.release()
        with Memory(home, embeddings="") as mem:
            assert mem.status().jobs == {"done": 1}
    finally:
        stop.set()
        thread.join(30)
        worker.close()
