"""The real Claude Code and Codex binaries, as npm ships them, for the tests that run them.

The versions tested are pinned here, and only here. Each is installed once per version
into a directory under the system's temporary directory and reused by later tests and
runs. When the npm registry cannot be reached the test says so and is skipped; under CI
it fails.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import UNDER_CI

CLIENTS = {  # command -> (npm package, the version tested)
    "claude": ("@anthropic-ai/claude-code", "2.1.332"),
    "codex": ("@openai/codex", "0.171.0"),
}
CACHE = Path(tempfile.gettempdir()) / "reflect-test-clients"
INSTALL_TIMEOUT = 600


def client(command: str) -> Path:
    """The path of the client's command, installed from npm on first use."""
    package, version = CLIENTS[command]
    where = CACHE / f"{package.replace('/', '+')}-{version}"
    binary = where / "node_modules" / ".bin" / command
    if binary.exists():
        return binary
    if not shutil.which("npm"):
        _unavailable(f"npm is not installed, so {package} cannot be installed")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time, across test processes
        if binary.exists():
            return binary
        staging = Path(tempfile.mkdtemp(dir=CACHE, prefix=".installing-"))
        try:
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(staging),
                 f"{package}@{version}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            done = None
        if done is None or done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            why = "timed out" if done is None else "; ".join(
                line for line in done.stderr.splitlines()
                if line.startswith("npm error") and "complete log" not in line)[:300]
            _unavailable(f"`npm install {package}@{version}` failed (the npm registry "
                         f"cannot be reached?): {why}")
        os.replace(staging, where)
    return binary


def _unavailable(why: str):
    if UNDER_CI:
        pytest.fail(f"the real client is needed under CI: {why}")
    pytest.skip(why)


def reflect_path() -> str:
    """A PATH on which ``reflect`` is this checkout's command, then the system's."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


# An item of a block as rendered: its first line and its indented ones.
ITEM = re.compile(r"^- \[(?P<id>[FL]-\w+)\].*(?:\n  .*)*", re.M)
HEADERS = ("PAST FAILURES TO AVOID:", "LESSONS FROM EARLIER RUNS:", "HOUSE RULES")


def items_sent(request: dict) -> dict[str, list[str]]:
    """Each item of reflect's blocks in a request to the model, by its id, with every text
    of it the request holds (a client sends the whole context: every block so far), so an
    item said again in other words (fixed since, shown before) counts twice."""
    sent: dict[str, list[str]] = {}
    for text in _strings(request):
        if any(h in text for h in HEADERS):
            for m in ITEM.finditer(text):
                sent.setdefault(m["id"], []).append(m[0])
    return sent


def said_once(sent: dict[str, list[str]], *words: str) -> None:
    """Each item sent once, and one of them for each of ``words`` (a failure's detail)."""
    assert all(len(texts) == 1 for texts in sent.values()), sent
    for word in words:
        assert [i for i, [text] in sent.items() if word in text], (word, sent)


def _strings(value: object):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
