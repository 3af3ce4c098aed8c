"""A hook past its time budget answers in time (exit 0, ``{}``) and says only what is true
of its event: recorded, kept aside, or recorded after the answer; never "nothing recorded"
for one that was. The budget is a value passed in (``launch.main(seconds=...)``,
``hooks.run(left=...)``), never a wait; bench/hook_load.py times it under load."""

import io
import json
import subprocess
import sys

from conftest import hook_env, store_held
from test_resident import failed_event, stored, wait_for

from reflect import Memory
from reflect.integrations import claude_code, hooks
from reflect.store import pending

# The ``reflect`` command with a budget spent before its modules have loaded.
SPENT_AT_START = ("import sys; from reflect.cli.launch import main;"
                  " sys.argv[1:] = ['hook', 'claude-code']; sys.exit(main(seconds=0.0))")


def test_a_hook_whose_budget_is_spent_while_it_loads_answers_and_records_after(own_store):
    done = subprocess.run([sys.executable, "-c", SPENT_AT_START], input=failed_event(),
                          capture_output=True, timeout=60, env=hook_env())
    assert done.returncode == 0 and json.loads(done.stdout) == {}
    said = done.stderr.decode()
    assert "recorded after the answer" in said and "nothing recorded" not in said
    assert "within 0 s" in said  # the budget it was given, not the default
    wait_for(lambda: stored(own_store) == 1, 60)  # by the process it left the event to


def test_a_capture_kept_aside_before_the_hook_broke_is_said_kept_aside(own_store, caplog):
    """The store held by another writer: the capture is kept aside; the hook then breaks
    (its session's files cannot be written) and says the capture is kept aside, neither
    lost nor stored."""
    with Memory(own_store) as mem:
        mem.capture(run="setup", exit_code=1)
    (own_store / hooks.STATE_DIR).write_text("not a directory")
    event = own_store.parent / "event.json"
    event.write_bytes(failed_event())
    out = io.StringIO()
    with store_held(own_store), open(event) as stdin:
        assert hooks.run(claude_code.parse, stdin=stdin, stdout=out, left=lambda: None) == 0
    assert json.loads(out.getvalue()) == {}
    assert "the capture is kept aside" in caplog.text
    assert "nothing recorded" not in caplog.text and "capture is recorded" not in caplog.text
    assert pending.waiting(own_store)[0] == 1


def test_a_benign_exit_stored_before_the_hook_broke_is_not_said_kept_aside(own_store, caplog):
    """An exit that answered a question (grep finding nothing) is stored with no place in
    the failures' order: the hook that breaks after it says it is recorded."""
    own_store.mkdir(mode=0o700, parents=True)
    (own_store / hooks.STATE_DIR).write_text("not a directory")
    event = json.loads(failed_event())
    event.update(tool_input={"command": "grep -q needle notes.txt"}, error="Exit code 1\n")
    path = own_store.parent / "event.json"
    path.write_text(json.dumps(event))
    out = io.StringIO()
    with open(path) as stdin:
        assert hooks.run(claude_code.parse, stdin=stdin, stdout=out, left=lambda: None) == 0
    assert json.loads(out.getvalue()) == {}
    with Memory(own_store) as mem:
        [exit] = mem.failures(run=event["session_id"], benign=True)
    assert exit.source == "benign"
    assert "the capture is recorded" in caplog.text and "kept aside" not in caplog.text
