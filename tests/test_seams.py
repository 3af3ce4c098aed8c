"""Tests fake at the boundary and wait for events: no test patches a global of the project
(a test hands a fake through a seam: ``Settings(open_store=...)``, a client's registry
entry, ``hooks.run(left=...)``), and none asserts a duration or asserts right after a fixed
sleep (it waits for a positive sign with a generous deadline; durations are bench/'s)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
PATCHERS = {"setattr", "patch", "object", "dict", "multiple", "delattr"}
CLOCKS = {"monotonic", "time", "perf_counter", "monotonic_ns", "perf_counter_ns", "time_ns"}


def sources() -> list[Path]:
    return sorted(TESTS.glob("*.py"))


def project_names(tree: ast.AST) -> set[str]:
    """The names a module binds to the project, by any import statement in it."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names
                      if a.name.split(".")[0] == "reflect"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "reflect":
            names |= {a.asname or a.name for a in node.names}
    return names


def root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def patches(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Each patch of something of the project: ``monkeypatch.setattr``, ``mock.patch`` (and
    ``.object``), ``setattr`` or an assignment, whose target is a name imported from
    ``reflect`` or a "reflect." string."""
    ours = project_names(tree)

    def project(target: ast.AST) -> bool:
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            return target.value.split(".")[0] == "reflect"
        return root(target) in ours

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in PATCHERS and project(node.args[0]):
                yield node.lineno, ast.unparse(node)[:80]
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and project(target):
                    yield node.lineno, ast.unparse(node)[:80]


def is_clock(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", "")) in CLOCKS)


def is_sleep(node: ast.stmt) -> bool:
    call = node.value if isinstance(node, ast.Expr) else None
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute | ast.Name)
            and (getattr(call.func, "attr", None) or getattr(call.func, "id", "")) == "sleep")


def is_lapse(node: ast.AST) -> bool:
    """Whether ``node`` holds a clock's difference (``time.monotonic() - start``)."""
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and is_clock(n.left)
               for n in ast.walk(node))


def timers(tree: ast.AST) -> dict[str, int | None]:
    """The module's functions that return a clock's difference: name -> its place in the
    tuple they return (None: the value itself)."""
    found: dict[str, int | None] = {}
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.Return) and node.value is not None:
                    if isinstance(node.value, ast.Tuple):
                        for i, item in enumerate(node.value.elts):
                            if is_lapse(item):
                                found[function.name] = i
                    elif is_lapse(node.value):
                        found[function.name] = None
    return found


def timed_names(function: ast.AST, timing: dict[str, int | None]) -> set[str]:
    """The names ``function`` sets to a duration: a clock's difference, or what a timer
    returns (the tuple's item in its place)."""
    names = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Assign):
            continue
        call = node.value
        timer = (call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                 else None)
        for target in node.targets:
            if isinstance(target, ast.Name) and (is_lapse(call) or (
                    timer in timing and timing[timer] is None)):
                names.add(target.id)
            elif isinstance(target, ast.Tuple) and timer in timing and timing[timer] is not None:
                place = timing[timer]
                if place < len(target.elts) and isinstance(target.elts[place], ast.Name):
                    names.add(target.elts[place].id)
    return names


def durations(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """Each assertion of a duration: an assert on a clock's difference (``time.monotonic()
    - start``), or on a name set to one (directly, or by a function of the module that
    returns one); and each assert that comes right after a fixed sleep (absent then means
    only that it had not happened yet)."""
    timing = timers(tree)
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        timed = timed_names(function, timing)
        for node in ast.walk(function):
            if isinstance(node, ast.Assert) and (is_lapse(node.test) or any(
                    isinstance(n, ast.Name) and n.id in timed for n in ast.walk(node.test))):
                yield node.lineno, "asserts a duration: " + ast.unparse(node)[:70]
            for block in ("body", "orelse", "finalbody"):
                statements = getattr(node, block, None)
                if not isinstance(statements, list):
                    continue
                for before, after in pairwise(statements):
                    if is_sleep(before) and isinstance(after, ast.Assert):
                        yield after.lineno, "asserts after a fixed sleep: " + ast.unparse(
                            after)[:60]


def found(check, path: Path) -> list[str]:
    return [f"{path.name}:{line}: {what}" for line, what in check(ast.parse(path.read_text()))]


@pytest.mark.parametrize("check", [patches, durations], ids=["patches", "durations"])
def test_no_test_patches_the_project_or_asserts_a_duration(check):
    assert [hit for path in sources() for hit in found(check, path)] == []


BAD = '''
import time
from reflect.integrations import budget
import reflect.index
from unittest import mock

def test_patches(monkeypatch):
    from reflect.store._sql import SQLStore
    monkeypatch.setattr(budget, "until", 0)
    monkeypatch.setattr(reflect.index, "load_embedder", None)
    monkeypatch.setattr("reflect.capture.fingerprint.cause", None)
    monkeypatch.setattr(SQLStore, "add_failure", None)
    mock.patch("reflect.api.memory.Memory.recall")
    budget.until = 1

def test_durations(path):
    start = time.monotonic()
    took = time.monotonic() - start
    assert took < 1
    assert time.perf_counter() - start < 2
    time.sleep(1)
    assert not path.exists()
    done, lapse = hook()
    assert done.returncode == 0 and lapse < 9

def hook():
    start = time.monotonic()
    return run(), time.monotonic() - start
'''

GOOD = '''
import os, time, socket, tempfile
from reflect import Memory

def test_fine(monkeypatch, path):
    monkeypatch.setattr(os, "replace", None)
    monkeypatch.setattr(socket.socket, "connect", None)
    monkeypatch.setattr(tempfile, "tempdir", "x")
    store = Memory().store
    store.thing = 1
    deadline = time.monotonic() + 20
    while not path.exists():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
    assert path.exists()
'''


def test_the_checks_see_what_they_are_for_and_nothing_else():
    bad = ast.parse(BAD)
    assert sorted(line for line, _ in patches(bad)) == [9, 10, 11, 12, 13, 14]
    assert sorted(line for line, _ in durations(bad)) == [19, 20, 22, 24]
    good = ast.parse(GOOD)
    assert list(patches(good)) == [] and list(durations(good)) == []


STARTS = {"run", "Popen", "check_output", "check_call", "call"}


def hook_processes(tree: ast.AST) -> list[int]:
    """The lines that start ``reflect hook`` in a process by ``subprocess`` directly: its
    argv names the command, or is conftest's ``hook_argv``."""
    return sorted(
        n.lineno for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and n.func.attr in STARTS and root(n.func) == "subprocess" and n.args
        and ("hook" in {c.value for c in ast.walk(n.args[0]) if isinstance(c, ast.Constant)}
             or "hook_argv" in ast.unparse(n.args[0])))


def test_every_hook_process_is_started_by_the_one_helper_in_conftest():
    """``run_hook`` and ``start_hook`` (conftest.py) start a hook as a client does; a test
    module writes no helper of its own."""
    own = {path.name: lines for path in sources() if path.name != "conftest.py"
           if (lines := hook_processes(ast.parse(path.read_text())))}
    assert own == {}
    assert hook_processes(ast.parse((TESTS / "conftest.py").read_text()))
    assert hook_processes(ast.parse(
        "subprocess.run([sys.executable, '-m', 'reflect', 'hook', 'codex'])\n"
        "subprocess.Popen(hook_argv('codex'))\nsubprocess.run(['reflect', 'status'])")) == [1, 2]
