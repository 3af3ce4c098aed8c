"""The resident helper of the hooks (``reflect.cli.resident``): a real helper
process answers as the cold process would, on a private socket, and a helper that is
stale, hung or dies mid-request costs the hook its speed, never its capture."""

import importlib.util
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import reflect_argv, run_cli, run_hook, start_hook, started, tool_use_id

from reflect import Memory
from reflect.cli import client, resident

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
SESSION = "9f2c1e7a-4b1d-4c61-a2f0-3e5b8d7c6a10"
HELPER_ON = {"REFLECT_HELPER": "on"}
COVERAGE = ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")
# What of reflect a process answered by the helper loads: the entry point, the client, and
# the small modules it reads the store's place, its time budget and its stdin with.
THIN_CLIENT = {"reflect", "reflect.cli", "reflect.cli.launch",
               "reflect.cli.client", "reflect.base", "reflect.base.home",
               "reflect.integrations", "reflect.integrations.budget", "reflect.capture",
               "reflect.capture.reading"}


def failed_event() -> bytes:
    data = json.loads((FIXTURES / "PostToolUseFailure.json").read_text())
    return json.dumps({**data, "cwd": str(Path.cwd()), "tool_use_id": tool_use_id()}).encode()


def hook(env: dict | None = None, importtime: bool = False,
         watch: bool = False) -> subprocess.CompletedProcess:
    """The failed event answered by a hook process, the helper on unless ``env`` says."""
    return run_hook(failed_event(), env={**HELPER_ON, **(env or {})}, watch=watch,
                    python=["-X", "importtime"] if importtime else [],
                    # what a user's hook imports: not the coverage of the suite (sqlite3)
                    unset=COVERAGE if importtime else ())


def block(done: subprocess.CompletedProcess) -> str:
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def stored(home: Path) -> int:
    with Memory(home) as mem:
        return len(mem.failures(run=SESSION))


def imported(done: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.decode().splitlines()
            if line.startswith("import time:") and "|" in line}


def wait_for(condition, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


@pytest.fixture
def helper(own_store):
    """A real helper on the test's store, stopped at the end."""
    home = own_store
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "reflect.cli.resident",
                                str(home), "60"], env={**os.environ, **HELPER_ON})
    wait_for(lambda: listening(home / client.SOCKET_NAME))
    yield process
    process.terminate()
    process.wait(10)


def test_the_helper_answers_as_the_cold_process_does(own_store, helper):
    home = own_store
    mode = stat.S_IMODE(os.stat(home / client.SOCKET_NAME).st_mode)
    assert mode == 0o600
    warm = hook(importtime=True)
    # the hook process imported the thin client and nothing else of reflect: the helper ran
    # the command (the bytes of the reply are printed as they come)
    assert {m for m in imported(warm) if m.startswith("reflect")} == THIN_CLIENT
    assert not imported(warm) & {"json", "numpy", "sqlite3", "typing", "litellm", "torch"}
    assert "pytest: command not found" in block(warm)
    cold = hook({"REFLECT_HELPER": "off"}, importtime=True)
    assert "reflect.api.memory" in imported(cold)
    assert stored(home) == 2  # one capture each, none twice
    # the same block but for the count: the helper's capture was the cold one's first
    assert block(cold) == block(warm).replace("iteration 1, phase bash:",
                                              "iteration 2, phase bash, failed 2x:")


def children(pid: int) -> list[int]:
    return [int(n) for n in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def serving(pid: int) -> list[int]:
    """The children of helper ``pid`` that answer a request: each reads its client's
    standard input, where the spare (forked ahead of the next request) has the helper's."""
    own = os.readlink(f"/proc/{pid}/fd/0")
    return [child for child in children(pid) if seen(f"/proc/{child}/fd/0", own) is False]


def spares(pid: int) -> list[int]:
    """Helper ``pid``'s spare children that have rehearsed: each waits on its line to the
    helper (the kernel names where a process sleeps). The keeper of the store's file waits
    too: forked first, it is listed first."""
    own = os.readlink(f"/proc/{pid}/fd/0")
    return [child for child in children(pid)[1:] if seen(f"/proc/{child}/fd/0", own)
            and seen(f"/proc/{child}/wchan", "unix_stream_read_generic")]


def the_spare(pid: int) -> int:
    """Helper ``pid``'s one spare, once the same one is there on two looks: a spare seen
    once may be about to take a request already made (the helper fixture's probe of its
    socket is one) and leave."""
    looks: list[list[int]] = []

    def settled() -> bool:
        looks.append(spares(pid))
        return len(looks) > 1 and len(looks[-1]) == 1 and looks[-1] == looks[-2]

    wait_for(settled)
    return looks[-1][0]


def seen(path: str, expected: str) -> bool | None:
    """Whether ``path`` of /proc (a link, or a file) says ``expected``; None: the process
    has left."""
    try:
        said = os.readlink(path) if path.split("/")[-2] == "fd" else Path(path).read_text()
    except OSError:
        return None
    return said == expected


def test_the_spare_child_answers_the_next_hook_and_leaves_with_the_helper(own_store, helper):
    """A pause in the requests, and the helper forks a spare that rehearses one on a
    throwaway store of its own; the next hook is answered by it (it is gone once it has
    answered) as a child forked for it would, into the user's store alone; the helper's
    leaving takes the spare and its store with it."""
    home = own_store
    spare = the_spare(helper.pid)
    [rehearsals] = Path(os.environ["TMPDIR"]).glob("reflect-warm-up-*")
    assert (rehearsals / "reflect.db").exists()
    first = hook()
    assert "pytest: command not found" in block(first)
    wait_for(lambda: spare not in children(helper.pid))  # it answered, and leaves
    assert stored(home) == 1
    after = the_spare(helper.pid)  # the next one, after the pause
    second = hook()
    assert block(second) == block(first).replace("iteration 1, phase bash:",
                                                 "iteration 2, phase bash, failed 2x:")
    helper.terminate()
    helper.wait(10)
    wait_for(lambda: not Path(f"/proc/{after}").exists())
    assert not rehearsals.exists()


def test_the_keeper_holds_the_store_s_log_and_checkpoints_it_at_a_pause(own_store, helper):
    """A step's child leaves the WAL to the keeper, which writes it into the store's file
    once the requests pause, and removes it when the helper leaves."""
    home = own_store
    hook()  # the store made: the keeper opens it at the pause
    wait_for(lambda: any(link == str(home / "reflect.db") for link in links(keeper(helper.pid))))
    hook()
    assert (home / "reflect.db-wal").exists()  # the child's close was not the last
    alone = home.parent / "alone"

    def in_the_file() -> int:  # what the store's file holds without its log
        alone.mkdir(exist_ok=True)
        shutil.copyfile(home / "reflect.db", alone / "reflect.db")
        return stored(alone)

    wait_for(lambda: in_the_file() == 2)
    helper.terminate()
    helper.wait(10)
    wait_for(lambda: not (home / "reflect.db-wal").exists())
    assert stored(home) == 2


def keeper(pid: int) -> int:
    """Helper ``pid``'s keeper of the store's file: its first child."""
    return children(pid)[0]


def links(pid: int) -> list[str]:
    """What process ``pid``'s descriptors are open on."""
    return [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]


def test_a_recall_through_the_helper_says_and_exits_as_it_would_cold(helper, tmp_path,
                                                                     monkeypatch):
    """At a terminal, an empty recall's note on where it looked; into a pipe whose reader
    closed it, a quiet exit 0 (`reflect recall | head -1`)."""
    import pty

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    run_cli("capture", "--run", "a", "--exit-code", "1", "--error-file", "-",
            stdin=b"ModuleNotFoundError: No module named 'yaml'")

    def recall(env: dict, stdout, stderr, run: str = "b") -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "reflect", "recall", "--run", run],
                                stdout=stdout, stderr=stderr, env={**os.environ, **env})

    monkeypatch.chdir(tmp_path)
    said = []
    for env in (HELPER_ON, {"REFLECT_HELPER": "off"}):
        master, slave = pty.openpty()
        try:
            assert recall(env, subprocess.DEVNULL, slave).wait(60) == 0
            os.close(slave)
            try:
                said.append(os.read(master, 65536).decode())
            except OSError:  # EIO: nothing was written to it
                said.append("")
        finally:
            os.close(master)
    assert said[0] == said[1] and "nothing to recall" in said[0]
    monkeypatch.chdir(project)
    reader = recall(HELPER_ON, subprocess.PIPE, subprocess.PIPE, run="a")
    reader.stdout.close()  # the reader had what it wanted
    assert reader.wait(60) == 0 and reader.stderr.read() == b""


def test_a_misused_command_line_exits_as_it_would_cold(own_store, helper):
    done = run_hook(b"{}", "no-such-client", env=HELPER_ON, exit_code=None)
    cold = run_cli("hook", "no-such-client", stdin=b"{}")
    assert done.returncode == cold.returncode == 2
    assert done.stderr == cold.stderr


class FakeHelper:
    """A helper that fails its client: ``ready`` False never says it is there (hung);
    else it takes the request and dies before answering."""

    def __init__(self, path: Path, ready: bool):
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(4)
        self.ready, self.requests = ready, 0
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                if not self.ready:
                    time.sleep(client.READY_SECONDS * 4)
                    continue
                got = b""
                try:
                    conn.sendall(client.READY)
                    while part := conn.recv(65536):
                        got += part
                except OSError:  # a client that would not trust it left
                    continue
                self.requests += bool(got)  # read in full; then "dies": no answer

    def close(self) -> None:
        self.server.close()


@pytest.mark.parametrize("ready", [True, False], ids=["dies mid-request", "hung"])
def test_a_helper_that_fails_costs_no_capture(own_store, ready):
    home = own_store
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    fake = FakeHelper(home / client.SOCKET_NAME, ready)
    try:
        done = hook()  # answered while the fake still holds its socket (the event)
    finally:
        fake.close()
    assert "pytest: command not found" in block(done)
    assert stored(home) == 1
    assert fake.requests == 0  # not the process the package starts: it is sent nothing


def test_a_stale_socket_gets_a_new_helper_which_exits_when_its_socket_goes(own_store):
    home = own_store
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = home / client.SOCKET_NAME
    with socket.socket(socket.AF_UNIX) as dead:  # a helper that was killed left this
        dead.bind(str(path))
    assert not listening(path)
    first = hook()  # answered cold, and starts a helper
    assert "pytest: command not found" in block(first)
    wait_for(lambda: listening(path))
    second = hook(importtime=True)
    assert "reflect.api.memory" not in imported(second)
    assert stored(home) == 2
    lock = open(home / resident.LOCK_NAME)  # noqa: SIM115
    path.unlink()  # the store's directory going away: the helper leaves
    wait_for(lambda: free(lock), resident.CHECK_SECONDS * 4)


def free(lock) -> bool:
    import fcntl

    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def test_an_idle_helper_exits(own_store):
    home = own_store
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    process = subprocess.Popen([sys.executable, "-m", "reflect.cli.resident",
                                str(home), "0.5"])
    assert process.wait(30) == 0
    assert not (home / client.SOCKET_NAME).exists()


def test_off_means_no_helper(own_store):
    home = own_store
    home.mkdir(mode=0o700, parents=True)  # where a helper would listen (the control below)
    done = hook({"REFLECT_HELPER": "off"}, watch=True)  # exited: whatever it started, it did
    assert "pytest: command not found" in block(done)
    assert started(done) == []
    assert not (home / client.SOCKET_NAME).exists()
    assert not (home / resident.LOCK_NAME).exists()


def test_a_hook_on_starts_the_helper(own_store):
    """What the probe sees of a hook that does start one (the test above's control)."""
    own_store.mkdir(mode=0o700, parents=True)
    done = hook(watch=True)
    try:
        assert started(done) == ["os.posix_spawn"]
        wait_for(lambda: listening(own_store / client.SOCKET_NAME), 60)
    finally:
        (own_store / client.SOCKET_NAME).unlink(missing_ok=True)  # the helper leaves


def capture(importtime: bool = False, watch: bool = False) -> subprocess.CompletedProcess:
    argv = reflect_argv("capture", "--run", SESSION, "--exit-code", "1", "--error-file", "-",
                        python=["-X", "importtime"] if importtime else [], watch=watch)
    done = subprocess.run(argv, input=b"ModuleNotFoundError: No module named 'yaml'\n",
                          capture_output=True, timeout=60, env={**os.environ, **HELPER_ON})
    assert done.returncode == 0, done.stderr
    return done


# The entry point, then the modules loaded by the end, on stderr: all a command imported.
MODULES_PROBE = ("import atexit, sys; atexit.register(lambda: print("
                 "'reflect-test: modules', *sorted(sys.modules), file=sys.stderr)); "
                 "from reflect.cli.launch import main; sys.exit(main())")
# What a capture never needs: recall's predictor and block, the vectors' numpy, a model's
# client, the embedding model, the hook clients' registry.
NOT_FOR_A_CAPTURE = ("numpy", "litellm", "torch", "sentence_transformers",
                     "reflect.recall.predict", "reflect.recall.block",
                     "reflect.reflection.embedding", "reflect.integrations.clients")


def test_a_cold_capture_imports_nothing_of_recall_or_the_models(own_store):
    done = subprocess.run([sys.executable, "-c", MODULES_PROBE, "capture", "--run", SESSION,
                           "--exit-code", "1", "--error-file", "-"],
                          input=b"ModuleNotFoundError: No module named 'yaml'\n",
                          capture_output=True, timeout=60,
                          env={**os.environ, "REFLECT_HELPER": "off"})
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.decode().splitlines()
              if line.startswith("reflect-test: modules ")]
    modules = set(line.split()[2:])
    assert stored(own_store) == 1  # the capture ran here, cold, through the store
    assert {"reflect.cli.main", "reflect.capture.entry", "reflect.api.memory",
            "sqlite3"} <= modules
    # each of them could have been imported here: its absence is the capture's doing
    installed = [m for m in NOT_FOR_A_CAPTURE if importlib.util.find_spec(m) is not None]
    assert {"numpy", "reflect.recall.predict", "reflect.recall.block"} <= set(installed)
    assert not modules & set(installed)


def test_a_capture_never_starts_a_helper(own_store):
    own_store.mkdir(mode=0o700, parents=True)  # where a hook would start one
    done = capture(watch=True)  # exited: whatever it started, it did
    assert started(done) == []
    assert stored(own_store) == 1
    assert not (own_store / client.SOCKET_NAME).exists()


def test_a_capture_uses_the_helper_that_is_up(own_store, helper):
    done = capture(importtime=True)
    assert "reflect.api.memory" not in imported(done)
    assert b"ModuleNotFoundError: No module named 'yaml'" in done.stdout
    with Memory(own_store) as mem:
        [entry] = mem.failures(run=SESSION)
    assert entry.message == "No module named 'yaml'"


def test_hooks_at_once_each_get_a_child_of_their_own(own_store, helper):
    running = [start_hook(env=HELPER_ON) for _ in range(4)]
    answers = [json.loads(p.communicate(failed_event(), timeout=60)[0]) for p in running]
    # each a block with the failure (its line shortened once it has failed a few times)
    assert all(re.search(r"`pytest tests/[^`]*` -> CommandNotF",
                         a["hookSpecificOutput"]["additionalContext"]) for a in answers)
    assert stored(own_store) == 4


def test_a_cold_hook_imports_what_its_event_needs(own_store):
    """Cold, a PreToolUse reads its session's files and scrubs its command: no store, no
    library, no dataclasses nor typing, and no command line parser (argparse) for the command line
    an install writes; a failure is captured and answered without numpy (no vector is
    read for a hook's block) and without the parser. Neither starts OpenSSL for its
    digests."""
    event = json.loads((FIXTURES / "PreToolUse.json").read_text())
    before = run_hook({**event, "cwd": str(Path.cwd())}, python=["-X", "importtime"],
                      env={"REFLECT_HELPER": "off"}, unset=COVERAGE)
    assert json.loads(before.stdout) is not None
    assert {"reflect.integrations.hooks", "reflect.capture.scrub"} <= imported(before)
    assert not imported(before) & {"sqlite3", "numpy", "reflect.api.memory", "dataclasses",
                                   "reflect.recall.predict", "argparse", "reflect.cli.main",
                                   "_hashlib", "typing"}
    failed = hook({"REFLECT_HELPER": "off"}, importtime=True)
    assert "pytest: command not found" in block(failed)
    assert "reflect.api.memory" in imported(failed)
    assert not imported(failed) & {"numpy", "argparse", "reflect.cli.main", "_hashlib"}


# The ``reflect`` command, in a process whose exit handlers and teardown each say so.
LEAVING = ("import atexit, os, sys\n"
           "atexit.register(os.write, 2, b'exit handlers ran\\n')\n"
           "class Kept:\n"
           "    def __del__(self): os.write(2, b'torn down\\n')\n"
           "kept = Kept()\n"
           "from reflect.cli.launch import main\n"
           "sys.argv[1:] = ['hook', 'claude-code']\n"
           "sys.exit(main())\n")


def test_a_hook_leaves_once_answered_without_the_interpreter_s_teardown(own_store, helper):
    """Through the helper or cold: the exit handlers run, the teardown (~3 ms of a hook the
    helper answers) is skipped."""
    for env in (HELPER_ON, {"REFLECT_HELPER": "off"}):
        done = subprocess.run([sys.executable, "-c", LEAVING], input=failed_event(),
                              capture_output=True, timeout=60, env={**os.environ, **env})
        assert done.returncode == 0 and "pytest: command not found" in block(done)
        assert b"exit handlers ran" in done.stderr and b"torn down" not in done.stderr
    assert stored(own_store) == 2
