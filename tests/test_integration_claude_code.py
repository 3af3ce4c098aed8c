"""``reflect hook claude-code`` as Claude Code runs it: one event as JSON on stdin, a child
process, one JSON answer on stdout, exit 0 whatever the input."""

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import NO_TABLE, run_cli, run_hook, store_held, tool_use_id
from test_resident import listening, wait_for

from reflect import Memory
from reflect.cli.client import SOCKET_NAME

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
SESSION = "9f2c1e7a-4b1d-4c61-a2f0-3e5b8d7c6a10"


def event(name: str, client: str = "claude_code", **changes) -> dict:
    data = json.loads((FIXTURES.parent / client / f"{name}.json").read_text())
    if client == "claude_code" and "tool_use_id" in data:  # each call its own step
        data["tool_use_id"] = tool_use_id()
    return {**data, "cwd": str(Path.cwd()), **changes}


def hook(data, client: str = "claude-code", env: dict | None = None) -> tuple[dict, str]:
    done = run_hook(data, client, env=env)
    return json.loads(done.stdout), done.stderr.decode()  # stdout holds its JSON alone


def context(answer: dict, name: str) -> str:
    if not answer:
        return ""
    assert answer["hookSpecificOutput"]["hookEventName"] == name
    return answer["hookSpecificOutput"]["additionalContext"]


def failures() -> list:
    with Memory() as mem:
        return mem.failures(run=SESSION)


def fail(command: str, error: str, code: int = 1) -> dict:
    return event("PostToolUseFailure", tool_input={"command": command},
                 error=f"Exit code {code}\n{error}")


def test_a_failed_bash_call_is_captured_and_answered_with_the_block():
    answer, _ = hook(event("PostToolUseFailure"))
    text = context(answer, "PostToolUseFailure")
    assert "pytest tests/test_dates.py" in text and "command not found" in text
    [entry] = failures()
    assert (entry.action, entry.exit_code, entry.phase) == \
        ("pytest tests/test_dates.py", 127, "bash")
    assert "pytest: command not found" in entry.message


def test_the_prompt_is_the_goal_of_later_captures():
    hook(event("UserPromptSubmit"))
    hook(event("PostToolUseFailure"))
    assert failures()[0].goal == "Fix the failing date parser tests in tests/test_dates.py"


def test_an_interrupt_is_not_a_failure():
    answer, _ = hook(event("PostToolUseFailure", is_interrupt=True, error="Interrupted by user"))
    assert answer == {} and failures() == []


def test_a_failed_tool_other_than_bash_is_captured_with_its_target():
    answer, _ = hook(event("PostToolUseFailure", tool_name="Edit",
                           tool_input={"file_path": "/srv/app/dates.py", "old_string": "x",
                                       "new_string": "y"},
                           error="String to replace not found in file."))
    assert "String to replace not found" in context(answer, "PostToolUseFailure")
    assert failures()[0].action == "Edit /srv/app/dates.py"


def capture_in_session(command: str, error: str) -> None:
    """A failure of the session that no hook answered (a ``reflect run`` wrapper's)."""
    with Memory() as mem:
        mem.capture(run=SESSION, action=command, exit_code=1, error_text=error)


def test_session_start_and_prompt_bring_the_block():
    assert hook(event("SessionStart"))[0] == {}  # nothing known yet: nothing said
    capture_in_session("python repro.py", NO_TABLE)
    assert "no such table" in context(hook(event("UserPromptSubmit"))[0], "UserPromptSubmit")
    assert "no such table" in context(hook(event("SessionStart", source="clear"))[0],
                                      "SessionStart")


def test_the_first_request_gets_one_block_and_later_prompts_only_what_is_new():
    capture_in_session("python repro.py", NO_TABLE)
    with Memory() as mem:  # an earlier run of the project: a lesson for this session
        mem.capture(run="earlier", action="make migrate", exit_code=2,
                    error_text="make: *** No rule to make target 'migrate'.  Stop.")
    started = context(hook(event("SessionStart"))[0], "SessionStart")
    assert "no such table" in started
    assert hook(event("UserPromptSubmit"))[0] == {}  # the same items, in the same context
    capture_in_session("python seed.py", "KeyError: 'ADMIN_EMAIL'")
    later = context(hook(event("UserPromptSubmit", prompt="Seed the admin"))[0],
                    "UserPromptSubmit")
    assert "ADMIN_EMAIL" in later and "no such table" not in later
    # A compaction (a SessionStart) leaves a new context: all of it again.
    again = context(hook(event("SessionStart", source="compact"))[0], "SessionStart")
    assert "ADMIN_EMAIL" in again and "no such table" in again


def test_a_failure_is_answered_with_what_the_session_was_not_shown_yet():
    first = context(hook(fail("python repro.py", NO_TABLE))[0], "PostToolUseFailure")
    assert "no such table" in first
    second = context(hook(fail("python seed.py", "KeyError: 'ADMIN_EMAIL'"))[0],
                     "PostToolUseFailure")
    assert "ADMIN_EMAIL" in second and "no such table" not in second
    # Nor is it said again to the next prompt: the model read it beside the failure.
    assert hook(event("UserPromptSubmit"))[0] == {}
    # The same failure again is news ("failed 2x"): shown again, alone.
    third = context(hook(fail("python seed.py", "KeyError: 'ADMIN_EMAIL'"))[0],
                    "PostToolUseFailure")
    assert "failed 2x" in third and "no such table" not in third


def test_each_item_reaches_the_model_once_across_a_fix_and_a_resume():
    """A failure shown and then fixed is not said again, fixed, to the context that ran
    the fix; a resumed context holds what it was shown, a cleared or compacted one does
    not."""
    assert "no such table" in context(hook(fail("python repro.py", NO_TABLE))[0],
                                      "PostToolUseFailure")
    hook(event("PostToolUse", tool_input={"command": "python repro.py"}))
    assert failures()[0].resolution
    second = context(hook(fail("python seed.py", "KeyError: 'ADMIN_EMAIL'"))[0],
                     "PostToolUseFailure")
    assert "ADMIN_EMAIL" in second and "no such table" not in second
    assert "Fixed later by" not in second and second.count("- [L-") == 1
    third = context(hook(fail("python seed.py", "KeyError: 'ADMIN_EMAIL'"))[0],
                    "PostToolUseFailure")
    assert "failed 2x" in third and "Fixed later by" not in third
    assert hook(event("SessionStart", source="resume"))[0] == {}
    assert hook(event("UserPromptSubmit"))[0] == {}
    for source in ("clear", "compact", "startup"):
        again = context(hook(event("SessionStart", source=source))[0], "SessionStart")
        assert "no such table" in again and "Fixed later by" in again and "failed 2x" in again


def refusal(answer: dict) -> str:
    """The reason of a PreToolUse answer that refuses the call (both clients read it so)."""
    out = answer["hookSpecificOutput"]
    assert (out["hookEventName"], out["permissionDecision"]) == ("PreToolUse", "deny")
    return out["permissionDecisionReason"]


def test_pre_tool_use_refuses_a_rerun_with_nothing_changed():
    rerun = event("PreToolUse", tool_input={"command": "python repro.py"})
    assert hook(rerun)[0] == {}
    hook(fail("python repro.py", NO_TABLE))
    reason = refusal(hook(rerun)[0])
    assert "python repro.py" in reason and "no such table" in reason
    assert refusal(hook(rerun)[0]) == reason  # refused, it ran not: nothing changed still
    # Another tool call ran since (the agent edited a file): the rerun may work now.
    hook(event("PostToolUse", tool_name="Edit", tool_input={"file_path": "repro.py"},
               tool_response={"filePath": "repro.py"}))
    assert hook(rerun)[0] == {}


def test_with_refusal_off_a_rerun_is_told_as_what_was_seen():
    """Read after the command ran (Claude Code adds it after the tool's result), the text
    claims neither that it stopped the call nor what the call will do."""
    off = {"REFLECT_REFUSE_REPEATS": "off"}  # the client's environment: every hook's
    rerun = event("PreToolUse", tool_input={"command": "python repro.py"})
    hook(fail("python repro.py", NO_TABLE), env=off)
    answer = hook(rerun, env=off)[0]
    assert "permissionDecision" not in answer["hookSpecificOutput"]
    text = context(answer, "PreToolUse")
    assert "python repro.py" in text and "no such table" in text
    assert not re.search(r"\bwill\b|fails the same way|refuse|first\.", text)


def test_a_rerun_of_a_failure_the_world_outside_may_change_is_not_refused():
    """Nothing listening yet, a timeout: the same command may pass a moment later."""
    refused = "curl: (7) Failed to connect to localhost port 8000: Connection refused"
    hook(fail("curl -sf localhost:8000/health", refused, code=7))
    answer = hook(event("PreToolUse", tool_input={"command": "curl -sf localhost:8000/health"}))[0]
    assert "permissionDecision" not in answer["hookSpecificOutput"]
    assert "Connection refused" in context(answer, "PreToolUse")


def test_a_rerun_of_a_benign_exit_is_no_repeat_of_a_failure():
    hook(fail("grep -rn TODO src", "", code=1))
    assert hook(event("PreToolUse", tool_input={"command": "grep -rn TODO src"}))[0] == {}


def test_pre_tool_use_warns_of_a_program_missing_in_the_project():
    hook(event("PostToolUseFailure"))
    hook(event("PostToolUse", tool_name="Read", tool_input={"file_path": "setup.cfg"},
               tool_response={}))
    answer, _ = hook(event("PreToolUse", tool_input={"command": "cd tests && pytest -x"}))
    text = context(answer, "PreToolUse")
    # Not sure (it may have been installed outside the session): told, never refused, and
    # worded as what was seen, true read after the command ran as before it.
    assert "`pytest`" in text and "permissionDecision" not in answer["hookSpecificOutput"]
    assert not re.search(r"\bwill\b|fails the same way|refuse", text)
    # In another session of the project too; and no more once it ran.
    other = event("PreToolUse", session_id="another", tool_input={"command": "pytest -q"})
    assert "`pytest`" in context(hook(other)[0], "PreToolUse")
    hook(event("PostToolUse", tool_input={"command": "pytest --version"}))
    assert hook(other)[0] == {}


@pytest.mark.parametrize("command", [
    "pip install pytest && pytest --version", "python3 -m pip install -U pytest; pytest -x",
    "pipx install pytest", "uv tool install pytest==8.3 && pytest -q",
    "sudo apt-get install -y pytest && pytest", "npm install -g pytest", "brew install pytest",
    "cargo install pytest", "go install example.com/cmd/pytest@latest && pytest",
    "alias pytest='python -m pytest'; pytest -x",
    'pytest() { python -m pytest "$@"; }; pytest -x',
    "ln -s ~/.venv/bin/pytest ~/bin/pytest && pytest",
])
def test_pre_tool_use_says_nothing_of_a_command_that_installs_the_missing_program(command):
    """The fix the hint recommends is no repeat of the failure."""
    hook(event("PostToolUseFailure"))
    assert hook(event("PreToolUse", tool_input={"command": command}))[0] == {}
    # Installing something else is no fix of it.
    other = "pip install requests && pytest -x"
    assert "`pytest`" in context(hook(event("PreToolUse", tool_input={"command": other}))[0],
                                 "PreToolUse")


def test_each_tool_call_is_a_step_numbered_as_mini_swe_agent_numbers_its_steps():
    """An iteration is the agent's step, failed or not (tests/test_integration_minisweagent.py
    numbers mini's so): a failure, a command that passed, a failure are steps 1, 2, 3."""
    hook(fail("python3 a.py", NO_TABLE))
    hook(event("PostToolUse", tool_input={"command": "ls"}, tool_response={"stdout": ""}))
    hook(fail("python3 b.py", NO_TABLE.replace("auth_user", "orders")))
    assert [e.iteration for e in failures()] == [3, 1]
    # An interrupted call ran no step to its end: no number.
    hook(event("PostToolUseFailure", is_interrupt=True))
    hook(fail("python3 c.py", NO_TABLE.replace("auth_user", "items")))
    assert [e.iteration for e in failures()] == [4, 3, 1]


def test_a_success_that_reruns_the_failed_command_is_its_outcome():
    hook(event("PostToolUseFailure"))
    hook(event("PostToolUse", tool_input={"command": "ls tests"}))  # not a fix of it
    assert failures()[0].resolution == ""
    assert hook(event("PostToolUse"))[0] == {}  # python -m pytest tests/test_dates.py
    assert "`python -m pytest tests/test_dates.py` passed" in failures()[0].resolution


@pytest.mark.parametrize("raw", ["", "not json", "[1, 2]", '{"hook_event_name": "Nope"}'])
def test_bad_input_gets_an_empty_answer_a_warning_and_exit_0(raw):
    answer, stderr = hook(raw)
    assert answer == {}
    assert len(stderr.strip().splitlines()) == 1


def test_a_failure_event_with_nothing_in_it_is_still_recorded():
    answer, _ = hook('{"hook_event_name": "PostToolUseFailure", "tool_input": 3}')
    assert context(answer, "PostToolUseFailure")
    with Memory() as mem:
        assert mem.failures()[0].source == "synthesized"


def test_a_locked_store_costs_a_warning_not_the_answer(own_store):
    Memory().capture(run="other", exit_code=1)
    with store_held(own_store):  # answered while the store is still held: no wait for it
        answer, stderr = hook(event("PostToolUseFailure"))
    assert isinstance(answer, dict) and "not writable" in stderr
    hook(event("PostToolUseFailure"))  # the next capture replays the one kept aside
    assert len(failures()) == 2


def test_the_kill_switch_silences_every_event():
    for name in ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUseFailure"):
        assert hook(event(name), env={"REFLECT_FAILURE_MEMORY": "0"})[0] == {}
    assert failures() == []


def hook_reading(stdin) -> subprocess.CompletedProcess:
    """A hook reading what may never end: its answer is the event (the timeout only catches
    a hang; bench/bounds.py times it)."""
    return run_hook(stdin, exit_code=None)


def test_endless_stdin_gets_an_answer():
    with open("/dev/zero", "rb") as zero:
        done = hook_reading(zero)
    assert done.returncode == 0 and json.loads(done.stdout) == {}, done.stderr
    assert b"larger than" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_event_whose_writer_never_closes_stdin_is_still_recorded():
    raw = json.dumps(event("PostToolUseFailure"))
    writer = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.stdout.write("
                               f"{raw!r}); sys.stdout.flush(); time.sleep(60)"],
                              stdout=subprocess.PIPE)
    try:
        done = hook_reading(writer.stdout)  # while the writer still holds its pipe open
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 0, done.stderr
    assert context(json.loads(done.stdout), "PostToolUseFailure") and len(failures()) == 1


@pytest.mark.parametrize("flag", ["no", "false", 0, None, "", []])
def test_an_is_interrupt_that_says_no_keeps_the_failure(flag):
    hook(event("PostToolUseFailure", is_interrupt=flag))
    assert len(failures()) == 1


@pytest.mark.parametrize("flag", [True, "true", "yes", 1])
def test_an_is_interrupt_that_says_yes_is_no_failure(flag):
    hook(event("PostToolUseFailure", is_interrupt=flag))
    assert failures() == []


def twice(stdin: Callable[[], bytes], helper: str, store) -> list[subprocess.CompletedProcess]:
    """Two calls' events (``stdin()`` each): the hook cold, then (with the helper on) through
    the helper the first one started (in a store directory that is there already, the
    user's alone)."""
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    done = [run_cli("hook", "claude-code", stdin=stdin())]
    if helper == "on":
        wait_for(lambda: listening(store / SOCKET_NAME))
    done.append(run_cli("hook", "claude-code", stdin=stdin()))
    for each in done:
        assert each.returncode == 0 and json.loads(each.stdout) is not None, each.stderr
    return done


def test_an_event_past_the_size_read_is_recorded_from_its_head(resident_helper, own_store):
    error = "ModuleNotFoundError: No module named 'huge'\n" + "x" * (9 * 2**20)
    data = event("PostToolUseFailure", error=error)
    for done in twice(lambda: json.dumps({**data, "tool_use_id": tool_use_id()}).encode(),
                      resident_helper, own_store):
        assert b"read in part (its end was not read; it is larger than 8 MB)" in done.stderr
    assert [f.action for f in failures()] == [data["tool_input"]["command"]] * 2


def test_an_event_nested_too_deep_is_recorded_without_the_deep_part(resident_helper, own_store):
    def deep() -> bytes:
        text = json.dumps(event("PostToolUseFailure"))[:-1]
        return (text + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}").encode()

    for done in twice(deep, resident_helper, own_store):
        assert b"values nested deeper than 64 left out" in done.stderr
    assert len(failures()) == 2
