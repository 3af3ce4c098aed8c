import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_location(env: Mapping[str, str]) -> Path:
    """The public data sets: $REFLECT_DATA, else ../shared/data beside the repository."""
    if env.get("REFLECT_DATA"):
        return Path(env["REFLECT_DATA"]).absolute()
    return REPO.parent / "shared" / "data"


# Read once, here: the autouse fixture below clears every REFLECT_ variable for each test.
ENV = {name: os.environ[name] for name in ("REFLECT_DATA", "CI") if name in os.environ}
DATA = data_location(ENV)

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


def missing_data(data: Path, env: Mapping[str, str]) -> tuple[str, str] | None:
    """What a test that reads the data sets does when ``data`` is not a directory: None when
    it is; ("fail", why) when they were expected (REFLECT_DATA set, or CI set to anything but
    false/0); ("skip", why) on a developer machine without them."""
    if data.is_dir():
        return None
    how = ("set REFLECT_DATA to the directory that holds mini-swe-agent/, debugbench/ and "
           "reflexion/")
    if env.get("REFLECT_DATA"):
        return "fail", (f"REFLECT_DATA={env['REFLECT_DATA']} is set, but {data} is not a "
                        f"directory; {how}")
    if env.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return "fail", (f"the public data sets are not at {data} (the default, ../shared/data "
                        f"beside the repository) and CI is set, so they were expected; {how}")
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


def run_cli(*args: str, stdin: bytes | None = None, env: dict | None = None):
    """The real console entry point in a child process, as a shell harness runs it."""
    return subprocess.run(
        [sys.executable, "-m", "reflect", *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, **(env or {})},
        timeout=60,
    )
