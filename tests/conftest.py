import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
# A Django script run without migrations: the failure several tests learn from.
NO_TABLE = """Traceback (most recent call last):
  File "/repo/repro.py", line 12, in <module>
    print(User.objects.count())
django.db.utils.OperationalError: no such table: auth_user
"""


@pytest.fixture(autouse=True)
def own_store(tmp_path, monkeypatch):
    """Every test gets its own store, working directory and a clean environment."""
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
    # The fallback for an unwritable store lives in the temp directory: keep it per test.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def data_dir():
    if not DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return DATA


def run_cli(*args: str, stdin: bytes | None = None, env: dict | None = None):
    """The real console entry point in a child process, as a shell harness runs it."""
    return subprocess.run(
        [sys.executable, "-m", "reflect", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )
