import ast
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reflect import Memory
from reflect.api.memory import port
from reflect.capture import fingerprint
from reflect.store import DB_NAME
from reflect.store.sqlite_migrations import MIGRATIONS, migrate


def test_new_store_is_private_with_gitignore(own_store):
    with Memory() as mem:
        mem.capture(run="r", exit_code=1, error_text="boom")
    assert stat.S_IMODE(own_store.stat().st_mode) == 0o700
    assert (own_store / ".gitignore").read_text() == "*\n"


@pytest.mark.sqlite_only
def test_store_uses_wal_and_records_migrations(own_store):
    with Memory() as mem:
        mem.capture(run="r", exit_code=1)
    conn = sqlite3.connect(own_store / DB_NAME)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = conn.execute("SELECT version, name FROM migrations ORDER BY version").fetchall()
    assert rows == [(i, m.__name__) for i, m in enumerate(MIGRATIONS, 1)]


@pytest.mark.sqlite_only
def test_migrate_from_empty_database_and_again_is_a_no_op(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    migrate(conn)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"failures", "lessons", "meta", "migrations"} <= tables
    migrate(conn)
    assert conn.execute("SELECT COUNT(*) FROM migrations").fetchone()[0] == len(MIGRATIONS)


def older_store(home, applied: int) -> sqlite3.Connection:
    """A SQLite store in ``home`` at the schema of its first ``applied`` migrations."""
    conn = sqlite3.connect(home / DB_NAME, isolation_level=None)
    conn.execute("CREATE TABLE migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                 " applied REAL NOT NULL)")
    for version, step in enumerate(MIGRATIONS[:applied], 1):
        step(conn)
        conn.execute("INSERT INTO migrations VALUES (?, ?, 0)", (version, step.__name__))
    return conn


@pytest.mark.sqlite_only
@pytest.mark.parametrize("applied", range(1, len(MIGRATIONS)))
def test_migrate_from_each_older_schema_keeps_the_data(tmp_path, applied):
    home = tmp_path / "old"
    home.mkdir()
    conn = older_store(home, applied)
    # Rows as the oldest schema wrote them: every later schema must keep them.
    conn.execute(
        "INSERT INTO lessons (id, fingerprint, trigger, guidance, category, severity, kind,"
        " confidence, created, updated) VALUES (?, 'fp1', ?, ?, 'import', 'high', 'heuristic',"
        " 0.5, 1, 1)",
        ("L-00000001", "running `python a.py` fails",
         "Install the missing `requests` package with pip first."),
    )
    conn.execute(
        "INSERT INTO failures (id, run, iteration, ts, goal, phase, action, exit_code,"
        " error_type, message, signature, friction, fingerprint, source, redactions, category,"
        " severity, lesson_id) VALUES (?, 'r', 1, 1, 'g', '', 'python a.py', 1,"
        " 'ModuleNotFoundError', ?, '', '', 'fp1', 'text', 0, 'import', 'high', 'L-00000001')",
        ("F-00000001", "No module named 'requests'"),
    )
    migrate(conn)
    assert conn.execute("SELECT COUNT(*) FROM migrations").fetchone()[0] == len(MIGRATIONS)
    with Memory(home, embeddings="off") as mem:
        assert mem.failure("F-00000001").hint == (
            "Install the missing `requests` package with pip first.")
        assert mem.recall(run="r").items[0].source_failure_ids == ["F-00000001"]
        # Later schemas count the old failure's cause, as a family of its own (the family
        # rule is not run by a migration), and know its run, with its goal.
        cause = port(mem).store.failures_by_id(["F-00000001"])["F-00000001"]["cause"]
        assert port(mem).store.run_families(["r"])["r"] == {cause}
        assert port(mem).store.earlier_runs("other", "x") == 1


@pytest.mark.sqlite_only
def test_counting_by_cause_keeps_the_counts_of_pruned_failures(tmp_path):
    """A store of the fourth schema: one mistake in two runs under two fingerprints (other
    frames), and a fingerprint whose failures were pruned, seen in 5 runs."""
    home = tmp_path / "old"
    home.mkdir()
    conn = older_store(home, 4)
    for n, (run, fp) in enumerate((("a", "fpa"), ("b", "fpb"), ("pruned", "fpc")), 1):
        conn.execute(
            "INSERT INTO lessons (id, fingerprint, trigger, guidance, category, severity,"
            " kind, confidence, created, updated, error_text) VALUES (?, ?, 't', 'g',"
            " 'syntax', 'high', 'heuristic', 0.5, 1, 1, ?)",
            (f"L-{n}", fp, "SyntaxError: '(' was never closed"))
        if run != "pruned":
            conn.execute(
                "INSERT INTO failures (id, run, iteration, ts, goal, phase, action, exit_code,"
                " error_type, message, signature, friction, fingerprint, source, redactions,"
                " category, severity, lesson_id) VALUES (?, ?, 1, 1, 'g', '', '', 1,"
                " 'SyntaxError', ?, '', '', ?, 'text', 0, 'syntax', 'high', ?)",
                (f"F-{n}", run, "'(' was never closed", fp, f"L-{n}"))
            conn.execute("INSERT INTO fingerprints VALUES (?, 1, 1, 1)", (fp,))
    conn.execute("INSERT INTO fingerprints VALUES ('fpc', 5, 9, 1)")
    migrate(conn)
    runs = dict(conn.execute(
        "SELECT f.fingerprint, c.runs FROM fingerprints f JOIN causes c ON c.cause = f.cause"))
    assert runs == {"fpa": 2, "fpb": 2, "fpc": 5}
    with Memory(home, embeddings="off") as mem:
        mem.capture(run="c", exit_code=1, error_text="SyntaxError: '(' was never closed")
        assert "`L-1` · seen in 3 runs" in mem.export(min_confidence=0)


def project_imports(module) -> set[str]:
    """The modules of the project a module's source imports, wherever the statement stands."""
    tree = ast.parse(Path(module.__file__).read_text())
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.module}
    return {name for name in names if name.split(".")[0] == "reflect"}


@pytest.mark.sqlite_only
def test_counting_by_cause_keeps_the_rule_it_shipped_with(tmp_path):
    """The migration computes an old store's causes by its frozen copy of the rule
    (reflect/store/frozen_cause.py): what it writes does not change when the live rule
    (reflect.capture.fingerprint) does, for neither the copy nor the migrations can reach
    the live rule (tests/test_layers.py holds the wall between the store and capture)."""
    from reflect.store import frozen_cause, sqlite_migrations

    error = ("ModuleNotFoundError", "No module named 'yaml' (in /tmp/run-7/app.py)")
    shipped = frozen_cause.cause(*error)
    assert shipped == fingerprint.cause(*error)  # the live rule has not changed since
    assert project_imports(frozen_cause) == set()
    assert not {m for m in project_imports(sqlite_migrations) if m.startswith("reflect.capture")}
    conn = older_store(tmp_path, 4)
    conn.execute(
        "INSERT INTO failures (id, run, iteration, ts, goal, phase, action, exit_code,"
        " error_type, message, signature, friction, fingerprint, source, redactions, category,"
        " severity, lesson_id) VALUES ('F-1', 'r', 1, 1, 'g', '', '', 1, ?, ?, '', '', 'fp',"
        " 'text', 0, 'import', 'high', 'L-1')", error)
    migrate(conn)
    assert conn.execute("SELECT cause FROM failures").fetchall() == [(shipped,)]
    assert conn.execute("SELECT cause FROM causes").fetchall() == [(shipped,)]


def test_capture_is_committed_before_it_returns(own_store):
    mem = Memory()
    entry = mem.capture(run="r", exit_code=1, error_text="ValueError: bad")
    # A second connection sees the row while the first is still open.
    with Memory() as other:
        assert [f.failure_id for f in other.failures()] == [entry.failure_id]
    mem.close()


WORKER = textwrap.dedent("""
    import sys
    from reflect import Memory, Settings
    worker = sys.argv[1]
    with Memory(settings=Settings(busy_timeout=60)) as mem:
        for i in range(200):
            mem.capture(run=f"w{worker}", iteration=i, exit_code=1,
                        error_text=f"ValueError: worker {worker} capture {i}")
""")


def test_eight_processes_capture_into_a_new_store_without_losing_a_row(own_store):
    assert not own_store.exists()
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(n)], stderr=subprocess.PIPE)
        for n in range(8)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
        assert b"warning" not in err, err.decode()  # nothing fell back to the pending file
    with Memory() as mem:
        rows = port(mem).store.failures(None, 2000)
        assert len(rows) == 1600 and len({r["seq"] for r in rows}) == 1600
        assert sorted(port(mem).store.count_by("run", None)) == [(f"w{n}", 200) for n in range(8)]
        # Within one process the sequence follows the order of its captures.
        for n in range(8):
            newest_first = [r["iteration"] for r in port(mem).store.failures(f"w{n}", 200)]
            assert newest_first == list(range(199, -1, -1))


def test_a_step_is_stored_once_however_often_it_is_recorded(own_store):
    with Memory() as mem:
        first, again, other_run = (
            mem.capture(run=run, action="pytest -x", exit_code=1,
                        error_text="E   assert 1 == 2", step="toolu_1")
            for run in ("r", "r", "r2"))
        for _ in range(2):
            mem.capture(run="r", action="grep -q needle f.txt", exit_code=1, step="toolu_2")
            mem.outcome(run="r", action="python -m pytest -x", step="toolu_3")
        assert again.failure_id == first.failure_id != other_run.failure_id
        assert len(mem.failures(run="r")) == 1 and mem.stats("r").benign == 1
        assert port(mem).store.successes_between("r", -1, 100) == ["python -m pytest -x"]
        assert port(mem).store.unkeyed_steps("r") == (0, 0)
