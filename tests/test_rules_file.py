"""``reflect rules``: the project's house rules, as recall shows a new run them, kept in a
marked section of the files agents read without hooks (AGENTS.md, CLAUDE.md); nothing
outside its markers is touched, and ``--check`` says when the section is stale."""

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from secret_corpus import SECRETS
from test_house_rules import runs

from reflect import Memory

NO_YAML = "ModuleNotFoundError: No module named 'yaml'"
BEFORE = "# Agents\r\n\r\nUse `make test`.  Trailing spaces stay.  \r\n\r\n"
AFTER = "\n## Style\n\nNo tabs.\n"  # its own line endings, and no newline is added to it


def rules(*args: str):
    return run_cli("rules", *args)


@pytest.fixture
def project(own_store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with Memory() as mem:
        runs(mem, [NO_YAML] * 3)
    return tmp_path


def house_block() -> str:
    """What recall shows a new run of the project first: the house rules (asked of a copy
    of the store, which the recall changes: a run is registered)."""
    copy = Path(os.environ["REFLECT_HOME"]).with_name("copy")
    shutil.copytree(os.environ["REFLECT_HOME"], copy)
    try:
        with Memory(home=copy) as mem:
            return mem.recall(run="a-new-run", sections=("lessons",)).text
    finally:
        shutil.rmtree(copy)


def test_the_section_is_the_house_rules_recall_shows_a_new_run(project):
    done = rules()
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    block = house_block()
    assert block.startswith("HOUSE RULES (from 3 earlier runs") and "pip install pyyaml" in block
    assert block in out  # the same selection and rendering, each saying what to do
    items = block.split("\n", 1)[1]  # under the header, each item from its "- [L-"
    assert json.loads(rules("--format", "json").stdout)["rules"] == \
        ["- " + item for item in items.removeprefix("- ").split("\n- ")]


def test_write_creates_the_file_then_keeps_only_its_section_current(project):
    agents = project / "AGENTS.md"
    done = rules("--write", "AGENTS.md")
    assert done.returncode == 0, done.stderr
    first = agents.read_text()
    assert house_block() in first and first.count("<!-- reflect:house-rules") == 1
    assert b"AGENTS.md: house rules written" in done.stdout
    assert b"already current" in rules("--write", "AGENTS.md").stdout
    assert agents.read_text() == first
    # A person's text before and after the section stays byte for byte.
    section = first[first.index("<!-- reflect:house-rules"):]
    agents.write_bytes((BEFORE + section + AFTER).encode())
    with Memory() as mem:  # a new run hits another mistake: the rules change
        runs(mem, ["FileNotFoundError: [Errno 2] No such file or directory: 'cfg.ini'"] * 3,
             prefix="s")
    assert rules("--check", "AGENTS.md").returncode == 1
    assert rules("--write", "AGENTS.md").returncode == 0
    data = agents.read_bytes().decode()
    assert data.startswith(BEFORE) and data.endswith(AFTER)
    assert "cfg.ini" in data and house_block() in data.replace("\r\n", "\n")
    assert rules("--check", "AGENTS.md").returncode == 0


def test_a_file_without_markers_gets_the_section_after_its_text(project):
    for name in ("AGENTS.md", "CLAUDE.md"):
        (project / name).write_bytes(BEFORE.encode())
    done = rules("--write", "AGENTS.md", "--write", "CLAUDE.md")
    assert done.returncode == 0, done.stderr
    for name in ("AGENTS.md", "CLAUDE.md"):
        data = (project / name).read_bytes().decode()
        assert data.startswith(BEFORE + "\r\n<!-- reflect:house-rules -->\r\n")
        assert house_block() in data.replace("\r\n", "\n")  # in the file's line endings


@pytest.mark.parametrize("broken", [
    "<!-- reflect:house-rules -->\nold rules\n",  # no end
    "old rules\n<!-- /reflect:house-rules -->\n",  # no start
    "<!-- /reflect:house-rules -->\nold\n<!-- reflect:house-rules -->\n",  # end first
    "<!-- reflect:house-rules -->\n<!-- reflect:house-rules -->\n<!-- /reflect:house-rules -->\n",
])
def test_broken_markers_are_said_and_the_file_left_as_it_was(project, broken):
    agents = project / "AGENTS.md"
    agents.write_bytes((BEFORE + broken + AFTER).encode())
    stamp = agents.stat().st_mtime_ns
    for option in ("--write", "--check"):
        done = rules(option, "AGENTS.md")
        assert done.returncode == 1, done.stdout
        error = done.stderr.decode()
        assert "AGENTS.md" in error and "markers" in error and "line" in error, error
        assert agents.read_bytes() == (BEFORE + broken + AFTER).encode()
        assert agents.stat().st_mtime_ns == stamp


def test_check_says_what_is_stale_and_writes_nothing(project):
    missing = rules("--check", "AGENTS.md")
    assert missing.returncode == 1 and b"reflect rules --write AGENTS.md" in missing.stdout
    assert not (project / "AGENTS.md").exists()
    (project / "AGENTS.md").write_text(BEFORE)
    unmarked = rules("--check", "AGENTS.md")
    assert unmarked.returncode == 1 and b"no house-rules section" in unmarked.stdout
    assert (project / "AGENTS.md").read_bytes() == BEFORE.encode()


def test_write_and_check_together_is_misuse(project):
    done = rules("--write", "AGENTS.md", "--check", "CLAUDE.md")
    assert done.returncode == 2 and b"--check" in done.stderr


def test_an_empty_store_writes_that_there_are_no_rules_yet(own_store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert rules("--write", "AGENTS.md").returncode == 0
    text = (tmp_path / "AGENTS.md").read_text()
    assert "No house rules yet" in text and os.stat(tmp_path / "AGENTS.md").st_mode & 0o644


def test_no_secret_of_a_failure_reaches_the_file(own_store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    secret, line = SECRETS["openai"]
    with Memory() as mem:
        runs(mem, [f"openai.AuthenticationError: {line}"] * 3, fix="pip install -U openai")
    done = rules("--write", "AGENTS.md")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "AGENTS.md").read_text()
    assert "AuthenticationError" in text and secret not in text
