"""A store shared by several members: a house rule, and a fix it tells, needs runs of at
least two of them, and its count says how many. One member's many runs (made-up session
ids, each a run) make no rule for everyone; a store of one member is as it always was."""

import os
import sqlite3
from contextlib import ExitStack

import pytest
from conftest import store_dump, store_held

from reflect import Memory
from reflect.api.context import RunContext
from reflect.recall.predict import Predictor
from reflect.recall.render import HOUSE_HEADER
from reflect.store import DB_NAME

HONEST = ("alice", "bob", "carol", "dave")
NO_PYTEST = "ModuleNotFoundError: No module named 'pytest'"
PLANTED = "RuntimeError: the build toolchain is not installed"
PLANTED_FIX = "pip install toolchain-bootstrap"  # a name of its own on the index
CHECK = "python check.py"


class Team(ExitStack):
    """One ``Memory`` per member, on the test's store (SQLite or PostgreSQL)."""

    def __init__(self):
        super().__init__()
        self.members: dict[str, Memory] = {}

    def __getitem__(self, name: str) -> Memory:
        if name not in self.members:
            context = RunContext.from_env({**os.environ, "REFLECT_MEMBER": name})
            self.members[name] = self.enter_context(Memory(context=context))
        return self.members[name]

    def run(self, member: str, run: str, error: str = "", fix: str = "") -> None:
        """A run that recalls, fails with ``error`` (when given) and passes ``fix`` then
        the failed check (when given)."""
        mem = self[member]
        mem.recall(run=run, goal="a task", iteration=1)
        if error:
            mem.capture(run=run, iteration=1, action=CHECK, exit_code=1, error_text=error)
        if fix:
            mem.outcome(run=run, iteration=2, success=True, action=fix)
            mem.outcome(run=run, iteration=3, success=True, action=CHECK)

    def honest(self, runs: int = 20) -> None:
        """Runs of four members; every other one misses pytest and installs it."""
        for i in range(runs):
            member = HONEST[(i // 2) % len(HONEST)]
            if i % 2 == 0:
                self.run(member, f"h{i}", NO_PYTEST, "pip install pytest")
            else:
                self.run(member, f"h{i}")

    def house(self, member: str = "erin") -> list[str]:
        """The house rules a newcomer is shown before its first step."""
        rec = self[member].recall(run="newcomer", goal="a task", iteration=1)
        assert not rec.items or rec.text.startswith(HOUSE_HEADER), rec.text
        return [i.text for i in rec.items if i.section == "lesson"]


def planted(team: Team, ids: int, error: str = PLANTED) -> None:
    """One member's made-up session ids, each a run that hit ``error`` and got past it
    by installing a package of its own."""
    for n in range(ids):
        team.run("mallory", f"made-up-{n}", error, PLANTED_FIX)


def test_five_made_up_runs_of_one_member_make_no_house_rule():
    with Team() as team:
        team.honest()
        planted(team, 5)
        rules = team.house()
    assert not any("toolchain" in text for text in rules), rules
    (rule,) = [t for t in rules if "pytest" in t]
    assert "in 10 of the last 25 runs, by 4 members" in rule, rule
    assert "What worked in 10 of the 10 runs that hit it, by 4 members:" in rule, rule


def test_forty_made_up_runs_of_one_member_neither_make_a_rule_nor_crowd_out_the_team_s():
    with Team() as team:
        team.honest()
        planted(team, 40)
        rules = team.house()
    assert not any("toolchain" in text for text in rules), rules
    (rule,) = [t for t in rules if "pytest" in t]
    # No member's runs fill more than half of the latest runs counted: the 20 honest runs
    # and as many of the 40 as half the window holds.
    counted = 20 + Predictor().window // 2
    assert f"of the last {counted} runs, by 4 members" in rule, rule


def test_a_fix_one_member_told_in_many_runs_is_not_the_team_s_fix():
    with Team() as team:
        team.honest()
        planted(team, 40, NO_PYTEST)  # the team's own mistake, "fixed" by a package of its own
        rules = team.house()
    (rule,) = [t for t in rules if "pytest" in t]
    # one fix, `pip install`, worked in each run: told in the words four members used
    assert "toolchain" not in rule, rule
    assert "runs that hit it, by 5 members: `pip install pytest`" in rule, rule


def test_a_fix_of_one_member_s_runs_is_no_fix_in_a_shared_store():
    with Team() as team:
        for i in range(3):
            team.run("alice", f"a{i}", NO_PYTEST, "pip install pytest")
        for i in range(2):
            team.run("bob", f"b{i}", NO_PYTEST)
        (rule,) = team.house()
    assert "by 2 members" in rule and "What worked" not in rule, rule
    assert "Hint:" in rule, rule


def test_a_store_of_one_member_counts_its_runs_as_before():
    with Team() as team:
        for i in range(3):
            team.run("alice", f"a{i}", NO_PYTEST, "pip install pytest")
        (rule,) = team.house("alice")
    assert "in 3 of the last 3 runs:" in rule and "member" not in rule, rule
    assert "What worked in 3 of the 3 runs that hit it: `pip install pytest`" in rule, rule


def test_runs_of_one_member_in_a_shared_store_make_no_rule_whatever_their_number():
    with Team() as team:
        team.run("alice", "a0")
        for i in range(6):
            team.run("bob", f"b{i}", NO_PYTEST, "pip install pytest")
        assert team.house() == []


def test_a_member_is_kept_as_a_digest_of_its_user_and_host_or_its_configured_name():
    import pwd

    user, host = pwd.getpwuid(os.getuid()).pw_name, os.uname().nodename
    default = RunContext.from_env(os.environ)
    named = RunContext.from_env({**os.environ, "REFLECT_MEMBER": "alice"})
    # the process's user, not what its environment says it is
    assert RunContext.from_env({**os.environ, "USER": "x"}).member == default.member
    assert default.member != named.member
    for context in (default, named):
        assert len(context.member) == 16 and int(context.member, 16) >= 0
        assert user not in context.member and host not in context.member
        assert RunContext.from_env(context.environ()).member == context.member


@pytest.mark.sqlite_only
def test_each_run_records_its_member(own_store):
    with Team() as team:
        team.run("alice", "a", NO_PYTEST)
        team.run("bob", "b")
        alice, bob = team["alice"].context.member, team["bob"].context.member
    conn = sqlite3.connect(own_store / DB_NAME)
    assert dict(conn.execute("SELECT run, member FROM runs")) == {"a": alice, "b": bob}
    assert "alice" not in store_dump(own_store)


@pytest.mark.sqlite_only
def test_a_capture_kept_aside_keeps_its_member(own_store):
    with Team() as team:
        team.run("bob", "b")  # the store exists
        with store_held(own_store):
            team["alice"].capture(run="a", iteration=1, action=CHECK, exit_code=1,
                                  error_text=NO_PYTEST)
        assert list(own_store.glob("pending*"))
        team["alice"].capture(run="a", iteration=2, exit_code=1)  # replays what was kept
        alice = team["alice"].context.member
    conn = sqlite3.connect(own_store / DB_NAME)
    assert conn.execute("SELECT member FROM runs WHERE run = 'a'").fetchone() == (alice,)
