"""The same sessions captured live by the hooks and learned afterwards from what the client
kept on disk give the same store: the real Claude Code and Codex binaries (from npm),
against a scripted model API on loopback."""

import re

from test_real_claude_code import COMMANDS, claude_session, installed_project
from test_real_codex import codex_session

from reflect import Memory
from reflect.api.learn import house_rules
from reflect.api.memory import port


def stored(mem):
    return sorted((e.run, e.iteration, e.phase, e.action, e.exit_code, e.error_type,
                   e.fingerprint, e.resolution) for e in mem.failures(limit=100))


def rules(mem):
    """The house rules' texts, less the lesson ids each store draws for itself."""
    return [re.sub(r"\[L-\w+\] ", "", item.text) for item in house_rules(mem, port(mem))]


def test_claude_code_sessions_learned_as_they_were_captured(tmp_path):
    project = installed_project(tmp_path)
    claude_session(project, COMMANDS, "Make the weekly report run")
    claude_session(project, ["ls data", "python3 report.py"], "List the data")
    claude_session(project, ["ls data"], "List the data again")
    claude_session(project, ["ls"], "List the files")  # a run with no failure counts too
    with Memory() as live:
        captured, live_rules = stored(live), rules(live)
    with Memory(home=tmp_path / "learned") as mem:
        report = mem.learn("claude-code", [tmp_path / "home" / ".claude" / "projects"])
        assert stored(mem) == captured and rules(mem) == live_rules
    # The first session's unchanged rerun was refused: it ran, and failed, in neither.
    assert len(captured) == 3 and live_rules  # what 2 of 4 runs hit, at least
    assert (report.sessions, report.failures, report.resolved) == (4, 3, 1)
    # And learning into the store that captured them live adds nothing.
    with Memory() as live:
        again = live.learn("claude-code", [tmp_path / "home" / ".claude" / "projects"])
        assert (again.learned, again.failures) == (0, 0) and stored(live) == captured


def test_codex_sessions_learned_as_they_were_captured(tmp_path):
    codex_session(tmp_path, COMMANDS)
    with Memory() as live:
        captured, live_rules = stored(live), rules(live)
    with Memory(home=tmp_path / "learned") as mem:
        report = mem.learn("codex", [tmp_path / "home" / ".codex" / "sessions"])
        assert stored(mem) == captured and rules(mem) == live_rules
    assert len(captured) == 1 and report.resolved == 1  # its rerun refused, never run
    with Memory() as live:
        assert live.learn("codex", [tmp_path / "home" / ".codex" / "sessions"]).failures == 0
