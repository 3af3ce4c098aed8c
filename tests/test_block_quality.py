"""What the agent reads, on the shared data sets: no benign exit shown as a failure, no item
naming another failure's details, short items, this run's repeats in front of it."""

import json
import re

import pytest
from conftest import cut_commands

from reflect import Memory
from reflect.capture import commands
from reflect.capture.commands import MAX_BRIEF
from reflect.eval._convert import convert
from reflect.eval._replay import replay
from reflect.recall.render import LESSON_ITEM_TOKENS, RECENT_ITEM_TOKENS, estimate_tokens

SETS = {"mini-swe-agent": "mini-swe-agent", "debugbench": "debugbench",
        "reflexion": "reflexion/reflexion_humaneval_py_pass_at_1"}
_ACTION = re.compile(r"^- \[L-\w+\] [^`]*`([^`]*)` -> ", re.M)


@pytest.fixture
def traces(data_dir):
    return {name: convert(name, [data_dir / folder]) for name, folder in SETS.items()}


def test_greps_that_matched_nothing_are_benign_and_nothing_else_is(data_dir):
    records = [r for r in convert("mini-swe-agent", [data_dir / "mini-swe-agent"])
               if not r.success]
    with Memory() as mem:
        entries = [(r, mem.capture(run=r.run, iteration=r.iteration, action=r.action,
                                   exit_code=r.exit_code, error_text=r.error_text or None))
                   for r in records]
        benign = [r for r, e in entries if e.source == "benign"]
        assert len(benign) == 17 and mem.stats().benign == 17
        assert all(not r.error_text.strip() and "grep" in r.action for r in benign)
        # A failure that printed something is never benign, whatever its program.
        assert all(e.source != "benign" for r, e in entries if r.error_text.strip())
        assert mem.stats().failures == len(records) - 17


def test_pylints_findings_are_benign_and_its_crash_is_a_failure(data_dir):
    """The real run that met both: pylint rating the agent's reproduction (exit 28, "Your
    code has been rated at 5.62/10") five times, and pylint itself broken by an edit."""
    path = data_dir / "mini-swe-agent-dev" / "trajs" / "pylint-dev__pylint-6528.traj.json"
    records = [r for r in convert("mini-swe-agent", [path])
               if not r.success and commands.program(commands.last_command(r.action)) == "pylint"]
    with Memory() as mem:
        sources = [(r.exit_code, mem.capture(run=r.run, iteration=r.iteration, action=r.action,
                                             exit_code=r.exit_code,
                                             error_text=r.error_text).source)
                   for r in records]
    assert sorted(sources) == [(1, "text")] + [(28, "benign")] * 5


@pytest.mark.parametrize("name", list(SETS))
def test_no_item_names_a_foreign_detail_and_every_item_is_short_and_whole(name, traces, tmp_path):
    for mode in ("on", "popular", "last3"):
        summary = replay(traces[name], mode, tmp_path / mode)
        assert summary["totals"]["foreign_items"] == 0, (name, mode)
    rows = [json.loads(line)
            for line in (tmp_path / "on" / "iterations.jsonl").read_text().splitlines()]
    items = [i for r in rows for i in r["items"]]
    for item in items:
        limit = RECENT_ITEM_TOKENS if item["section"] == "recent" else LESSON_ITEM_TOKENS
        assert estimate_tokens(item["text"]) <= limit, item["text"]
        assert all(len(a) <= MAX_BRIEF for a in _ACTION.findall(item["text"]))
        assert cut_commands(item["text"]) == [], item["text"]


def test_this_runs_repeats_are_in_front_of_the_agent(traces, tmp_path):
    within = {}
    for mode in ("on", "last3"):
        m = replay(traces["mini-swe-agent"], mode, tmp_path / mode)["metrics"]
        within[mode] = m["coverage_within"]["value"]
    assert within["on"] >= max(within["last3"], 0.97)
