import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_location(env: Mapping[str, str]) -> Path:
    """The public data sets: $REFLECT_DATA, else ../shared/data beside the repository."""
    if env.get("REFLECT_DATA"):
        return Path(env["REFLECT_DATA"]).absolute()
    return REPO.parent / "shared" / "data"


# Read once, here: the autouse fixture below clears every REFLECT_ variable for each test.
ENV = {name: os.environ[name] for name in ("REFLECT_DATA", "CI", "REFLECT_TEST_POSTGRES")
       if name in os.environ}
DATA = data_location(ENV)

# A Django script run without migrations: the failure several tests learn from.
NO_TABLE = """Traceback (most recent call last):
  File "/repo/repro.py", line 12, in <module>
    print(User.objects.count())
django.db.utils.OperationalError: no such table: auth_user
"""


# A command cut short: its last word followed by an ellipsis with no space between (in
# the middle, "..." may be the tool's own: pytest's `'class target... None'`).
_CUT_WORD = re.compile(r"\w(?:…|\.\.\.)$")


def cut_commands(text: str) -> list[str]:
    """The backticked commands of ``text`` cut mid-word or left open (none should be: a
    block shortens the error text and a command's arguments at word boundaries)."""
    cut = []
    for line in text.splitlines():
        parts = line.split("`")
        if len(parts) % 2 == 0:
            cut.append(line)  # a span left open
        cut += [span for span in parts[1::2] if _CUT_WORD.search(span)]
    return cut

# The modules that exercise the store, through Memory or directly: each of their tests runs
# twice, on SQLite and on PostgreSQL (a database named by REFLECT_TEST_POSTGRES, which
# `make test` starts with .ci/postgres). A test there about the SQLite file itself is
# marked sqlite_only.
BOTH_BACKENDS = frozenset({
    "test_bounds", "test_cli", "test_controls", "test_exchange", "test_holdout", "test_hostile",
    "test_house_members", "test_memory", "test_pending", "test_progress", "test_queue",
    "test_recall_lessons", "test_review", "test_store", "test_store_bound", "test_vector_sync",
    "test_worker",
})


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sqlite_only: the test is about the SQLite file itself (its pages, locks,"
        " migrations, modes or damage), which a PostgreSQL store does not have; it runs on"
        " SQLite only")
    config.addinivalue_line(
        "markers", "postgresql: the test runs on the PostgreSQL store (a server is needed:"
        " REFLECT_TEST_POSTGRES; deselect with -m 'not postgresql')")


def pytest_generate_tests(metafunc):
    if (metafunc.module.__name__.rpartition(".")[2] in BOTH_BACKENDS
            and metafunc.definition.get_closest_marker("sqlite_only") is None):
        metafunc.parametrize(
            "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)],
            indirect=True)


@pytest.fixture
def backend(request):
    """The store the test runs on: "sqlite", or "postgresql" in BOTH_BACKENDS' modules."""
    return getattr(request, "param", "sqlite")


def _without_postgres() -> str:
    """Why the PostgreSQL half cannot run here, or "" when it can."""
    if not ENV.get("REFLECT_TEST_POSTGRES"):
        return "REFLECT_TEST_POSTGRES is unset (make test starts a server with .ci/postgres)"
    try:
        import psycopg  # noqa: F401 - the postgres extra
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    return ""


WITHOUT_POSTGRES = _without_postgres()
UNDER_CI = ENV.get("CI", "").strip().lower() not in ("", "0", "false", "no")


# The modules of slow end-to-end tests (marked `slow`, pyproject.toml): wheels built and
# installed, the real clients from npm, the embedding model loaded, detached workers.
# `pytest -m 'not slow'` leaves them out; `make test` and CI run them.
SLOW = frozenset({"test_install", "test_real_claude_code", "test_real_codex", "test_real_learn",
                  "test_detached",
                  "test_shell_path"})


def pytest_collection_modifyitems(config, items):
    """The slow modules' tests marked; without a server, the PostgreSQL half is left out,
    said in one line at the end; under CI it runs, and fails."""
    for item in items:
        if item.module.__name__.rpartition(".")[2] in SLOW:
            item.add_marker(pytest.mark.slow)
    if not WITHOUT_POSTGRES or UNDER_CI:
        return
    left = [item for item in items if item.get_closest_marker("postgresql")]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if not item.get_closest_marker("postgresql")]
        config.stash[_LEFT_OUT] = len(left)


_LEFT_OUT = pytest.StashKey[int]()


def pytest_terminal_summary(terminalreporter, config):
    if config.stash.get(_LEFT_OUT, 0):
        terminalreporter.write_line(f"PostgreSQL tests skipped ({config.stash[_LEFT_OUT]}"
                                    f" deselected): {WITHOUT_POSTGRES}")


def postgres_server() -> str:
    """The test server's URL; a PostgreSQL test under CI without one fails."""
    if WITHOUT_POSTGRES:
        pytest.fail(f"PostgreSQL tests cannot run under CI: {WITHOUT_POSTGRES}")
    return ENV["REFLECT_TEST_POSTGRES"]


@contextmanager
def postgres_schema(url: str, monkeypatch):
    """A fresh schema for one test, named as the store's search path by REFLECT_STORE;
    dropped after it, with any connection the test left open."""
    import psycopg

    schema = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    joint = "&" if "?" in url else "?"
    monkeypatch.setenv("REFLECT_STORE", f"{url}{joint}options=-csearch_path%3D{schema}"
                                        f"&application_name={schema}")
    try:
        yield
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                          " WHERE application_name = %s", (schema,))
            admin.execute("SET lock_timeout = '10s'")
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def store_dump(home: Path) -> str:
    """Everything the test's store holds, as text (on SQLite: the file's SQL dump)."""
    url = os.environ.get("REFLECT_STORE")
    if not url:
        return "\n".join(sqlite3.connect(home / "reflect.db").iterdump())
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        return "\n".join(str(r[0]) for table in tables
                         for r in conn.execute(f"SELECT t::text FROM {table} t"))


@contextmanager
def store_held(home: Path):
    """Another process in the middle of a write, holding the test's store meanwhile: on
    SQLite its write lock; on PostgreSQL the tables a capture writes."""
    url = os.environ.get("REFLECT_STORE")
    if not url:
        blocker = sqlite3.connect(home / "reflect.db", isolation_level=None)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        return
    import psycopg

    with psycopg.connect(url) as blocker:
        blocker.execute("LOCK TABLE failures, lessons, runs, benign, meta IN EXCLUSIVE MODE")
        try:
            yield
        finally:
            blocker.rollback()


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch, backend):
    """Every test gets its own store, working directory and a clean environment; on
    PostgreSQL, its own schema."""
    for name in list(os.environ):
        if name.startswith("REFLECT_"):
            monkeypatch.delenv(name)
    home = tmp_path / "store"
    monkeypatch.setenv("REFLECT_HOME", str(home))
    # Unit tests embed with the deterministic hashing embedder; the tests on the
    # real bundled model ask for it.
    monkeypatch.setenv("REFLECT_EMBEDDINGS", "hash")
    # Detached workers are started only by the tests about them.
    monkeypatch.setenv("REFLECT_WORKER", "off")
    # So is the resident helper of the hooks (tests/test_resident.py): none outlives a test.
    monkeypatch.setenv("REFLECT_HELPER", "off")
    # The user's lock of the embedding model (reflect/reflection/model_lock.py): one per test, so no
    # other run of the suite on this machine holds it.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    # The fallback for an unwritable store lives in the temp directory: keep it per test.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    if backend != "postgresql":
        yield home
        return
    with postgres_schema(postgres_server(), monkeypatch):
        yield home


def missing_data(data: Path, env: Mapping[str, str]) -> tuple[str, str] | None:
    """What a test that reads the data sets does when ``data`` does not hold them: None when
    it does; ("fail", why) when they were expected (CI set to anything but false/0, or
    REFLECT_DATA naming a path that does not exist: a typo); ("skip", why) on a developer
    machine without them, or with REFLECT_DATA naming an empty directory, which says "no
    data sets here" on purpose (a fresh clone's run, on a machine that has them beside)."""
    if data.is_dir() and any(data.iterdir()):
        return None
    how = ("set REFLECT_DATA to the directory that holds mini-swe-agent/, debugbench/ and "
           "reflexion/")
    if env.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return "fail", (f"the public data sets are not at {data} (REFLECT_DATA, else "
                        f"../shared/data beside the repository) and CI is set, so they were "
                        f"expected; {how}")
    if env.get("REFLECT_DATA") and not data.is_dir():
        return "fail", (f"REFLECT_DATA={env['REFLECT_DATA']} is set, but {data} is not a "
                        f"directory; {how} (an empty one says there are none)")
    if data.is_dir():
        return "skip", (f"{data} is empty: no public data sets here, the tests on them are"
                        f" skipped; {how} to run them")
    return "skip", f"the public data sets are not at {data}; {how} to run this test"


@pytest.fixture
def data_dir():
    """The public data sets' directory; a test that reads them takes this fixture."""
    verdict = missing_data(DATA, ENV)
    if verdict is not None and verdict[0] == "fail":
        pytest.fail(verdict[1])
    if verdict is not None:
        pytest.skip(verdict[1])
    return DATA


def tool_use_id() -> str:
    """A new id of a tool call, as a client gives each call its own: an event sent again
    with the same id is the same step, which the store keeps once."""
    return f"toolu_{uuid.uuid4().hex}"


def run_cli(*args: str, stdin: bytes | None = None, env: dict | None = None):
    """The real console entry point in a child process, as a shell harness runs it."""
    return subprocess.run(
        [sys.executable, "-m", "reflect", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )


# The command's entry point under an audit hook that says on stderr each process it starts
# (``started``): what proves a command started no helper or worker once it has exited, with
# no wait for one to show up.
SPAWN_PROBE = (
    "import sys; sys.addaudithook(lambda event, args: event in {'os.posix_spawn', 'os.fork',"
    " 'os.forkpty', 'subprocess.Popen', 'os.exec', 'os.spawn', 'os.system'} and print("
    "'reflect-test: started ' + event, file=sys.stderr, flush=True)); "
    "from reflect.cli.launch import main; sys.exit(main())")


def reflect_argv(*args: str, python: Sequence[str] = (), watch: bool = False) -> list[str]:
    """``python -m reflect <args>``; ``python``: the interpreter's own options (``-X
    importtime``); ``watch``: the same entry point under ``SPAWN_PROBE``."""
    entry = ["-c", SPAWN_PROBE] if watch else ["-m", "reflect"]
    return [sys.executable, *python, *entry, *args]


def started(done: subprocess.CompletedProcess) -> list[str]:
    """The processes a command run with ``watch`` started, as its audit events."""
    return [line.rpartition(" ")[2] for line in done.stderr.decode().splitlines()
            if line.startswith("reflect-test: started ")]


def hook_argv(client: str = "claude-code", python: Sequence[str] = (),
              watch: bool = False) -> list[str]:
    """``reflect hook <client>`` as a client's settings run it."""
    return reflect_argv("hook", client, python=python, watch=watch)


def hook_env(env: Mapping[str, str] | None = None, unset: Iterable[str] = ()) -> dict[str, str]:
    """The test's environment, ``env`` over it, without the variables in ``unset``."""
    base = {k: v for k, v in os.environ.items() if k not in set(unset)}
    return {**base, **(env or {})}


def run_hook(event: bytes | str | dict | IO[bytes], client: str = "claude-code", *,
             env: Mapping[str, str] | None = None, unset: Iterable[str] = (),
             python: Sequence[str] = (), watch: bool = False, exit_code: int | None = 0,
             timeout: float = 60, **options) -> subprocess.CompletedProcess:
    """One hook event answered by ``reflect hook <client>`` in a process of its own, as the
    client runs it: ``event`` on its stdin (a dict as JSON, a file read as it is), ``env``
    over the test's environment; ``python`` and ``watch`` as ``reflect_argv`` takes them.
    Its exit code must be ``exit_code`` (a hook never breaks its client: 0), unless that is
    None; ``options`` go to ``subprocess.run``."""
    if isinstance(event, dict):
        event = json.dumps(event)
    given = ({"input": event.encode() if isinstance(event, str) else event}
             if isinstance(event, str | bytes) else {"stdin": event})
    done = subprocess.run(hook_argv(client, python, watch), capture_output=True, timeout=timeout,
                          env=hook_env(env, unset), **given, **options)
    if exit_code is not None:
        assert done.returncode == exit_code, done.stderr
    return done


def start_hook(client: str = "claude-code", *, env: Mapping[str, str] | None = None,
               **options) -> subprocess.Popen:
    """``reflect hook <client>`` started, its stdin and stdout pipes, for hooks that run at
    once or a test that writes the event itself."""
    return subprocess.Popen(hook_argv(client), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=hook_env(env), **options)


@pytest.fixture(params=["off", "on"])
def resident_helper(request, monkeypatch, own_store):
    """The client's hooks each in a cold process, then through the resident helper the first
    hook starts, as users run them by default."""
    monkeypatch.setenv("REFLECT_HELPER", request.param)
    yield request.param
    from reflect.cli.client import SOCKET_NAME

    socket = own_store / SOCKET_NAME
    if request.param == "on":
        assert socket.is_socket(), "no hook started the resident helper"
    socket.unlink(missing_ok=True)  # the helper leaves once its socket is gone
