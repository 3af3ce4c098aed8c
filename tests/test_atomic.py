"""One atomic writer for every file the project replaces: whole or not at all, on disk
before the rename (but a hook's state, written at every tool call), and no temporary file
left behind when a write fails."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from reflect.index import VectorIndex
from reflect.index.atomic import write_atomically

from reflect.api.exchange import write_atomically as write_rules
from reflect.eval import _trace as trace
from reflect.integrations import hooks, settings

ROOT = Path(__file__).resolve().parents[1]


def _vectors(path: Path) -> None:
    index = VectorIndex("m", 2)
    index.add(["a"], np.array([[1.0, 0.0]], dtype=np.float32))
    index.save(path, "new")


WRITERS = {
    "settings": lambda p: settings.write_json(p, {"new": 1}),
    "hook state": lambda p: hooks._write(p, {"new": 1}),
    "trace": lambda p: trace.write_text(p, "new\n"),
    "exported rules": lambda p: write_rules(p, "new\n"),
    "vector index": _vectors,
}


@pytest.mark.parametrize("writer", WRITERS.values(), ids=WRITERS.keys())
def test_a_failure_mid_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch,
                                                                        writer):
    target = tmp_path / "file"
    target.write_bytes(b"old")

    def disk_full(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)  # every writer renames its temporary file
    with pytest.raises(OSError, match="No space left"):
        writer(target)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["file"]
    monkeypatch.undo()
    writer(target)
    assert target.read_bytes() != b"old" and os.listdir(tmp_path) == ["file"]


@pytest.mark.parametrize("name", WRITERS)
def test_a_file_is_on_disk_before_its_rename_but_a_hooks_state(tmp_path, monkeypatch, name):
    calls = []
    fsync, replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append("replace"), replace(a, b))[1])
    WRITERS[name](tmp_path / "file")
    assert calls == (["replace"] if name == "hook state" else ["fsync", "replace"])


def test_chunks_are_written_in_turn_and_a_failing_one_leaves_nothing(tmp_path):
    target = tmp_path / "index.bin"
    write_atomically(target, [b"ab", memoryview(b"cd")])
    assert target.read_bytes() == b"abcd"

    def chunks():
        yield b"half"
        raise RuntimeError("the producer died")

    with pytest.raises(RuntimeError):
        write_atomically(target, chunks())
    assert target.read_bytes() == b"abcd" and os.listdir(tmp_path) == ["index.bin"]


def test_the_mode_of_the_replaced_file_is_kept_and_a_new_one_gets_new_mode(tmp_path):
    target = tmp_path / "f"
    write_atomically(target, "x", new_mode=0o640)
    assert target.stat().st_mode & 0o777 == 0o640
    target.chmod(0o600)
    write_atomically(target, "y", new_mode=0o644)
    assert target.stat().st_mode & 0o777 == 0o600 and target.read_text() == "y"


def test_no_other_module_renames_a_temporary_file_over_another():
    """The rule lives in one place: a second writer would be a second durability."""
    pattern = re.compile(r"\bos\.replace\(|\bmkstemp\(|\.replace\(\s*path\s*\)")
    found = [f"{p.relative_to(ROOT)}:{n}"
             for folder in ("reflect", "index", "bench")
             for p in sorted((ROOT / folder).rglob("*.py")) if p.name != "atomic.py"
             for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
