"""``reflect hook codex`` on the events Codex sends: no failure event, and a Bash call's
``tool_response`` is the output text the model saw."""

from test_integration_claude_code import context, event, hook

from reflect import Memory

SESSION = "0199a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
TRACEBACK = ("Traceback (most recent call last):\n  File \"/srv/app/report.py\", line 1, in "
             "<module>\n    import yaml\nModuleNotFoundError: No module named 'yaml'\n")


def codex(name: str, **changes) -> dict:
    return hook(event(name, client="codex", **changes), client="codex")[0]


def captured() -> list:
    with Memory() as mem:
        return mem.failures(run=SESSION)


def test_a_bash_call_that_exited_non_zero_is_captured_and_answered():
    text = context(codex("PostToolUse"), "PostToolUse")
    assert "python3 report.py" in text and "yaml" in text
    [entry] = captured()
    assert (entry.action, entry.exit_code, entry.error_type) == \
        ("python3 report.py", 1, "ModuleNotFoundError")


def test_exit_codes_in_the_forms_codex_writes_them():
    assert codex("PostToolUse", tool_response=f"Process exited with code 2\nOutput:\n{TRACEBACK}")
    assert codex("PostToolUse", tool_response={"exit_code": 3, "stderr": TRACEBACK})
    assert [e.exit_code for e in captured()] == [3, 2]


def test_a_success_or_an_output_without_exit_code_is_no_failure():
    assert codex("PostToolUse", tool_response="Exit code: 0\nOutput:\nreport written\n") == {}
    assert codex("PostToolUse", tool_response=TRACEBACK) == {}  # cannot tell: nothing recorded
    assert captured() == []


def test_prompt_session_start_and_pre_tool_use():
    codex("UserPromptSubmit")
    codex("PostToolUse")
    assert captured()[0].goal == "Make the weekly report script run"
    assert "yaml" in context(codex("SessionStart"), "SessionStart")
    assert "python3 report.py" in context(codex("PreToolUse"), "PreToolUse")
